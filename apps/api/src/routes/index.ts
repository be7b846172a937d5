import type { FastifyInstance } from 'fastify'
import { adminApiKeyRoutes } from './admin/api-keys.ts'
import { adminCatalogRoutes } from './admin/catalog.ts'
import { adminInboundMessageRoutes } from './admin/inbound-messages.ts'
import { adminMessageRoutes } from './admin/messages.ts'
import { adminOverviewRoutes } from './admin/overview.ts'
import { adminQueueRoutes } from './admin/queues.ts'
import { adminSenderTemplateRoutes } from './admin/sender-templates.ts'
import { adminSenderRoutes } from './admin/senders.ts'
import { adminSessionRevokeRoutes, adminSessionRoutes } from './admin/session.ts'
import { adminTimelineRoutes } from './admin/timeline.ts'
import { apiKeyRoutes } from './api-keys/index.ts'
import { consolePages } from './console/index.ts'
import { healthRoutes } from './health/index.ts'
import { metricsRoutes } from './metrics/index.ts'
import { queueDashboardRoutes } from './queue-dashboard/index.ts'
import { catalogRoutes } from './third-party/catalog.ts'
import { erasureRoutes } from './third-party/erasures.ts'
import { recipientExportRoutes } from './third-party/export.ts'
import { kitRoutes } from './third-party/kits.ts'
import { mediaRoutes } from './third-party/media.ts'
import { batchMessageRoutes } from './third-party/messages/batch.ts'
import { cancelMessageRoutes } from './third-party/messages/cancel.ts'
import { messageListRoutes } from './third-party/messages/list.ts'
import { markReadRoutes } from './third-party/messages/read.ts'
import { sendMessageRoutes } from './third-party/messages/send.ts'
import { messageStatusRoutes } from './third-party/messages/status.ts'
import { messageTimelineRoutes } from './third-party/messages/timeline.ts'
import { validateMessageRoutes } from './third-party/messages/validate.ts'
import { orderRoutes } from './third-party/orders.ts'
import { portalSessionRoutes } from './third-party/session.ts'
import { suppressionRoutes } from './third-party/suppressions.ts'
import { templateRoutes } from './third-party/templates.ts'
import { webhookDeliveryRoutes } from './third-party/webhook-deliveries.ts'
import { webhookEndpointRoutes } from './third-party/webhook-endpoints.ts'
import { whatsappWebhookRoutes } from './webhooks/whatsapp.ts'

/**
 * Each group of routes and where it is mounted, in the order of the OpenAPI document: a new group
 * is one more line here. `messages` stands for the message routes below.
 */
const ROUTES = [
  [healthRoutes, {}],
  [metricsRoutes, {}],
  [apiKeyRoutes, { prefix: '/api/api-keys' }],
  [adminSessionRoutes, { prefix: '/api/admin/session' }],
  [adminSessionRevokeRoutes, { prefix: '/api/admin/sessions' }],
  [portalSessionRoutes, { prefix: '/api/third-party/session' }],
  [adminOverviewRoutes, { prefix: '/api/admin/overview' }],
  [adminApiKeyRoutes, { prefix: '/api/admin/api-keys' }],
  [adminInboundMessageRoutes, { prefix: '/api/admin/inbound-messages' }],
  [adminSenderRoutes, { prefix: '/api/admin/senders' }],
  [adminSenderTemplateRoutes, { prefix: '/api/admin/senders' }],
  [adminMessageRoutes, { prefix: '/api/admin/messages' }],
  [adminTimelineRoutes, { prefix: '/api/admin/messages' }],
  [adminQueueRoutes, { prefix: '/api/admin/queues' }],
  [suppressionRoutes, { prefix: '/api/admin', audience: 'admin' }],
  [erasureRoutes, { prefix: '/api/admin', audience: 'admin' }],
  'messages',
  [whatsappWebhookRoutes, { prefix: '/api/webhooks/whatsapp' }],
  [adminCatalogRoutes, { prefix: '/api/admin' }],
  [catalogRoutes, { prefix: '/api/third-party' }],
  [orderRoutes, { prefix: '/api/third-party' }],
  [kitRoutes, { prefix: '/api/third-party' }],
  [webhookEndpointRoutes, { prefix: '/api/third-party' }],
  [webhookDeliveryRoutes, { prefix: '/api/third-party' }],
  [mediaRoutes, { prefix: '/api/third-party' }],
  [templateRoutes, { prefix: '/api/third-party' }],
  [suppressionRoutes, { prefix: '/api/third-party', audience: 'key' }],
  [erasureRoutes, { prefix: '/api/third-party', audience: 'key' }],
  [recipientExportRoutes, { prefix: '/api/third-party' }],
  // Bull Board, for browsers (HTTP Basic): outside /api and the OpenAPI document.
  [queueDashboardRoutes, { prefix: '/admin/queues' }],
  // The console and the portal: the single-page app's files, outside /api and the document.
  [consolePages, {}],
] as const

/** The message routes, mounted twice: the spec's usage example omits `/api`. */
const MESSAGE_ROUTES = [
  sendMessageRoutes,
  batchMessageRoutes,
  validateMessageRoutes,
  messageStatusRoutes,
  cancelMessageRoutes,
  messageListRoutes,
  markReadRoutes,
  messageTimelineRoutes,
] as const

export async function registerRoutes(app: FastifyInstance): Promise<void> {
  for (const entry of ROUTES) {
    if (entry !== 'messages') {
      await app.register(entry[0] as never, entry[1])
      continue
    }
    // Both paths answer. The alias stays out of the OpenAPI document, whose operationIds (and the
    // client generated from them) must be unique.
    for (const [prefix, hide] of [
      ['/api/third-party/messages', false],
      ['/third-party/messages', true],
    ] as const) {
      for (const routes of MESSAGE_ROUTES) await app.register(routes, { prefix, hide })
    }
  }
}
