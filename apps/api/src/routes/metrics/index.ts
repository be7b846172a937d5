import { bearerTokenCheck } from '@dispatch/runtime'
import Fastify, { type FastifyInstance, type FastifyRequest, type RouteHandlerMethod } from 'fastify'
import fp from 'fastify-plugin'
import { AppError } from '../../errors.ts'
import { installErrorHandler } from '../../plugins/error-handler.ts'

declare module 'fastify' {
  interface FastifyInstance {
    /** With METRICS_PORT: where `/metrics` is served, once the app is ready (`http://host:port`). */
    metricsListenerUrl: string | null
  }
}

/**
 * `GET /metrics`: this process's metrics in the Prometheus text format, out of the OpenAPI document
 * (it is for the scraper, not for API clients). Absent when METRICS_ENABLED is false.
 *
 * On PORT with the API, unless METRICS_PORT is set: then on a listener of its own at
 * METRICS_HOST:METRICS_PORT, started when the app is ready and closed with it, and not on PORT at
 * all, so the public port (and whatever routes to it) never reaches it.
 *
 * With METRICS_TOKEN set it takes only `Authorization: Bearer <METRICS_TOKEN>`, compared in
 * constant time; anything else is `401 ADMIN_AUTH_REQUIRED` (the code of a missing or wrong
 * operator credential). A wrong token counts against the admin brute-force limit of its address,
 * and an address over that limit gets 429, as on the admin routes. Production refuses to start
 * with neither the token nor a listener of its own (env.ts).
 */
export const metricsRoutes = fp(
  async (app: FastifyInstance) => {
    app.decorate('metricsListenerUrl', null)
    const { metrics } = app
    if (!metrics) return
    const { METRICS_TOKEN: token, METRICS_PORT: port, METRICS_HOST: host } = app.deps.config
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
    const scrape: RouteHandlerMethod = async (_request, reply) =>
      reply.type(metrics.registry.contentType).send(await metrics.registry.metrics())
    const options = {
      schema: { hide: true },
      config: { public: true },
      ...(authorized ? { onRequest: requireToken } : {}),
    }

    if (port === undefined) {
      app.get('/metrics', options, scrape)
      return
    }
    const listener = Fastify({
      loggerInstance: app.log.child({ listener: 'metrics' }),
      disableRequestLogging: true,
    })
    installErrorHandler(listener)
    listener.get('/metrics', options, scrape)
    app.addHook('onReady', async () => {
      app.metricsListenerUrl = await listener.listen({ host, port })
      app.log.info(`metrics listening on ${app.metricsListenerUrl}`)
    })
    app.addHook('onClose', async () => {
      await listener.close()
    })
  },
  { name: 'metrics-routes' },
)
