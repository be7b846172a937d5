import { join } from 'node:path'
import { nextUtcMidnight } from '@dispatch/contracts'
import { luaScripts, scriptCall } from '@dispatch/runtime/lua-scripts'
import type { RedisClient } from '@dispatch/runtime/redis'

const DAY_MS = 24 * 60 * 60 * 1000
/** Today's count outlives its day by this much, for anyone looking back at yesterday. */
export const KEEP_COUNT_MS = 2 * DAY_MS

/**
 * A key's counts of one UTC day (message-rate-limit.ts): #0 the day's messages, which `GET /me`
 * reads and every quota check counts; #1, #2 its request rate's window. The key id as a hash tag
 * keeps both keys on one slot, should Redis be a cluster.
 */
export const usageDayKey = (prefix: string, apiKeyId: string, date: string) =>
  `${prefix}:usage:{${apiKeyId}}:${date}`
/** The day's count as kept before the bitfield (a plain counter), read once by the day's first spend. */
export const usageCounterKey = (prefix: string, apiKeyId: string, date: string) =>
  `${prefix}:quota:{${apiKeyId}}:${date}`

const SPEND = luaScripts(join(import.meta.dirname, 'lua'), ['spendDailyQuota']).spendDailyQuota

/**
 * Defines the spend's script on `redis` now, before any command waits in its auto-pipeline: defined
 * on the first spend instead, a command already queued in that tick's pipeline (made before the
 * definition) left the pipeline without it, and ioredis failed the whole pipeline.
 */
export function defineDailyQuotaScript(redis: RedisClient): void {
  scriptCall(redis, SPEND)
}

/** The UTC day of `at`: its date, and when it ends (when a spent quota is whole again). */
export const utcDayOf = (at: Date) => ({ date: at.toISOString().slice(0, 10), resetsAt: nextUtcMidnight(at) })

/**
 * Takes up to `wanted` messages from a key's daily quota on `at`'s day (UTC), without its request
 * rate: answers how many were granted (all of them for a key without a quota, which still counts
 * them for `GET /me`). A campaign's feeder spends each window's so before it gives the rows ids.
 */
export async function spendDailyQuota(
  redis: RedisClient,
  prefix: string,
  key: { id: string; dailyQuota: number | null },
  wanted: number,
  at: Date,
): Promise<number> {
  const { date, resetsAt } = utcDayOf(at)
  const granted = await scriptCall(redis, SPEND)(
    usageDayKey(prefix, key.id, date),
    usageCounterKey(prefix, key.id, date),
    key.dailyQuota ?? -1,
    resetsAt.getTime() + KEEP_COUNT_MS,
    wanted,
  )
  return Number(granted)
}

/** Gives back to `at`'s day what was spent and then not sent (rows refused, a window cut short). */
export async function returnDailyQuota(
  redis: RedisClient,
  prefix: string,
  apiKeyId: string,
  count: number,
  at: Date,
): Promise<void> {
  if (count <= 0) return
  await redis.bitfield(usageDayKey(prefix, apiKeyId, utcDayOf(at).date), 'INCRBY', 'i64', '#0', -count)
}
