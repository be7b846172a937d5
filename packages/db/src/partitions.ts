import type { Sql } from './client.ts'
import {
  listPartitions,
  PARTITION_STORAGE,
  PARTITIONED_TABLES,
  type Partition,
  type PartitionedTable,
  type PartitionPolicy,
} from './partition-catalog.ts'
import { pgError } from './queries/executor.ts'
import { forgetPartitions, isMissingTable } from './queries/message-partitions.ts'

// Keeping the periods of PARTITIONED_TABLES (partition-catalog.ts says why they are partitioned):
// made ahead, dropped past retention, and made on the spot by a write that finds its period missing.

const DAY_MS = 86_400_000

/**
 * Rows of other (unpartitioned) tables that belong to a partitioned table's rows by its time column,
 * deleted in the transaction that drops their partition: a channel fallback's record
 * (`message_fallbacks`, keyed by the message's id with its `accepted_at` beside it) goes with its
 * message. Each is deleted up to the dropped partition's end (older partitions are gone already).
 */
const DROPPED_WITH: Partial<Record<PartitionedTable, Array<{ table: string; column: string }>>> = {
  messages: [{ table: 'message_fallbacks', column: 'accepted_at' }],
}

export interface PartitionChanges {
  created: string[]
  dropped: string[]
  /** Rows moved out of a default partition into the day created for them. */
  moved: number
  /** Rows past retention deleted from a default partition (the one place rows are deleted). */
  deleted: number
}

const startOfDay = (ms: number) => Math.floor(ms / DAY_MS) * DAY_MS
/** A partition is named by the day its range starts: `messages_p20261126`. */
const rangeName = (table: string, fromMs: number) =>
  `${table}_p${new Date(fromMs).toISOString().slice(0, 10).replaceAll('-', '')}`

/** How long a policy's rows are kept and how many days one of its partitions holds. */
export interface PartitionSpan {
  retentionDays: number
  widthDays?: number
}

/**
 * Creates the periods (of `widthDays` days, aligned on the epoch) from `now`'s to `aheadDays` later
 * that no partition covers yet, drops the partitions that end at or before `retentionDays` before
 * `now`'s day, and retires the default partition the migration made (`retireDefault`; a table that
 * `keepsDefault` only loses its rows past retention there). `retentionDays` and `widthDays` are the
 * messages'; `webhooks` gives webhook events and their attempts their own (else they follow the
 * messages'). Each change is a short transaction of its own that first takes one advisory lock, so
 * across every worker one change runs at a time and each is checked again under the lock (two workers
 * never create or drop a period twice), and it waits at most `lockTimeoutMs` for the table: a busy
 * table delays a round, never the traffic.
 */
export async function maintainPartitions(
  sql: Sql,
  options: {
    now: Date
    aheadDays: number
    retentionDays: number
    widthDays?: number
    webhooks?: PartitionSpan
    lockTimeoutMs?: number
  },
): Promise<PartitionChanges> {
  const changes: PartitionChanges = { created: [], dropped: [], moved: 0, deleted: 0 }
  const spans: Record<PartitionPolicy, PartitionSpan> = {
    messages: options,
    webhooks: options.webhooks ?? options,
  }
  const today = startOfDay(options.now.getTime())
  for (const { table, column, policy, keepsDefault } of PARTITIONED_TABLES) {
    const span = spans[policy]
    const width = Math.max(1, Math.trunc(span.widthDays ?? 1)) * DAY_MS
    const expiry = today - span.retentionDays * DAY_MS
    const partitions = await listPartitions(sql, table)
    const cover = (from: number, to: number) =>
      coverRange(
        sql,
        { table, column, partitions, from, to, width, lockTimeoutMs: options.lockTimeoutMs },
        changes,
      )
    const first = Math.floor(today / width) * width
    await cover(first, first + Math.ceil((today + options.aheadDays * DAY_MS + 1 - first) / width) * width)
    for (const partition of partitions) {
      if (partition.isDefault || partition.to === null || partition.to.getTime() > expiry) continue
      const dropped = await underLock(sql, options.lockTimeoutMs, async (tx) => {
        if (!(await exists(tx, partition.name))) return false
        await tx.unsafe(`drop table ${quote(partition.name)}`)
        for (const dependent of DROPPED_WITH[table] ?? []) {
          await tx.unsafe(`delete from ${quote(dependent.table)} where ${quote(dependent.column)} < $1`, [
            (partition.to as Date).toISOString(),
          ])
        }
        return true
      })
      if (dropped) changes.dropped.push(partition.name)
    }
    const fallback = partitions.find((p) => p.isDefault)
    if (fallback) {
      try {
        // Rows past retention go from it, whether it stays or is retired.
        const deleted = await sql.unsafe(`delete from ${quote(fallback.name)} where ${column} < $1`, [
          new Date(expiry).toISOString(),
        ])
        changes.deleted += deleted.count
        if (!keepsDefault) await retireDefault(sql, { table, column, fallback, width, cover }, changes)
      } catch (error) {
        // Another process retired it meanwhile.
        if (!isMissingTable(error)) throw error
      }
    }
  }
  // This process reads the periods it knows of directly (message-partitions.ts): look again.
  if (changes.created.length + changes.dropped.length + changes.moved > 0) forgetPartitions()
  return changes
}

