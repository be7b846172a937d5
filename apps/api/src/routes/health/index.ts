import type { FastifyInstance } from 'fastify'
import Type from 'typebox'
import { AppError } from '../../errors.ts'
import { errorResponses } from '../../http/error-responses.ts'
import { authenticate } from '../authenticate.ts'

const withTimeout = <T>(promise: Promise<T>, ms: number) =>
  Promise.race([
    promise,
    new Promise<never>((_, reject) =>
      setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms).unref(),
    ),
  ])

export async function healthRoutes(app: FastifyInstance) {
  authenticate(app, 'public')
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
        summary: 'This instance can accept messages (Redis answers); Postgres is reported',
        description:
          'Ready while Redis answers: messages are accepted into Redis, and known keys keep sending ' +
          'through a Postgres outage. With Postgres unreachable the answer is still 200, `degraded`, ' +
          'so an orchestrator does not take every instance out at once; without Redis it is 503.',
        security: [],
        response: {
          200: Type.Object({
            status: Type.Union([Type.Literal('ok'), Type.Literal('degraded')]),
            checks: Type.Record(Type.String(), Type.String()),
          }),
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
      const postgresUp = postgres.status === 'fulfilled'
      if (redisCheck.status === 'rejected') {
        const down = postgresUp ? 'Redis' : 'Postgres and Redis'
        throw new AppError('SERVICE_UNAVAILABLE', `Not ready: ${down} unreachable`)
      }
      return {
        status: postgresUp ? ('ok' as const) : ('degraded' as const),
        checks: { postgres: postgresUp ? 'ok' : 'unreachable', redis: 'ok' },
      }
    },
  )
}
