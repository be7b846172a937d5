import { MessageIdParams, MessageView } from '@dispatch/contracts'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errorResponses } from '../../../http/error-responses.ts'
import { findRequestedMessage, viewFromJob } from '../../../sending/find-message.ts'
import { ownFallback, withFallback } from '../../../sending/message-fallback-view.ts'
import { ownSenderChange, withSenderChange } from '../../../sending/sender-change-view.ts'
import { toMessageView } from '../../../views.ts'
import type { MessageRouteOptions } from './send.ts'

export const messageStatusRoutes: FastifyPluginAsyncTypebox<MessageRouteOptions> = async (app, options) => {
  app.get(
    '/:messageId',
    {
      config: { scope: 'read:messages' },
      schema: {
        operationId: 'getMessage',
        hide: options.hide,
        tags: ['messages'],
        summary: 'A message and its delivery status',
        description: 'Requires the `read:messages` scope. A key sees only the messages it sent.',
        params: MessageIdParams,
        response: {
          200: MessageView,
          ...errorResponses('NOT_FOUND'),
        },
      },
    },
    async (request) => {
      const found = await findRequestedMessage(app, request)
      if (!('row' in found)) return viewFromJob(found.job, found.state, found.claim)
      const [fallback, moved] = await Promise.all([
        ownFallback(app.deps, request.apiKey, found.row.id),
        ownSenderChange(app.deps, request.apiKey, found.row),
      ])
      return withSenderChange(withFallback(toMessageView(found.row), fallback, found.row), moved)
    },
  )
}
