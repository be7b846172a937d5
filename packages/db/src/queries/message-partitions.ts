import { acceptedAtOfMessageId } from '@dispatch/runtime'
import { pgTable } from 'drizzle-orm/pg-core'
import type { Db, Sql } from '../client.ts'
import { listPartitions } from '../partition-catalog.ts'
import { messageColumns, type messages } from '../schema/messages.ts'
import { pgError } from './executor.ts'

/**
 * Reading one period of messages as a table of its own. On Postgres 15 a statement on the partitioned
 * `messages` plans or locks every partition even when its condition names one period, which can cost
 * more than the statement itself; on the period's partition it costs what it did on one table
 * (docs/benchmarks-paths.md, Partitioned messages). So the hot statements that know their period (a
 * message's UUIDv7 id carries its acceptance time) go to that partition, and to `messages` when it
 * has none (a time kept in the legacy or default partition, or one dropped).
 *
 * Which partitions exist is read from the catalog at most every REFRESH_MS per process. Stale, it is
 * safe: a partition created since is read through `messages` (slower, same rows: a period's rows are
 * in its partition once it exists), and one dropped since fails with "no such table", which callers
 * take as "through `messages`".
 */
const REFRESH_MS = 30_000

export type MessagesTable = typeof messages
interface Range {
  name: string
  from: number
  to: number
}
const tables = new Map<string, MessagesTable>()
let known: { ranges: Range[]; at: number } | undefined
let refreshing: Promise<void> | undefined

/** The partition as a drizzle table: `messages`' columns under its name. */
function tableNamed(name: string): MessagesTable {
  let table = tables.get(name)
  if (!table) {
    table = pgTable(name, messageColumns) as unknown as MessagesTable
    tables.set(name, table)
  }
  return table
}

async function refresh(sql: Sql): Promise<void> {
  const ranges = (await listPartitions(sql, 'messages')).flatMap(({ name, from, to }) =>
    from && to && /^messages_p\d{8}$/.test(name) ? [{ name, from: from.getTime(), to: to.getTime() }] : [],
  )
  known = { ranges, at: Date.now() }
}

/** What the catalog said at most REFRESH_MS ago (read again now if older). */
async function partitions(sql: Sql) {
  if (!known || Date.now() - known.at > REFRESH_MS) {
    refreshing ??= refresh(sql).finally(() => {
      refreshing = undefined
    })
    await refreshing
  }
  return known as NonNullable<typeof known>
}

/** The partition holding rows accepted at `ms`, by name, when one of its own does; else null. */
export async function partitionAt(sql: Sql, ms: number): Promise<string | null> {
  return (await partitions(sql)).ranges.find((r) => r.from <= ms && ms < r.to)?.name ?? null
}

/** The table holding the message with this id: its period's partition when it has one, else null. */
export async function partitionTableOf(db: Db, id: string): Promise<MessagesTable | null> {
  const ms = acceptedAtOfMessageId(id)
  if (ms === null) return null
  const name = await partitionAt(db.$client, ms)
  return name === null ? null : tableNamed(name)
}

/** A statement failed because its partition was dropped meanwhile: read through `messages`. */
export const isMissingTable = (error: unknown) => pgError(error).code === '42P01'

/** Forget what the catalog said (after changing the partitions in this process). */
export function forgetPartitions(): void {
  known = undefined
}

/**
 * `run` on the partition of the message with this id when it has one of its own, else (or when that
 * was dropped meanwhile) `fallback` through `messages`.
 */
export async function onPartitionOf<T>(
  db: Db,
  id: string | undefined,
  run: (table: MessagesTable) => Promise<T>,
  fallback: () => Promise<T>,
): Promise<T> {
  const day = id === undefined ? null : await partitionTableOf(db, id)
  if (day) {
    try {
      return await run(day)
    } catch (error) {
      if (!isMissingTable(error)) throw error
    }
  }
  return fallback()
}
