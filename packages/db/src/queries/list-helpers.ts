import { and, asc, type Column, desc, isNotNull, isNull, type SQL } from 'drizzle-orm'

/** Escapes LIKE wildcards so `q` is searched as the literal text the caller typed. */
export const likePattern = (q: string) => `%${q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`

/** `deleted=true` lists soft-deleted records only; otherwise they are hidden. */
export const deletedFilter = (deletedAt: Column, deleted: 'true' | 'false' | undefined) =>
  deleted === 'true' ? isNotNull(deletedAt) : isNull(deletedAt)

export const whereAll = (filters: (SQL | undefined)[]) => and(...filters.filter((f) => f !== undefined))

/** The order clause: the chosen column, then the id, so pages never overlap or skip rows. */
export const ordering = (order: 'ASC' | 'DESC', ...columns: Column[]) =>
  columns.map((c) => (order === 'ASC' ? asc(c) : desc(c)))

export interface Page {
  page: number
  take: number
}
export const offsetOf = ({ page, take }: Page) => (page - 1) * take
