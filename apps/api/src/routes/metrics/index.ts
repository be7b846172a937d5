import { bearerTokenCheck } from '@dispatch/contracts'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { AppError } from '../../errors.ts'

/**
 * `GET /metrics`: this process's metrics in the Prometheus text format, out of the OpenAPI document
 * (it is for the scraper, not for API clients). Absent when METRICS_ENABLED is false.
 *
 * With METRICS_TOKEN set it takes only `Authorization: Bearer <METRICS_TOKEN>`, compared in
 * constant time; anything else is `401 ADMIN_AUTH_REQUIRED` (the code of a missing or wrong
 * operator credential). A wrong token counts against the admin brute-force limit of its address,
 * and an address over that limit gets 429, as on the admin routes.
 */
export async function metricsRoutes(app: FastifyInstance) {
  const { metrics } = app
  if (!metrics) return
  const token = app.deps.config.METRICS_TOKEN
  const authorized = token ? bearerTokenCheck(token) : undefined
  const requireToken = async (request: FastifyRequest) => {
    const ok = authorized?.(request.headers.authorization) ?? true
    // As for admin tokens: a request without credentials guesses nothing and is not counted.
    await app.authFailureLimits.admin.guard(request, !ok && request.headers.authorization !== undefined)
    if (!ok) {
      throw new AppError(
        'ADMIN_AUTH_REQUIRED',
        'A valid metrics token is required (Authorization: Bearer <METRICS_TOKEN>)',
        { 'www-authenticate': 'Bearer' },
      )
    }
  }
  app.get(
    '/metrics',
    { schema: { hide: true }, ...(authorized ? { onRequest: requireToken } : {}) },
    async (_request, reply) =>
      reply.type(metrics.registry.contentType).send(await metrics.registry.metrics()),
  )
}
