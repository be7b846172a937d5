import { nextUtcMidnight } from '@dispatch/contracts'
import { scriptCall } from '@dispatch/contracts/redis'
import type { FastifyBaseLogger, FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { AppError } from '../errors.ts'
import type { KeyUsage } from '../views.ts'

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * Counts `count` messages against the key's rate (its own `ratePerSecond`, else
     * MESSAGE_RATE_PER_SECOND) and its daily quota, shared by every instance; throws
     * `429 QUOTA_EXCEEDED` when today's count would pass the quota (the request is refused whole,
     * `Retry-After` runs to midnight UTC), else `429 RATE_LIMITED` with `Retry-After` when the key
     * is over its rate. A refused request spends neither.
     */
    spendMessageRate(request: FastifyRequest, count: number): Promise<void>
    /** The calling key's count for today (UTC); 0 when Redis cannot say. */
    /** A key's messages today (UTC); 0 while Redis cannot be reached. */
    messageUsageToday(apiKeyId: string, log: FastifyBaseLogger): Promise<KeyUsage>
  }
}

const DAY_MS = 24 * 60 * 60 * 1000
/** Today's count outlives its day by this much, for anyone looking back at yesterday. */
const KEEP_COUNT_MS = 2 * DAY_MS

/**
 * The daily quota, then the rate, in one round trip, and on the path of most requests in one
 * command: a key's counts of one UTC day are one bitfield of three signed 64-bit integers (#0
 * today's messages, #1 the rate window's, #2 when the window ends, unix ms on the API's clock),
 * counted up together by one BITFIELD that also reads the window's end. A request inside a window,
 * under the rate, is done then; the rest (a new window, one past its bound) writes once more.
 *
 * Quota: #0 counts the key's messages of the day, for every key (so `GET /me` can tell usage, and
 * a quota set mid-day counts what was sent before it); a key with a quota is refused whole when
 * the count plus this request's would pass it.
 *
 * Rate: one window per key, counted in messages. A request is let in while the window holds fewer
 * than the limit, then counts all its messages; a window that went past the limit lasts one second
 * per limit's worth of messages. So a single send behaves as a plain 1-second window, and a batch
 * of 1,000 at 100/s is let in once and then holds the key off for 10 s: over time, never more than
 * the limit per second. The window lives in the day's bitfield, so it starts afresh at midnight UTC.
 *
 * Nothing stays counted unless both checks pass: each count is taken first and given back, inside
 * the script, when it went past its bound.
 * KEYS[1] the day's counts; KEYS[2] the day's count as kept before the bitfield (a plain counter):
 * added once, by the day's first request, so an upgrade mid-day keeps what was counted.
 * ARGV: count, rate limit, window ms, daily quota (-1: none), when the day's counts expire (unix
 * ms), now (unix ms).
 * Returns {1} let in, {0, ms until the window ends} over the rate, {2, today's count} over the quota.
 */
const SCRIPT = `
local count = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local quota = tonumber(ARGV[4])
local now = tonumber(ARGV[6])
local read = redis.call('BITFIELD', KEYS[1], 'INCRBY', 'i64', '#0', count, 'INCRBY', 'i64', '#1', count, 'GET', 'i64', '#2')
local used, ends = read[1], read[3]
if used == count then
  redis.call('PEXPIREAT', KEYS[1], ARGV[5])
  local before = tonumber(redis.call('GET', KEYS[2]) or '0')
  if before > 0 then used = redis.call('BITFIELD', KEYS[1], 'INCRBY', 'i64', '#0', before)[1] end
end
local n = read[2]
if now >= ends then n = count end
local before = n - count
local overQuota = quota >= 0 and used > quota
if overQuota or before >= limit then
  redis.call('BITFIELD', KEYS[1], 'INCRBY', 'i64', '#0', -count, 'SET', 'i64', '#1', before)
  if overQuota then return {2, used - count} end
  return {0, ends - now}
end
if before == 0 or n > limit then
  local last = now + tonumber(ARGV[3]) * math.ceil(n / limit)
  redis.call('BITFIELD', KEYS[1], 'SET', 'i64', '#1', n, 'SET', 'i64', '#2', last)
end
return {1}`

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`

export const messageRateLimit = fp(
  async (app: FastifyInstance) => {
    const { config, redis, clock } = app.deps
    const spend = scriptCall(redis, 'dispatchSpendMessageRate', SCRIPT)
    // The key id as a hash tag keeps both keys of the script on one slot, should Redis be a cluster.
    const dayKey = (apiKeyId: string, now: Date) =>
      `${config.QUEUE_PREFIX}:usage:{${apiKeyId}}:${now.toISOString().slice(0, 10)}`
    const counterKey = (apiKeyId: string, now: Date) =>
      `${config.QUEUE_PREFIX}:quota:{${apiKeyId}}:${now.toISOString().slice(0, 10)}`

    app.decorate('spendMessageRate', async (request: FastifyRequest, count: number) => {
      const key = request.apiKey
      const now = clock()
      const resetsAt = nextUtcMidnight(now)
      const limit = key.ratePerSecond ?? config.MESSAGE_RATE_PER_SECOND
      let answer: [number, number?]
      try {
        answer = (await spend(
          2,
          dayKey(key.id, now),
          counterKey(key.id, now),
          count,
          limit,
          1000,
          key.dailyQuota ?? -1,
          resetsAt.getTime() + KEEP_COUNT_MS,
          now.getTime(),
        )) as [number, number?]
      } catch (error) {
        // A limiter that cannot reach Redis lets requests through, quota included: the enqueue
        // answers for Redis, and a quota is not worth refusing sends while Redis is briefly away.
        request.log.warn({ err: error }, 'message rate limit and quota skipped: Redis unreachable')
        return
      }
      const [outcome, detail = 0] = answer
      if (outcome === 1) return
      if (outcome === 2) {
        const quota = key.dailyQuota ?? 0
        const left = Math.max(0, quota - detail)
        const seconds = Math.max(1, Math.ceil((resetsAt.getTime() - now.getTime()) / 1000))
        const why =
          left === 0
            ? `The daily quota of ${plural(quota, 'message')} is spent`
            : `The daily quota of ${plural(quota, 'message')} has ${left} left today, fewer than this request's ${count}`
        throw new AppError(
          'QUOTA_EXCEEDED',
          `${why}; it resets at ${resetsAt.toISOString()} (midnight UTC)`,
          {
            'retry-after': String(seconds),
          },
        )
      }
      const seconds = Math.max(1, Math.ceil(detail / 1000))
      throw new AppError('RATE_LIMITED', `Too many messages; retry in ${plural(seconds, 'second')}`, {
        'retry-after': String(seconds),
      })
    })

    app.decorate('messageUsageToday', async (apiKeyId: string, log: FastifyBaseLogger): Promise<KeyUsage> => {
      const now = clock()
      const resetsAt = nextUtcMidnight(now)
      try {
        const [[counted = 0], before] = await Promise.all([
          redis.bitfield(dayKey(apiKeyId, now), 'GET', 'i64', '#0') as Promise<number[]>,
          redis.get(counterKey(apiKeyId, now)),
        ])
        // Before the day's first request since an upgrade, the day is still on the plain counter.
        const today = counted > 0 ? counted : Number(before ?? 0)
        return { today, resetsAt }
      } catch (error) {
        log.warn({ err: error }, "today's message count unknown: Redis unreachable")
        return { today: 0, resetsAt }
      }
    })
  },
  { name: 'message-rate-limit' },
)
