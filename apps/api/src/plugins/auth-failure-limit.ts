import { join } from 'node:path'
import { defineLuaCommand, luaScripts } from '@dispatch/runtime/lua-scripts'
import type { RedisClient } from '@dispatch/runtime/redis'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { Result } from 'ioredis'
import { AppError } from '../errors.ts'

declare module 'fastify' {
  interface FastifyInstance {
    /** Failed authentications per client address: admin tokens and API keys counted apart. */
    authFailureLimits: { admin: AuthFailureLimiter; apiKey: AuthFailureLimiter }
  }
}

declare module 'ioredis' {
  interface RedisCommander<Context> {
    countAuthFailure(
      key: string,
      failed: '0' | '1',
      max: number,
      windowMs: number,
    ): Result<[blocked: number, value: number], Context>
    refundAuthFailure(key: string): Result<number, Context>
  }
}

/**
 * A fixed window per address: count a failure, or refuse an address at the limit
 * (lua/countAuthFailure-1.lua); take a counted failure back (lua/refundAuthFailure-1.lua).
 */
const scripts = luaScripts(join(import.meta.dirname, 'lua'), ['countAuthFailure', 'refundAuthFailure'])

export interface AuthFailureLimiter {
  /**
   * Throws `429 RATE_LIMITED` with `Retry-After` when the request's address (`request.ip`) is over
   * the limit, whether or not this request `failed`; otherwise counts it when it failed. One Redis
   * round trip. When Redis cannot answer, lets the request through (logged): an outage must not
   * lock admins out.
   */
  guard(request: FastifyRequest, failed: boolean): Promise<void>
  /**
   * Takes back a failure counted in advance (`guard(request, true)` before a lookup) once the
   * lookup found the credential real. Best effort: a Redis error is logged and ignored.
   */
  refund(request: FastifyRequest): Promise<void>
}

function createLimiter(
  redis: RedisClient,
  keyPrefix: string,
  limit: { max: number; windowMs: number },
): AuthFailureLimiter {
  return {
    async guard(request, failed) {
      let answer: [number, number]
      try {
        answer = await redis.countAuthFailure(
          `${keyPrefix}${request.ip}`,
          failed ? '1' : '0',
          limit.max,
          limit.windowMs,
        )
      } catch (error) {
        request.log.warn({ err: error }, 'authentication failure limit skipped: Redis did not answer')
        return
      }
      const [blocked, ttlMs] = answer
      if (!blocked) return
      const seconds = Math.max(1, Math.ceil(ttlMs / 1000))
      throw new AppError(
        'RATE_LIMITED',
        `Too many failed authentication attempts from this address; retry in ${seconds} seconds`,
        { 'retry-after': String(seconds) },
      )
    },
    async refund(request) {
      try {
        await redis.refundAuthFailure(`${keyPrefix}${request.ip}`)
      } catch (error) {
        request.log.warn({ err: error }, 'authentication failure not refunded: Redis did not answer')
      }
    },
  }
}

/**
 * Counts failed authentications per client address in Redis, so the limit holds across API
 * instances: admin-auth and api-key-auth each guard with their own counter and limit.
 */
export const authFailureLimit = fp(
  async (app: FastifyInstance) => {
    const { config, redis } = app.deps
    defineLuaCommand(redis, scripts.countAuthFailure)
    defineLuaCommand(redis, scripts.refundAuthFailure)
    const prefix = `${config.QUEUE_PREFIX}:auth-failures`
    app.decorate('authFailureLimits', {
      admin: createLimiter(redis, `${prefix}:admin:`, {
        max: config.ADMIN_AUTH_FAILURE_MAX,
        windowMs: config.ADMIN_AUTH_FAILURE_WINDOW_MS,
      }),
      apiKey: createLimiter(redis, `${prefix}:api-key:`, {
        max: config.API_KEY_FAILURE_MAX,
        windowMs: config.API_KEY_FAILURE_WINDOW_MS,
      }),
    })
  },
  { name: 'auth-failure-limit' },
)
