import { randomUUID } from 'node:crypto'
import { FastifyOtelInstrumentation } from '@fastify/otel'
import rateLimit from '@fastify/rate-limit'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import Fastify, { type FastifyInstance, LogController } from 'fastify'
import { sessionAuth } from './console/session-auth.ts'
import type { ApiDeps } from './deps.ts'
import { AppError } from './errors.ts'
import { installPathIds } from './http/path-ids.ts'
import { adminAuth } from './plugins/admin-auth.ts'
import { apiKeyAuth } from './plugins/api-key-auth.ts'
import { authFailureLimit } from './plugins/auth-failure-limit.ts'
import { handleClientError, refuseConnect } from './plugins/client-errors.ts'
import { installErrorHandler, renderFrameworkError } from './plugins/error-handler.ts'
import { idempotency } from './plugins/idempotency.ts'
import { messageRateLimit } from './plugins/message-rate-limit.ts'
import { metrics } from './plugins/metrics.ts'
import { registerOpenApi } from './plugins/openapi.ts'
import { lazyRequestLogger } from './plugins/request-logger.ts'
import { sending } from './plugins/sending.ts'
import { installTextGuard } from './plugins/text-guard.ts'
import { installValidation } from './plugins/validation.ts'
import { queueSwitchboard } from './queue-switches.ts'
import { registerRoutes } from './routes/index.ts'

export type { ApiDeps } from './deps.ts'
export { createDeps, createLogger } from './deps.ts'
export { type ApiConfig, parseApiConfig } from './env.ts'

declare module 'fastify' {
  interface FastifyInstance {
    deps: ApiDeps
  }
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

/** Builds the API with the dependencies it is given; the server and the tests both call this. */
export async function buildApp(deps: ApiDeps): Promise<FastifyInstance> {
  const { config } = deps
  const app = Fastify({
    loggerInstance: deps.logger,
    bodyLimit: config.BODY_LIMIT_BYTES,
    trustProxy: config.TRUST_PROXY,
    logController: new LogController({ requestIdLogLabel: 'requestId' }),
    childLoggerFactory: lazyRequestLogger,
    // The caller's x-request-id is kept when it is sane, so one id follows a request across systems.
    requestIdHeader: false,
    genReqId: (req) => {
      const given = req.headers['x-request-id']
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID()
    },
    routerOptions: { ignoreTrailingSlash: true },
    frameworkErrors: renderFrameworkError,
    clientErrorHandler: handleClientError,
    // Shed load while draining with our own error body (below), not Fastify's.
    return503OnClosing: false,
  }).withTypeProvider<TypeBoxTypeProvider>()

  app.decorate('deps', deps)
  // Fastify runs `onClose` hooks last added first: added before every plugin's, the connections
  // close after the plugins have stopped their work on them (the campaign feeder's turn, the
  // caches' refreshes), not under it.
  app.addHook('onClose', async () => deps.close())
  refuseConnect(app.server)
  installValidation(app)
  installPathIds(app)
  installErrorHandler(app)
  installTextGuard(app)
  // JSON only: anything else is 415, rather than a string that fails validation.
  app.removeContentTypeParser(['text/plain'])
  let closing = false
  app.addHook('preClose', async () => {
    closing = true
  })
  // Hooks on every request take a callback, not a promise: a promise and its microtask per hook per
  // request are measurable on the accept path (docs/benchmarks-paths.md, accept).
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id)
    // No answer of ours is for a browser to guess the type of (an inbound media above all).
    reply.header('x-content-type-options', 'nosniff')
    // A request arriving on a kept-alive connection while the server drains goes elsewhere.
    if (closing) {
      throw new AppError('SERVICE_UNAVAILABLE', 'The server is shutting down; retry the request', {
        'retry-after': '1',
        connection: 'close',
      })
    }
    done()
  })

  await app.register(metrics)
  // Before any route, so every request is a span (its children: hooks, the handler).
  if (deps.tracing) {
    // A span per request and its handler; not per hook (five more spans per send, for nothing an
    // operator reads), and none for probes and scrapes (measured in docs/benchmarks-observability.md, "The cost of tracing").
    const instrumentation = new FastifyOtelInstrumentation({
      instrumentHooks: false,
      ignorePaths: ({ url }) => url === '/healthz' || url === '/readyz' || url === '/metrics',
    })
    instrumentation.setTracerProvider(deps.tracing.provider)
    await app.register(instrumentation.plugin())
  }
  await registerOpenApi(app)
  await app.register(rateLimit, {
    global: false,
    redis: deps.redis,
    nameSpace: `${config.QUEUE_PREFIX}:rate-limit:`,
    // A rate limiter that cannot reach Redis lets requests through rather than failing them.
    skipOnError: true,
    errorResponseBuilder: (_request, context) =>
      new AppError('RATE_LIMITED', `Too many requests; retry in ${context.after}`, {
        'retry-after': String(Math.max(1, Math.ceil(context.ttl / 1000))),
      }),
  })
  await app.register(authFailureLimit)
  await app.register(messageRateLimit)
  await app.register(sessionAuth)
  await app.register(apiKeyAuth)
  await app.register(adminAuth)
  await app.register(idempotency)
  await app.register(sending)
  await app.register(queueSwitchboard)

  await registerRoutes(app)
  return app
}
