import { AdminMessageIdParams, AdminMessageTimeline } from '@dispatch/contracts'
import { apiKeyClientNames, findMessageById, isUuid, messageHistory } from '@dispatch/db'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { AppError } from '../../errors.ts'
import { errorResponses } from '../../http/error-responses.ts'
import { timelineOf } from '../../message-timeline.ts'
import { withFallback } from '../../sending/message-fallback-view.ts'
import { withSenderChange } from '../../sending/sender-change-view.ts'
import { toAdminMessageView } from './messages.ts'

const notFound = () => new AppError('NOT_FOUND', 'Message not found')

/** `GET /api/admin/messages/:id/timeline`: any key's message. */
export const adminTimelineRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { db } = app.deps
  app.get(
    '/:id/timeline',
    {
      schema: {
        operationId: 'getAdminMessageTimeline',
        tags: ['admin'],
        summary: 'A message and its whole life on one timeline, for any key',
        description:
          'Oldest first: accepted, scheduled, each delivery attempt that met an error, each move to another number ' +
          'of its sender pool, sent, delivered, read ' +
          '(or failed, expired, canceled), each admin retry, and each webhook event with its delivery attempts. ' +
          'A message not yet recorded by a worker is 404 here for a moment.',
        security: [{ adminToken: [] }],
        params: AdminMessageIdParams,
        response: { 200: AdminMessageTimeline, ...errorResponses('NOT_FOUND') },
      },
    },
    async (request) => {
      if (!isUuid(request.params.id)) throw notFound()
      const row = await findMessageById(db, request.params.id.toLowerCase())
      if (!row) throw notFound()
      const [history, names] = await Promise.all([
        messageHistory(db, row.id),
        apiKeyClientNames(db, [row.apiKeyId]),
      ])
      return {
        message: {
          ...withSenderChange(
            withFallback(toAdminMessageView(row), history.fallback, row),
            history.senderChanges.at(-1),
          ),
          clientName: names.get(row.apiKeyId),
        },
        request: row.payload as Record<string, unknown>,
        entries: timelineOf(row, history),
      }
    },
  )
}
