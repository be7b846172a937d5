import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { AppError, unavailable } from '../errors.ts'
import { readIdempotencyKey, requestFingerprint, sha256 } from '../idempotency-key.ts'

declare module 'fastify' {
  interface FastifyInstance {
    /** Route hooks that make a POST safe to retry with an `Idempotency-Key` header. */
    idempotency: {
      /** preHandler: replays a finished request, refuses a reused key, or claims the key. */
      claim(request: FastifyRequest, reply: FastifyReply): Promise<unknown>
      /** onSend: remembers a 2xx answer for the key's lifetime; releases the key otherwise. */
      remember(request: FastifyRequest, reply: FastifyReply, payload: unknown): Promise<unknown>
    }
  }
  interface FastifyRequest {
    idempotencyClaim: { redisKey: string; fingerprint: string } | null
  }
}

type Stored =
  | { state: 'pending'; fingerprint: string }
  | { state: 'done'; fingerprint: string; statusCode: number; body: string }

/** How long a claim holds while its request runs; a crashed request frees its key after this. */
const CLAIM_MS = 30_000

/**
 * Idempotency keys live in Redis, per API key, for IDEMPOTENCY_TTL_SECONDS: the hot path stays off
 * Postgres, and every API instance sees the same claims. One `SET NX GET` both claims a new key and
 * reads an existing one.
 */
export const idempotency = fp(
  async (app: FastifyInstance) => {
    const { config, redis } = app.deps
    const ttlMs = config.IDEMPOTENCY_TTL_SECONDS * 1000

    app.decorateRequest('idempotencyClaim', null)
    app.decorate('idempotency', {
      async claim(request: FastifyRequest, reply: FastifyReply) {
        const header = readIdempotencyKey(request.headers['idempotency-key'])
        if (header === undefined) return
        const redisKey = `${config.QUEUE_PREFIX}:idempotency:${request.apiKey.id}:${sha256(header)}`
        const fingerprint = requestFingerprint(`${request.method} ${request.routeOptions.url}`, request.body)
        const pending: Stored = { state: 'pending', fingerprint }
        let previous: string | null
        try {
          previous = (await redis.call(
            'SET',
            redisKey,
            JSON.stringify(pending),
            'PX',
            CLAIM_MS,
            'NX',
            'GET',
          )) as string | null
        } catch (error) {
          request.log.error({ err: error }, 'idempotency claim failed')
          throw unavailable('accept messages')
        }
        if (previous === null) {
          request.idempotencyClaim = { redisKey, fingerprint }
          return
        }
        const stored = JSON.parse(previous) as Stored
        if (stored.fingerprint !== fingerprint) {
          throw new AppError(
            'IDEMPOTENCY_KEY_REUSED',
            'This Idempotency-Key was already used with a different request; use a new key',
          )
        }
        if (stored.state === 'pending') {
          throw new AppError(
            'IDEMPOTENCY_REQUEST_IN_PROGRESS',
            'A request with this Idempotency-Key is still in progress; retry shortly',
            { 'retry-after': '1' },
          )
        }
        return reply
          .code(stored.statusCode)
          .header('idempotent-replayed', 'true')
          .type('application/json; charset=utf-8')
          .send(stored.body)
      },

      async remember(request: FastifyRequest, reply: FastifyReply, payload: unknown) {
        const claim = request.idempotencyClaim
        if (!claim) return payload
        request.idempotencyClaim = null
        try {
          if (reply.statusCode >= 200 && reply.statusCode < 300 && typeof payload === 'string') {
            const done: Stored = { ...claim, state: 'done', statusCode: reply.statusCode, body: payload }
            await redis.set(claim.redisKey, JSON.stringify(done), 'PX', ttlMs)
          } else {
            // A refused or failed request is not remembered: the client may retry with the same key.
            await redis.del(claim.redisKey)
          }
        } catch (error) {
          request.log.warn({ err: error }, 'could not record the idempotent answer; the key frees itself')
        }
        return payload
      },
    })
  },
  { name: 'idempotency' },
)
