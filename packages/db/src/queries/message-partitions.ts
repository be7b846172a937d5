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
const tables = new Map<string, MessagesTable>()
let known: { days: Set<string>; emptyAhead: Set<string>; defaultEmpty: boolean; at: number } | undefined
let refreshing: Promise<void> | undefined

export const dayPartitionName = (ms: number) =>
  `messages_p${new Date(ms).toISOString().slice(0, 10).replaceAll('-', '')}`

/** The day's partition as a drizzle table: `messages`' columns under its name. */
function tableNamed(name: string): MessagesTable {
  let table = tables.get(name)
  if (!table) {
    table = pgTable(name, messageColumns) as unknown as MessagesTable
    tables.set(name, table)
  }
  return table
}

async function refresh(sql: Sql): Promise<void> {
  const rows = await sql<{ name: string }[]>`
    select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid
    where i.inhparent = 'messages'::regclass`
  const [fallback] = await sql<{ empty: boolean }[]>`
    select not exists (select 1 from messages_default) as empty`
  const days = new Set(rows.map((r) => r.name).filter((name) => /^messages_p\d{8}$/.test(name)))
  // The days created ahead hold nothing yet: a list need not read them (see `dayTables`).
  const ahead = [...days].filter((name) => startOf(name) > Date.now())
  const empty = ahead.length
    ? await sql.unsafe<{ name: string }[]>(
        ahead
          .map((name) => `select '${name}' as name where not exists (select 1 from "${name}")`)
          .join(' union all '),
      )
    : []
  known = {
    days,
    emptyAhead: new Set(empty.map((r) => r.name)),
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

/** The table holding the message with this id: its day's partition when that exists, else null. */
export async function dayTableOf(db: Db, id: string): Promise<MessagesTable | null> {
  const ms = acceptedAtOfMessageId(id)
  if (ms === null) return null
  const name = dayPartitionName(ms)
  return (await partitions(db.$client)).days.has(name) ? tableNamed(name) : null
}

/** The start of the day a partition's name gives (`messages_pYYYYMMDD`), in milliseconds. */
const startOf = (name: string) =>
  Date.UTC(Number(name.slice(10, 14)), Number(name.slice(14, 16)) - 1, Number(name.slice(16, 18)))

/** A day that starts this soon may be receiving rows already (a clock a little ahead): always read. */
const SOON_MS = 3600_000

/**
 * The day partitions (as tables, newest first, each with its start) when every message is in one or
 * in the legacy partition (the default one empty); null otherwise, and then only `messages` sees every
 * row. Days ahead that held nothing at the last look, and do not start within the hour, are left out.
 */
export async function dayTables(db: Db): Promise<{ table: MessagesTable; from: number }[] | null> {
  const { days, emptyAhead, defaultEmpty } = await partitions(db.$client)
  if (!defaultEmpty) return null
  const soon = Date.now() + SOON_MS
  return [...days]
    .filter((name) => !(emptyAhead.has(name) && startOf(name) > soon))
    .sort()
    .reverse()
    .map((name) => ({ table: tableNamed(name), from: startOf(name) }))
}

/** The day's partition holding rows accepted at `ms`, by name, when it exists; else null. */
export async function dayPartitionAt(sql: Sql, ms: number): Promise<string | null> {
  const name = dayPartitionName(ms)
  return (await partitions(sql)).days.has(name) ? name : null
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
export async function onDayOf<T>(
  db: Db,
  id: string | undefined,
  run: (table: MessagesTable) => Promise<T>,
  fallback: () => Promise<T>,
): Promise<T> {
  const day = id === undefined ? null : await dayTableOf(db, id)
  if (day) {
    try {
      return await run(day)
    } catch (error) {
      if (!isMissingTable(error)) throw error
    }
  }
  return fallback()
}
