import type { FastifyInstance } from 'fastify'
import Type from 'typebox'
import { AppError } from '../../errors.ts'
import { errorResponses } from '../responses.ts'

const withTimeout = <T>(promise: Promise<T>, ms: number) =>
  Promise.race([
    promise,
    new Promise<never>((_, reject) =>
      setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms).unref(),
    ),
  ])

export async function healthRoutes(app: FastifyInstance) {
  app.get(
    '/healthz',
    {
      schema: {
        operationId: 'getLiveness',
        tags: ['health'],
        summary: 'The process is up',
        security: [],
        response: { 200: Type.Object({ status: Type.Literal('ok') }) },
      },
    },
    async () => ({ status: 'ok' as const }),
  )

  app.get(
    '/readyz',
    {
      schema: {
        operationId: 'getReadiness',
        tags: ['health'],
        summary: 'Postgres and Redis are reachable',
        security: [],
        response: {
          200: Type.Object({ status: Type.Literal('ok'), checks: Type.Record(Type.String(), Type.String()) }),
          ...errorResponses('SERVICE_UNAVAILABLE'),
        },
      },
    },
    async () => {
      const { pingDb, redis } = app.deps
      const [postgres, redisCheck] = await Promise.allSettled([
        withTimeout(pingDb(), 2000),
        withTimeout(redis.ping(), 2000),
      ])
      const down = [
        postgres.status === 'rejected' && 'Postgres',
        redisCheck.status === 'rejected' && 'Redis',
      ].filter(Boolean)
      if (down.length > 0) {
        throw new AppError('SERVICE_UNAVAILABLE', `Not ready: ${down.join(' and ')} unreachable`)
      }
      return { status: 'ok' as const, checks: { postgres: 'ok', redis: 'ok' } }
    },
  )
}
