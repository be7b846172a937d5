import { MessagingLimitView, Scopes } from '@dispatch/contracts'
import { owned } from '@dispatch/db'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { callerOf } from '../../http/caller.ts'
import { errorResponses } from '../../http/error-responses.ts'
import { messagingLimitView, readSenderReach } from '../../senders/views.ts'

/** The messaging limit of the key's own sender's business portfolio, and its reach now. */
export const messagingLimitRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { db, redis, config, clock } = app.deps
  app.get(
    '/messaging-limit',
    {
      config: { scope: Scopes.sendTemplate },
      schema: {
        operationId: 'getMessagingLimit',
        tags: ['templates'],
        summary:
          "Your sender's messaging limit: the limit, the users reached in the last 24 hours, when room frees",
        description:
          'Requires the `send:template` scope. WhatsApp caps the unique users a business portfolio may reach ' +
          'outside a customer-service window in a moving 24 hours; this is the portfolio of the sender your key ' +
          'sends through. `reach` and `roomAt` are null while nothing is counted (no finite limit, or policy `off`).',
        security: [{ apiKey: [] }],
        response: { 200: MessagingLimitView, ...errorResponses('SERVICE_UNAVAILABLE') },
      },
    },
    async (request) => {
      const caller = callerOf(request)
      const { senderId } = caller
      const row = await owned(db, caller).sender.find()
      if (!row) {
        // The environment's sender before a worker wrote its row: nothing known, nothing counted.
        return {
          limit: null,
          tier: null,
          source: 'none' as const,
          portfolio: `sender:${senderId}`,
          reach: null,
          roomAt: null,
          policy: 'hold' as const,
        }
      }
      const [reach] = await readSenderReach(redis, config.QUEUE_PREFIX, [row], clock().getTime())
      return messagingLimitView(row, reach ?? null)
    },
  )
}
