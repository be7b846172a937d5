import type { FastifyInstance } from 'fastify'
import { adminRoutes } from './admin/index.ts'
import { apiKeyRoutes } from './api-keys/index.ts'
import { requireDeclaredAuthentication } from './authenticate.ts'
import { consolePages } from './console/index.ts'
import { healthRoutes } from './health/index.ts'
import { metricsRoutes } from './metrics/index.ts'
import { queueDashboardRoutes } from './queue-dashboard/index.ts'
import { messageAliasRoutes, thirdPartyRoutes } from './third-party/index.ts'
import { platformWebhookRoutes } from './webhooks/index.ts'

/**
 * The route tree: one folder per URL prefix, mounted here, in the order of the OpenAPI document.
 * Each folder's entry plugin declares once how every route under it is authenticated
 * (authenticate.ts): a new prefix is one more line here, and one that declares nothing fails the
 * app's start.
 */
const PREFIXES = [
  [healthRoutes, ''], // public: probes
  [metricsRoutes, ''], // its route checks METRICS_TOKEN itself
  [apiKeyRoutes, '/api/api-keys'], // API key; the key request is public
  [adminRoutes, '/api/admin'], // admin token or console session; the sign-in is public
  [thirdPartyRoutes, '/api/third-party'], // API key or portal session, with each route's scope
  [platformWebhookRoutes, '/api/webhooks'], // public: signed by the platform
  // The message routes again, as the spec's usage example has them (out of the OpenAPI document).
  [messageAliasRoutes, '/third-party/messages'],
  // Bull Board, for browsers (HTTP Basic): outside /api and the OpenAPI document.
  [queueDashboardRoutes, '/admin/queues'],
  // The console and the portal: the single-page app's files, outside /api and the document.
  [consolePages, ''],
] as const

export async function registerRoutes(app: FastifyInstance): Promise<void> {
  const checkDeclared = requireDeclaredAuthentication(app)
  for (const [routes, prefix] of PREFIXES) await app.register(routes as never, { prefix })
  checkDeclared()
}
