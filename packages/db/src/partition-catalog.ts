import type { Sql } from './client.ts'

/**
 * Which tables are partitioned and how to read their partitions from the catalog: partitions.ts
 * keeps the periods, queries/message-partitions.ts reads messages through them.
 *
 * The tables that grow with traffic, partitioned by time (migrations 0023 and 0024): one table per
 * period of `widthDays`, `<table>_pYYYYMMDD` after the day it starts; `<table>_legacy` holds what was
 * there before partitioning (up to the end of the day it ran). Periods are created ahead and dropped
 * whole past retention by the workers (`maintainPartitions`), never deleted row by row. A write whose
 * period is missing creates it (`writingToPeriods`). Each table follows its `policy`'s retention and
 * width: messages, their attempts and replies the messages'; webhook events and their attempts their
 * own (kept for less time), together, since an attempt has no key to its event to go with it.
 *
 * There is no default partition after the first maintenance round (the migration makes one, which
 * that round empties into periods and drops): with one, Postgres cannot read the periods in time
 * order (a message list merges every period instead of reading the newest first and stopping), and
 * every statement that cannot name its period plans one more table. But for `webhook_events`
 * (`keepsDefault`): its rows are written by triggers inside every change they report (a status from
 * the platform, a cancel, a reply, an opt-out…), and a missing period must fail none of them, so its
 * default partition stays and catches such a row until its period is made.
 */
export const PARTITIONED_TABLES = [
  { table: 'messages', column: 'accepted_at', policy: 'messages', keepsDefault: false },
  { table: 'message_attempts', column: 'created_at', policy: 'messages', keepsDefault: false },
  // The platform's time of the reply: known at every insert, and the same on a redelivery, so the
  // wamid's uniqueness (with it) still stores a reply once.
  { table: 'inbound_messages', column: 'received_at', policy: 'messages', keepsDefault: false },
  { table: 'webhook_events', column: 'created_at', policy: 'webhooks', keepsDefault: true },
  { table: 'webhook_attempts', column: 'created_at', policy: 'webhooks', keepsDefault: false },
] as const

export type PartitionPolicy = (typeof PARTITIONED_TABLES)[number]['policy']

/**
 * The storage parameters each new partition of a table is made with (Postgres keeps none on a
 * partitioned table, so every partition carries its own; migration 0032 set them on those before).
 * `messages` leaves a tenth of each page free: the update that stores a message's pricing touches no
 * indexed column, and with room on its page it is HOT (no entry in any of the 11 indexes); packed
 * full, every update moved the row to another page. Status changes stay non-HOT (`status` and
 * `updated_at` are indexed, schema/messages.ts) but keep their new version on the same page.
 */
export const PARTITION_STORAGE: Partial<Record<PartitionedTable, string>> = {
  messages: 'fillfactor = 90',
}

export type PartitionedTable = (typeof PARTITIONED_TABLES)[number]['table']

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
