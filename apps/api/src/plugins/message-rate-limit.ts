import { join } from 'node:path'
import { nextUtcMidnight } from '@dispatch/contracts'
import { luaScripts, scriptCall } from '@dispatch/runtime/lua-scripts'
import { turnBatched } from '@dispatch/runtime/redis'
import type { FastifyBaseLogger, FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { AppError } from '../errors.ts'
import { KEEP_COUNT_MS, usageCounterKey, usageDayKey } from '../sending/daily-quota.ts'
import type { KeyUsage } from '../views.ts'

declare module 'fastify' {
  interface FastifyRequest {
    /** The day's counts this request's messages were spent on, for `returnMessageRate`. */
    messageRateDay?: string
  }
  interface FastifyInstance {
    /**
     * Counts `count` messages against the key's rate (its own `ratePerSecond`, else
     * MESSAGE_RATE_PER_SECOND) and its daily quota, shared by every instance; throws
     * `429 QUOTA_EXCEEDED` when today's count would pass the quota (the request is refused whole,
     * `Retry-After` runs to midnight UTC), else `429 RATE_LIMITED` with `Retry-After` when the key
     * is over its rate. A refused request spends neither.
     */
    spendMessageRate(request: FastifyRequest, count: number): Promise<void>
    /**
     * Gives back to today's quota `count` messages this request spent and then did not store
     * (refused at the key's outstanding bound): a refused send spends no quota. Best effort; on
     * the refusal path only, so a send pays nothing for it.
     */
    returnMessageRate(request: FastifyRequest, count: number): Promise<void>
    /** The calling key's count for today (UTC); 0 when Redis cannot say. */
    /** A key's messages today (UTC); 0 while Redis cannot be reached. */
    messageUsageToday(apiKeyId: string, log: FastifyBaseLogger): Promise<KeyUsage>
  }
}

const DAY_MS = 24 * 60 * 60 * 1000

/**
 * The daily quota, then the rate, in one round trip, for every request of one key in a turn of the
 * event loop (in order), and on the path of most turns in one command: a key's counts of one UTC
 * day are one bitfield of three signed 64-bit integers (#0 today's messages, #1 the rate window's,
 * #2 when the window ends, unix ms on the API's clock), counted up together by one BITFIELD that
 * also reads the window's end. When every request of the turn is let in inside the window, that is
 * all; otherwise (a new window, a request past a bound) one more BITFIELD writes what the requests,
 * taken one after another, leave.
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
 * A refused request counts nothing: it leaves the counts as they were before it. The script, its
 * keys and arguments: lua/spendMessageRate-2.lua.
 */
const SCRIPT = luaScripts(join(import.meta.dirname, 'lua'), ['spendMessageRate']).spendMessageRate

/** One request's spend, as the turn's script call takes it. */
interface Spend {
  keys: [day: string, counter: string]
  count: number
  limit: number
  quota: number
  expireAt: number
  now: number
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`

export const messageRateLimit = fp(
  async (app: FastifyInstance) => {
    const { config, redis, clock } = app.deps
    const spend = scriptCall(redis, SCRIPT)
    /** The UTC day of `now` and when it ends, worked out once a day (every request needs both). */
    let day = { date: '', resetsAt: new Date(0), ends: 0 }
    const dayOf = (now: Date) => {
      const at = now.getTime()
      if (at >= day.ends || at < day.ends - DAY_MS) {
        const resetsAt = nextUtcMidnight(now)
        day = { date: now.toISOString().slice(0, 10), resetsAt, ends: resetsAt.getTime() }
      }
      return day
    }
    // Shared with a campaign's feeder, which spends the same day's count (sending/daily-quota.ts).
    const dayKey = (apiKeyId: string, date: string) => usageDayKey(config.QUEUE_PREFIX, apiKeyId, date)
    const counterKey = (apiKeyId: string, date: string) =>
      usageCounterKey(config.QUEUE_PREFIX, apiKeyId, date)

    /** One script call per key (and day, limit and quota) for the requests of a turn. */
    const spendTurn = turnBatched(async (spends: Spend[]) => {
      const groups = new Map<string, Spend[]>()
      for (const spent of spends) {
        const group = `${spent.keys[0]} ${spent.limit} ${spent.quota}`
        const list = groups.get(group)
        if (list) list.push(spent)
        else groups.set(group, [spent])
      }
      const answers = new Map<Spend, [number, number]>()
      await Promise.all(
        [...groups.values()].map(async (group) => {
          const [first] = group as [Spend]
          const reply = (await spend(
            ...first.keys,
            first.limit,
            1000,
            first.quota,
            first.expireAt,
            first.now,
            ...group.map((spent) => spent.count),
          )) as number[]
          for (const [i, spent] of group.entries())
            answers.set(spent, [reply[2 * i] ?? 1, reply[2 * i + 1] ?? 0])
        }),
      )
      return spends.map((spent): [number, number] => answers.get(spent) ?? [1, 0])
    })

    app.decorate('spendMessageRate', async (request: FastifyRequest, count: number) => {
      const key = request.apiKey
      const now = clock()
      const { date, resetsAt } = dayOf(now)
      const limit = key.ratePerSecond ?? config.MESSAGE_RATE_PER_SECOND
      let answer: [number, number]
      request.messageRateDay = dayKey(key.id, date)
      try {
        answer = await spendTurn({
          keys: [request.messageRateDay, counterKey(key.id, date)],
          count,
          limit,
          quota: key.dailyQuota ?? -1,
          expireAt: resetsAt.getTime() + KEEP_COUNT_MS,
          now: now.getTime(),
        })
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

    app.decorate('returnMessageRate', async (request: FastifyRequest, count: number) => {
      const day = request.messageRateDay
      if (!day || count <= 0) return
      try {
        await redis.bitfield(day, 'INCRBY', 'i64', '#0', -count)
      } catch (error) {
        request.log.warn({ err: error, count }, 'refused messages still counted today: Redis unreachable')
      }
    })

    app.decorate('messageUsageToday', async (apiKeyId: string, log: FastifyBaseLogger): Promise<KeyUsage> => {
      const now = clock()
      const { date, resetsAt } = dayOf(now)
      try {
        const [[counted = 0], before] = await Promise.all([
          redis.bitfield(dayKey(apiKeyId, date), 'GET', 'i64', '#0') as Promise<number[]>,
          redis.get(counterKey(apiKeyId, date)),
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
