import type { FastifyInstance } from 'fastify'
import { authenticate } from '../authenticate.ts'
import { erasureRoutes } from '../shared/erasures.ts'
import { suppressionRoutes } from '../shared/suppressions.ts'
import { campaignAudienceRoutes } from './campaign-audience.ts'
import { campaignRoutes } from './campaigns.ts'
import { catalogRoutes } from './catalog.ts'
import { recipientExportRoutes } from './export.ts'
import { kitRoutes } from './kits.ts'
import { mediaRoutes } from './media.ts'
import { messageRoutes } from './messages/index.ts'
import { messagingLimitRoutes } from './messaging-limit.ts'
import { orderRoutes } from './orders.ts'
import { portalSessionRoutes } from './session.ts'
import { templateRoutes } from './templates.ts'
import { webhookDeliveryRoutes } from './webhook-deliveries.ts'
import { webhookEndpointRoutes } from './webhook-endpoints.ts'
import { webhookExampleRoutes } from './webhook-examples.ts'

/**
 * `/api/third-party`: every route takes an API key (`x-api-key`) or the portal's session in its
 * place, declared here once; each route names the scope it needs (`config.scope`), and one without
 * fails the app's start. Only the portal's sign-in and sign-out are `public`.
 */
export async function thirdPartyRoutes(app: FastifyInstance) {
  authenticate(app, 'api-key')
  await app.register(portalSessionRoutes, { prefix: '/session' })
  await app.register(messageRoutes, { prefix: '/messages' })
  await app.register(catalogRoutes)
  await app.register(orderRoutes)
  await app.register(kitRoutes)
  await app.register(webhookEndpointRoutes)
  await app.register(webhookDeliveryRoutes)
  await app.register(webhookExampleRoutes)
  await app.register(mediaRoutes)
  await app.register(templateRoutes)
  await app.register(messagingLimitRoutes)
  await app.register(suppressionRoutes, { audience: 'key' })
  await app.register(erasureRoutes, { audience: 'key' })
  await app.register(recipientExportRoutes)
  await app.register(campaignRoutes)
  await app.register(campaignAudienceRoutes)
}

/** `/third-party/messages`: the message routes again, without `/api`, authenticated as above. */
export async function messageAliasRoutes(app: FastifyInstance) {
  authenticate(app, 'api-key')
  await app.register(messageRoutes, { hide: true })
}
