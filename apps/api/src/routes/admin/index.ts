import type { FastifyInstance } from 'fastify'
import { authenticate } from '../authenticate.ts'
import { erasureRoutes } from '../shared/erasures.ts'
import { suppressionRoutes } from '../shared/suppressions.ts'
import { adminApiKeyRoutes } from './api-keys.ts'
import { adminCampaignAudienceRoutes } from './campaign-audience.ts'
import { adminCampaignRoutes } from './campaigns.ts'
import { adminCatalogRoutes } from './catalog.ts'
import { adminInboundMessageRoutes } from './inbound-messages.ts'
import { adminMessageRoutes } from './messages.ts'
import { adminOverviewRoutes } from './overview.ts'
import { adminQueueRoutes } from './queues.ts'
import { adminSenderPoolRoutes } from './sender-pools.ts'
import { adminSenderTemplateRoutes } from './sender-templates.ts'
import { adminSenderRoutes } from './senders.ts'
import { adminSessionRevokeRoutes, adminSessionRoutes } from './session.ts'
import { adminTimelineRoutes } from './timeline.ts'

/**
 * `/api/admin`: every route takes an admin's token or the console's session (`requireAdmin`),
 * declared here once; only the console's sign-in, session read and sign-out are `public` (they
 * check the name and token, or the session, themselves).
 */
export async function adminRoutes(app: FastifyInstance) {
  authenticate(app, 'admin')
  await app.register(adminSessionRoutes, { prefix: '/session' })
  await app.register(adminSessionRevokeRoutes, { prefix: '/sessions' })
  await app.register(adminOverviewRoutes, { prefix: '/overview' })
  await app.register(adminApiKeyRoutes, { prefix: '/api-keys' })
  await app.register(adminInboundMessageRoutes, { prefix: '/inbound-messages' })
  await app.register(adminSenderRoutes, { prefix: '/senders' })
  await app.register(adminSenderTemplateRoutes, { prefix: '/senders' })
  await app.register(adminSenderPoolRoutes, { prefix: '/sender-pools' })
  await app.register(adminMessageRoutes, { prefix: '/messages' })
  await app.register(adminTimelineRoutes, { prefix: '/messages' })
  await app.register(adminQueueRoutes, { prefix: '/queues' })
  await app.register(adminCampaignRoutes, { prefix: '/campaigns' })
  // Shared with /api/third-party, where a key manages its own sender's (third-party/).
  await app.register(suppressionRoutes, { audience: 'admin' })
  await app.register(erasureRoutes, { audience: 'admin' })
  await app.register(adminCatalogRoutes)
  await app.register(adminCampaignAudienceRoutes)
}
