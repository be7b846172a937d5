import type { FastifyInstance } from 'fastify'
import { authenticate } from '../authenticate.ts'
import { smsStatusRoutes } from './sms-status.ts'
import { whatsappWebhookRoutes } from './whatsapp.ts'

/** `/api/webhooks`: the platforms' callbacks, open to the network; each checks its signature itself. */
export async function platformWebhookRoutes(app: FastifyInstance) {
  authenticate(app, 'public')
  await app.register(whatsappWebhookRoutes, { prefix: '/whatsapp' })
  await app.register(smsStatusRoutes, { prefix: '/sms' })
}
