import Type, { type Static, type TSchema } from 'typebox'

/**
 * The common list parameters exactly as the spec gives them, defaults included (`take` defaults
 * to 1). `itemCount` is accepted and ignored. Each resource adds its own `orderField` allow-list.
 */
export const listQueryProperties = {
  order: Type.Enum(['ASC', 'DESC'], { default: 'DESC' }),
  // The spec sets no maximum; one keeps the row offset a safe integer for the database.
  page: Type.Integer({ minimum: 1, maximum: 1_000_000_000, default: 1 }),
  take: Type.Integer({ minimum: 1, maximum: 1000, default: 1 }),
  q: Type.Optional(Type.String({ maxLength: 200 })),
  tenantId: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  deleted: Type.Optional(Type.Enum(['true', 'false'])),
  itemCount: Type.Optional(Type.Integer({ minimum: 0 })),
}

export const PageMeta = Type.Object({
  page: Type.Integer(),
  take: Type.Integer(),
  itemCount: Type.Integer(),
  pageCount: Type.Integer(),
  hasPreviousPage: Type.Boolean(),
  hasNextPage: Type.Boolean(),
})
export type PageMeta = Static<typeof PageMeta>

/** The paging envelope with its items under `data` (order lists, admin lists). */
export const DataEnvelope = <T extends TSchema>(item: T) =>
  Type.Object({ ...PageMeta.properties, data: Type.Array(item) }, { additionalProperties: false })

/** Page arithmetic shared by every list, right at the edges (empty result, page past the end). */
export function pageMeta(page: number, take: number, itemCount: number): PageMeta {
  const pageCount = Math.ceil(itemCount / take)
  return {
    page,
    take,
    itemCount,
    pageCount,
    hasPreviousPage: page > 1,
    hasNextPage: page < pageCount,
  }
}
