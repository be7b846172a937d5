import { acceptedAtOfMessageId } from '@dispatch/runtime'
import { type AnyColumn, and, between, eq, inArray, or, type SQL, sql } from 'drizzle-orm'
import { messages } from '../schema/messages.ts'

/** How far from the time its id carries a message's `accepted_at` may be (it is the same instant). */
const SLACK_MS = 60_000

const nearIdTime = (ms: number) =>
  between(messages.acceptedAt, new Date(ms - SLACK_MS), new Date(ms + SLACK_MS))

/**
 * The message with this id. Messages are partitioned by day of `accepted_at`, and a UUIDv7 id
 * carries that time: with it the condition names the day, so Postgres reads one partition's key
 * instead of every one. An id from before UUIDv7 is found by id alone.
 */
export function messageWithId(id: string): SQL {
  const ms = acceptedAtOfMessageId(id)
  return ms === null ? eq(messages.id, id) : (and(eq(messages.id, id), nearIdTime(ms)) as SQL)
}

/** The messages with these ids, each found in its day as `messageWithId` does. */
export function messagesWithIds(ids: string[]): SQL {
  const timed = ids.filter((id) => acceptedAtOfMessageId(id) !== null)
  const untimed = ids.filter((id) => acceptedAtOfMessageId(id) === null)
  const parts: SQL[] = timed.map(messageWithId)
  if (untimed.length > 0) parts.push(inArray(messages.id, untimed))
  if (parts.length === 1 && parts[0]) return parts[0]
  return or(...parts) as SQL
}

/**
 * The rows of `table` (`messages` or one of its partitions) whose platform id is `platformMessageId`.
 * The index is on the id's hash (`messages_platform_message_id_hash_idx`, migration 0040: 8 bytes a
 * row, not the id's ~50-60), so the condition names the hash, which the index reads, and the id,
 * which tells the rows sharing a hash apart. A lookup by the id alone reads no index.
 */
export function platformIdIs(table: { platformMessageId: AnyColumn }, platformMessageId: string): SQL {
  const column = table.platformMessageId
  return sql`(hashtextextended(${column}, 0) = hashtextextended(${platformMessageId}::text, 0) and ${column} = ${platformMessageId})`
}

/**
 * The message the platform knows by `platformMessageId`. Its status webhooks echo our id in
 * `biz_opaque_callback_data` (`ourId`): when that is a UUIDv7, its time names the partition to read;
 * without it, every partition's platform-id index is probed.
 */
export function messageWithPlatformId(platformMessageId: string, ourId?: string): SQL {
  const ms = ourId === undefined ? null : acceptedAtOfMessageId(ourId)
  const byPlatformId = platformIdIs(messages, platformMessageId)
  return ms === null ? byPlatformId : (and(byPlatformId, nearIdTime(ms)) as SQL)
}
