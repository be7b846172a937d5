import { and, lt, type SQL, sql } from 'drizzle-orm'
import { alias } from 'drizzle-orm/pg-core'
import type { Db } from '../client.ts'
import { type MessageRow, messages } from '../schema/messages.ts'
import { ordering } from './list-helpers.ts'
import { recentPartitions } from './message-partitions.ts'

/**
 * How many days a list reads one by one before reading the rest through `messages` in one statement.
 * A busy key's page and count end within the newest days; a quiet key's go on to the statement that
 * plans every partition, once.
 */
const WALK_DAYS = 4

/** Reads up to `limit` rows from `from` (and `older`, when reading the rest): answers how many it found. */
type Read = (from: typeof messages, older: SQL | undefined, limit: number) => Promise<number>

/**
 * A list in acceptance order, newest first, read day by day (message-partitions.ts says why): the
 * newest days' tables one at a time, each under the alias `messages` so the list's own filters apply
 * unchanged, until `need` rows are found; then, if still short, everything older through `messages`.
 * False when the days cannot be read apart (a row waits in the default partition): read `messages`.
 */
async function walk(db: Db, need: number, read: Read): Promise<boolean> {
  const days = await recentPartitions(db)
  if (days === null) return false
  let found = 0
  let oldest: number | undefined
  for (const day of days.slice(0, WALK_DAYS)) {
    found += await read(alias(day.table, 'messages') as unknown as typeof messages, undefined, need - found)
    oldest = day.from
    if (found >= need) return true
  }
  const older = oldest === undefined ? undefined : lt(messages.acceptedAt, new Date(oldest))
  await read(messages, older, need - found)
  return true
}

/** One page, newest first by acceptance, of the messages `matching`; null: read `messages` instead. */
export async function newestPageByDays(
  db: Db,
  matching: SQL | undefined,
  offset: number,
  take: number,
): Promise<MessageRow[] | null> {
  const sort = ordering('DESC', messages.acceptedAt, messages.id)
  const rows: MessageRow[] = []
  const read: Read = async (from, older, limit) => {
    const part = await db
      .select()
      .from(from)
      .where(and(matching, older))
      .orderBy(...sort)
      .limit(limit)
    rows.push(...part)
    return part.length
  }
  return (await walk(db, offset + take, read)) ? rows.slice(offset, offset + take) : null
}

/** How many messages match, counted up to `limit` (the list's bounded count); null: use `messages`. */
export async function countByDays(db: Db, matching: SQL | undefined, limit: number): Promise<number | null> {
  let total = 0
  const read: Read = async (from, older, rest) => {
    const ones = db.select({ one: sql`1` }).from(from).where(and(matching, older)).limit(rest).as('matches')
    const [row] = await db.select({ n: sql<number>`count(*)::int` }).from(ones)
    total += row?.n ?? 0
    return row?.n ?? 0
  }
  return (await walk(db, limit, read)) ? total : null
}
