import type { Sql } from './client.ts'
import { forgetPartitions } from './queries/message-partitions.ts'

/**
 * The tables that grow with traffic, partitioned by time (migration 0023): one table per period of
 * `widthDays` (the workers' MESSAGE_PARTITION_DAYS), `<table>_pYYYYMMDD` after the day it starts;
 * `<table>_legacy` holds what was there before partitioning (up to the end of the day it ran),
 * `<table>_default` any row no period holds yet. Periods are created ahead and dropped whole past
 * retention by the workers (`maintainPartitions`), never deleted row by row.
 */
export const PARTITIONED_TABLES = [
  { table: 'messages', column: 'accepted_at' },
  { table: 'message_attempts', column: 'created_at' },
] as const

export type PartitionedTable = (typeof PARTITIONED_TABLES)[number]['table']

const DAY_MS = 86_400_000

/** One partition as Postgres declares it: its range (null bounds for MINVALUE, or the default). */
export interface Partition {
  table: PartitionedTable
  name: string
  /** Null for the legacy partition (from MINVALUE) and for the default one. */
  from: Date | null
  /** Null for the default partition. */
  to: Date | null
  isDefault: boolean
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

/** Every partition of `table`, oldest first (the default last). */
export async function listPartitions(sql: Sql, table: PartitionedTable): Promise<Partition[]> {
  // Bounds print in the session's time zone: read them in UTC, whatever the connection's.
  const rows = (await sql.begin(async (tx) => {
    await tx`set local time zone 'UTC'`
    return tx<{ name: string; bound: string }[]>`
      select c.relname as name, pg_get_expr(c.relpartbound, c.oid) as bound
      from pg_inherits i
      join pg_class c on c.oid = i.inhrelid
      where i.inhparent = ${table}::regclass`
  })) as { name: string; bound: string }[]
  const at = (text: string | undefined) => (text === undefined ? null : new Date(text))
  return rows
    .map(({ name, bound }) => {
      if (bound === 'DEFAULT') return { table, name, from: null, to: null, isDefault: true }
      const [, from, to] = /FROM \((?:'([^']+)'|MINVALUE)\) TO \('([^']+)'\)/.exec(bound) ?? []
      return { table, name, from: at(from), to: at(to), isDefault: false }
    })
    .sort((a, b) =>
      a.isDefault ? 1 : b.isDefault ? -1 : (a.from?.getTime() ?? 0) - (b.from?.getTime() ?? 0),
    )
}

/**
 * Creates the periods (of `widthDays` days, aligned on the epoch) from `now`'s to `aheadDays` later
 * that no partition covers yet, and drops the partitions that end at or before `retentionDays` before
 * `now`'s day. Each change is a short transaction of its own that first takes one advisory lock, so
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
    lockTimeoutMs?: number
  },
): Promise<PartitionChanges> {
  const changes: PartitionChanges = { created: [], dropped: [], moved: 0, deleted: 0 }
  const width = Math.max(1, Math.trunc(options.widthDays ?? 1)) * DAY_MS
  const today = startOfDay(options.now.getTime())
  const expiry = today - options.retentionDays * DAY_MS
  for (const { table, column } of PARTITIONED_TABLES) {
    const partitions = await listPartitions(sql, table)
    const first = Math.floor(today / width) * width
    for (let period = first; period <= today + options.aheadDays * DAY_MS; period += width) {
      // Each part of the period no partition holds yet (the legacy one may hold its start, a
      // partition made with another width some of the rest).
      const end = period + width
      for (let from = period; from < end; ) {
        const holder = coverOf(partitions, from)
        if (holder) {
          from = holder.to?.getTime() ?? end
          continue
        }
        const next = Math.min(
          end,
          ...partitions.flatMap((p) =>
            p.from !== null && p.from.getTime() > from ? [p.from.getTime()] : [],
          ),
        )
        const moved = await createRange(sql, table, column, from, next, options.lockTimeoutMs)
        if (moved !== null) {
          changes.created.push(rangeName(table, from))
          changes.moved += moved
        } // else another worker made it meanwhile
        from = next
      }
    }
    for (const partition of partitions) {
      if (partition.isDefault || partition.to === null || partition.to.getTime() > expiry) continue
      const dropped = await underLock(sql, options.lockTimeoutMs, async (tx) => {
        if (!(await exists(tx, partition.name))) return false
        await tx.unsafe(`drop table ${quote(partition.name)}`)
        return true
      })
      if (dropped) changes.dropped.push(partition.name)
    }
    const fallback = partitions.find((p) => p.isDefault)
    if (fallback) {
      const deleted = await sql.unsafe(`delete from ${quote(fallback.name)} where ${column} < $1`, [
        new Date(expiry).toISOString(),
      ])
      changes.deleted += deleted.count
    }
  }
  // This process reads the periods it knows of directly (message-partitions.ts): look again.
  if (changes.created.length + changes.dropped.length + changes.moved > 0) forgetPartitions()
  return changes
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
  return underLock(sql, lockTimeoutMs, async (tx) => {
    if (await exists(tx, rangeName(table, fromMs))) return null
    const range = `for values from ('${from}') to ('${to}')`
    const waiting = await tx.unsafe(
      `select 1 from ${fallback} where ${column} >= $1 and ${column} < $2 limit 1`,
      [from, to],
    )
    if (waiting.length === 0) {
      await tx.unsafe(`create table ${name} partition of ${quote(table)} ${range}`)
      return 0
    }
    await tx.unsafe(`create table ${name} (like ${quote(table)} including defaults including storage)`)
    const moved = await tx.unsafe(
      `with gone as (delete from ${fallback} where ${column} >= $1 and ${column} < $2 returning *)
       insert into ${name} select * from gone`,
      [from, to],
    )
    await tx.unsafe(`alter table ${quote(table)} attach partition ${name} ${range}`)
    return moved.count
  })
}