/**
 * Creates the parts of `[from, to)` no partition holds yet, as periods of `width` aligned on the
 * epoch (the legacy partition may hold the start of one, a partition made with another width some of
 * the rest).
 */
async function coverRange(
  sql: Sql,
  where: {
    table: PartitionedTable
    column: string
    partitions: Partition[]
    from: number
    to: number
    width: number
    lockTimeoutMs: number | undefined
  },
  changes: PartitionChanges,
): Promise<void> {
  const { table, column, partitions, width } = where
  for (let from = where.from; from < where.to; ) {
    const holder = coverOf(partitions, from)
    if (holder) {
      from = holder.to?.getTime() ?? where.to
      continue
    }
    const next = Math.min(
      where.to,
      (Math.floor(from / width) + 1) * width,
      ...partitions.flatMap((p) => (p.from !== null && p.from.getTime() > from ? [p.from.getTime()] : [])),
    )
    const moved = await createRange(sql, table, column, from, next, where.lockTimeoutMs)
    if (moved !== null) {
      changes.created.push(rangeName(table, from))
      changes.moved += moved
    } // else another process made it meanwhile
    from = next
  }
}

/**
 * Empties the default partition (its rows, within retention, moved into the periods created for
 * them) and drops it. The parent is locked for the drop, so no write is on its way into the default
 * partition while it goes; writes after it find their period or create it.
 */
async function retireDefault(
  sql: Sql,
  of: {
    table: PartitionedTable
    column: string
    fallback: Partition
    width: number
    cover: (from: number, to: number) => Promise<void>
  },
  changes: PartitionChanges,
): Promise<void> {
  const { table, column, fallback, width } = of
  const waiting = await sql.unsafe<{ start: string }[]>(
    `select distinct (floor(extract(epoch from ${column}) * 1000 / ${width}) * ${width})::bigint::text as start
     from ${quote(fallback.name)}`,
  )
  for (const { start } of waiting) await of.cover(Number(start), Number(start) + width)
  const retired = await underLock(sql, undefined, async (tx) => {
    if (!(await exists(tx, fallback.name))) return false
    await tx.unsafe(`lock table ${quote(table)} in access exclusive mode`)
    if ((await tx.unsafe(`select 1 from ${quote(fallback.name)} limit 1`)).length > 0) return false
    await tx.unsafe(`drop table ${quote(fallback.name)}`)
    return true
  })
  if (retired) changes.dropped.push(fallback.name)
}

/**
 * Runs `write` (statements inserting into partitioned tables, or updating rows whose triggers do);
 * when one fails because no partition holds its row (a clock ahead of the periods made, workers down
 * for longer than the days made ahead), creates that row's period and runs it again. A period of a
 * time past retention is created too: the next maintenance round drops it, as it would have.
 */
export async function writingToPeriods<T>(sql: Sql, write: () => Promise<T>): Promise<T> {
  for (let tries = 1; ; tries++) {
    try {
      return await write()
    } catch (error) {
      const missing = tries <= PARTITIONED_TABLES.length + 1 ? await missingPeriodOf(sql, error) : null
      if (!missing) throw error
      await createPeriodAt(sql, missing.table, missing.at)
    }
  }
}

/** The table and time of a row no partition held, from Postgres' error (23514), if it is that. */
async function missingPeriodOf(sql: Sql, error: unknown) {
  const { code, message, detail } = pgError(error)
  if (code !== '23514') return null
  const table = /no partition of relation "([^"]+)" found for row/.exec(message ?? '')?.[1]
  const value = /Partition key of the failing row contains \([^)]*\) = \((.+)\)\.$/.exec(detail ?? '')?.[1]
  const known = PARTITIONED_TABLES.find((t) => t.table === table)
  if (!known || value === undefined) return null
  // The value prints in the session's date style and zone: Postgres reads it back.
  const [row] = await sql<
    { ms: string }[]
  >`select (extract(epoch from ${value}::timestamptz) * 1000)::bigint::text as ms`
  return row ? { table: known.table, at: Number(row.ms) } : null
}

