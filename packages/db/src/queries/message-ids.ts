import { acceptedAtOfMessageId } from '@dispatch/runtime'
import { and, between, eq, inArray, or, type SQL } from 'drizzle-orm'
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
 * The message the platform knows by `platformMessageId`. Its status webhooks echo our id in
 * `biz_opaque_callback_data` (`ourId`): when that is a UUIDv7, its time names the partition to read;
 * without it, every partition's platform-id index is probed.
 */
export function messageWithPlatformId(platformMessageId: string, ourId?: string): SQL {
  const ms = ourId === undefined ? null : acceptedAtOfMessageId(ourId)
  const byPlatformId = eq(messages.platformMessageId, platformMessageId)
  return ms === null ? byPlatformId : (and(byPlatformId, nearIdTime(ms)) as SQL)
}
