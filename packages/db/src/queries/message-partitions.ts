import { acceptedAtOfMessageId } from '@dispatch/contracts'
import { pgTable } from 'drizzle-orm/pg-core'
import type { Db, Sql } from '../client.ts'
import { messageColumns, type messages } from '../schema/messages.ts'

/**
 * Reading one day of messages as a table of its own. On Postgres 15 a statement on the partitioned
 * `messages` plans or locks every partition (90 and more) even when its condition names one day,
 * which costs more than the statement itself; on the day's partition it costs what it did on one
 * table (docs/benchmarks.md, Day partitions). So the hot statements that know their day (a message's
 * UUIDv7 id carries its acceptance time) go to the day's table when it exists, and to `messages`
 * otherwise (a day kept in the legacy or default partition, or one dropped).
 *
 * Which days exist is read from the catalog at most every REFRESH_MS per process. Stale, it is safe:
 * a day created since is read through `messages` (slower, same rows: a day's rows are in its table
 * once it exists), and a day dropped since fails with "no such table", which callers take as
 * "through `messages`".
 */
const REFRESH_MS = 30_000

export type MessagesTable = typeof messages
interface Range {
  name: string
  from: number
  to: number
  /** It starts after the last look and held nothing then. */
  emptyAhead: boolean
}
const tables = new Map<string, MessagesTable>()
let known: { ranges: Range[]; defaultEmpty: boolean; at: number } | undefined
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
  // Bounds print in the session's time zone: read them in UTC, whatever the connection's.
  const rows = (await sql.begin(async (tx) => {
    await tx`set local time zone 'UTC'`
    return tx<{ name: string; bound: string }[]>`
      select c.relname as name, pg_get_expr(c.relpartbound, c.oid) as bound
      from pg_inherits i join pg_class c on c.oid = i.inhrelid
      where i.inhparent = 'messages'::regclass`
  })) as { name: string; bound: string }[]
  const [fallback] = await sql<{ empty: boolean }[]>`
    select not exists (select 1 from messages_default) as empty`
  const ranges = rows.flatMap(({ name, bound }) => {
    const [, from, to] = /FROM \('([^']+)'\) TO \('([^']+)'\)/.exec(bound) ?? []
    return from && to && /^messages_p\d{8}$/.test(name)
      ? [{ name, from: Date.parse(from), to: Date.parse(to), emptyAhead: false }]
      : []
  })
  // The periods created ahead hold nothing yet: a list need not read them (see `recentPartitions`).
  const ahead = ranges.filter((r) => r.from > Date.now())
  if (ahead.length > 0) {
    const empty = new Set(
      (
        await sql.unsafe<{ name: string }[]>(
          ahead
            .map((r) => `select '${r.name}' as name where not exists (select 1 from "${r.name}")`)
            .join(' union all '),
        )
      ).map((r) => r.name),
    )
    for (const range of ahead) range.emptyAhead = empty.has(range.name)
  }
  known = {
    ranges: ranges.sort((a, b) => b.from - a.from),
    defaultEmpty: fallback?.empty ?? false,
    at: Date.now(),
  }
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

/** A period that starts this soon may be receiving rows already (a clock a little ahead): always read. */
const SOON_MS = 3600_000

/**
 * The partitions (as tables, newest first, each with its start) when every message is in one of them
 * or in the legacy partition (the default one empty); null otherwise, and then only `messages` sees
 * every row. Periods ahead that held nothing at the last look, and do not start within the hour, are
 * left out.
 */
export async function recentPartitions(db: Db): Promise<{ table: MessagesTable; from: number }[] | null> {
  const { ranges, defaultEmpty } = await partitions(db.$client)
  if (!defaultEmpty) return null
  const soon = Date.now() + SOON_MS
  return ranges
    .filter((r) => !(r.emptyAhead && r.from > soon))
    .map((r) => ({ table: tableNamed(r.name), from: r.from }))
}

/** A statement failed because its day's table was dropped meanwhile: read through `messages`. */
export const isMissingTable = (error: unknown) => (error as { code?: string })?.code === '42P01'

/** Forget what the catalog said (after changing the partitions in this process). */
export function forgetPartitions(): void {
  known = undefined
}

/**
 * `run` on the day's table of the message with this id when it has one, else (or when that table was
 * dropped meanwhile) `fallback` through `messages`.
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