/**
 * Creates the period of `table` holding `ms`, as wide as the newest period there (the workers'
 * MESSAGE_PARTITION_DAYS or WEBHOOK_EVENT_PARTITION_DAYS; a day when there is none).
 */
export async function createPeriodAt(sql: Sql, table: PartitionedTable, ms: number): Promise<string[]> {
  const partitions = await listPartitions(sql, table)
  const newest = partitions.filter((p) => p.from !== null && p.to !== null).at(-1)
  const width = newest?.from && newest.to ? newest.to.getTime() - newest.from.getTime() : DAY_MS
  const from = Math.floor(ms / width) * width
  const column = PARTITIONED_TABLES.find((t) => t.table === table)?.column as string
  const changes: PartitionChanges = { created: [], dropped: [], moved: 0, deleted: 0 }
  await coverRange(
    sql,
    { table, column, partitions, from, to: from + width, width, lockTimeoutMs: undefined },
    changes,
  )
  if (changes.created.length > 0) forgetPartitions()
  return changes.created
}

/** The partition (not the default one) whose range holds `ms`, if any. */
const coverOf = (partitions: Partition[], ms: number) =>
  partitions.find(
    (p) =>
      !p.isDefault && p.to !== null && p.to.getTime() > ms && (p.from === null || p.from.getTime() <= ms),
  )

const quote = (name: string) => `"${name.replaceAll('"', '""')}"`

/** `work` in a transaction holding the partitions' advisory lock, with a lock timeout for the rest. */
async function underLock<T>(
  sql: Sql,
  lockTimeoutMs: number | undefined,
  work: (tx: Sql) => Promise<T>,
): Promise<T> {
  return (await sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(hashtext('dispatch:partitions'))`
    await tx.unsafe(`set local lock_timeout = ${Math.max(1, Math.trunc(lockTimeoutMs ?? 5000))}`)
    return work(tx as unknown as Sql)
  })) as T
}

const exists = async (sql: Sql, name: string) =>
  (await sql<{ found: boolean }[]>`select to_regclass(${quote(name)}) is not null as found`)[0]?.found ??
  false

/**
 * A new partition's statement triggers, which Postgres does not clone from the parent as it does row
 * triggers: on `messages`, the campaigns' tally of the rows each insert writes (migration 0041).
 */
async function withStatementTriggers(sql: Sql, table: PartitionedTable, name: string): Promise<void> {
  if (table === 'messages') await sql.unsafe(`select dispatch_campaign_tally_on($1::regclass)`, [name])
}

/**
 * Creates the partition of `[fromMs, toMs)`. Rows of that range already in the default partition
 * (written while no partition held it) are moved into it in the same transaction: a row is in exactly
 * one place before and after. Answers how many moved, or null when it existed already.
 */
async function createRange(
  sql: Sql,
  table: PartitionedTable,
  column: string,
  fromMs: number,
  toMs: number,
  lockTimeoutMs: number | undefined,
): Promise<number | null> {
  const name = quote(rangeName(table, fromMs))
  const from = new Date(fromMs).toISOString()
  const to = new Date(toMs).toISOString()
  const fallback = quote(`${table}_default`)
  const storage = PARTITION_STORAGE[table] ? ` with (${PARTITION_STORAGE[table]})` : ''
  return underLock(sql, lockTimeoutMs, async (tx) => {
    if (await exists(tx, rangeName(table, fromMs))) return null
    const range = `for values from ('${from}') to ('${to}')`
    const waiting =
      (await exists(tx, `${table}_default`)) &&
      (
        await tx.unsafe(`select 1 from ${fallback} where ${column} >= $1 and ${column} < $2 limit 1`, [
          from,
          to,
        ])
      ).length > 0
    if (!waiting) {
      await tx.unsafe(`create table ${name} partition of ${quote(table)} ${range}${storage}`)
      await withStatementTriggers(tx, table, name)
      return 0
    }
    await tx.unsafe(
      `create table ${name} (like ${quote(table)} including defaults including storage)${storage}`,
    )
    const moved = await tx.unsafe(
      `with gone as (delete from ${fallback} where ${column} >= $1 and ${column} < $2 returning *)
       insert into ${name} select * from gone`,
      [from, to],
    )
    await tx.unsafe(`alter table ${quote(table)} attach partition ${name} ${range}`)
    await withStatementTriggers(tx, table, name)
    return moved.count
  })
}
