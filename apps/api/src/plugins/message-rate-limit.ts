import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { AppError } from '../errors.ts'

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * Counts `count` messages against the key's MESSAGE_RATE_PER_SECOND, shared by every instance;
     * throws `429 RATE_LIMITED` with `Retry-After` when the key is over it.
     */
    spendMessageRate(request: FastifyRequest, count: number): Promise<void>
  }
}

/**
 * One window per key, counted in messages. A request is let in while the window holds fewer than
 * the limit, then counts all its messages; a window that went past the limit lasts one second per
 * limit's worth of messages. So a single send behaves as a plain 1-second window, and a batch of
 * 1,000 at 100/s is let in once and then holds the key off for 10 s: over time, never more than
 * the limit per second. KEYS[1] the window; ARGV: count, limit, window ms.
 */
const SCRIPT = `
local limit = tonumber(ARGV[2])
local before = tonumber(redis.call('GET', KEYS[1]) or '0')
if before >= limit then return {0, redis.call('PTTL', KEYS[1])} end
local now = redis.call('INCRBY', KEYS[1], ARGV[1])
if before == 0 or now > limit then
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[3]) * math.ceil(now / limit))
end
return {1, 0}`

export const messageRateLimit = fp(
  async (app: FastifyInstance) => {
    const { config, redis } = app.deps
    app.decorate('spendMessageRate', async (request: FastifyRequest, count: number) => {
      let answer: [number, number]
      try {
        answer = (await redis.eval(
          SCRIPT,
          1,
          `${config.QUEUE_PREFIX}:message-rate:${request.apiKey.id}`,
          count,
          config.MESSAGE_RATE_PER_SECOND,
          1000,
        )) as [number, number]
      } catch (error) {
        // A limiter that cannot reach Redis lets requests through; the enqueue answers for Redis.
        request.log.warn({ err: error }, 'message rate limit skipped: Redis unreachable')
        return
      }
      const [allowed, ttlMs] = answer
      if (allowed === 1) return
      const seconds = Math.max(1, Math.ceil(ttlMs / 1000))
      throw new AppError(
        'RATE_LIMITED',
        `Too many messages; retry in ${seconds} second${seconds === 1 ? '' : 's'}`,
        {
          'retry-after': String(seconds),
        },
      )
    })
  },
  { name: 'message-rate-limit' },
)
