import { MessageIdParams, MessageTimeline, redactPayload } from '@dispatch/contracts'
import { owned } from '@dispatch/db'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { callerOf } from '../../../http/caller.ts'
import { errorResponses } from '../../../http/error-responses.ts'
import { openingEntries, senderChangedEntry, timelineOf } from '../../../message-timeline.ts'
import { findRequestedMessage, viewFromJob } from '../../../sending/find-message.ts'
import { withFallback } from '../../../sending/message-fallback-view.ts'
import { withSenderChange } from '../../../sending/sender-change-view.ts'
import { toMessageView } from '../../../views.ts'
import type { MessageRouteOptions } from './send.ts'

/** `GET /api/third-party/messages/:messageId/timeline`: the key's own message only. */
export const messageTimelineRoutes: FastifyPluginAsyncTypebox<MessageRouteOptions> = async (app, options) => {
  app.get(
    '/:messageId/timeline',
    {
      config: { scope: 'read:messages' },
      schema: {
        operationId: 'getMessageTimeline',
        hide: options.hide,
        tags: ['messages'],
        summary: 'A message and its whole life on one timeline',
        description:
          'Requires the `read:messages` scope; a key sees only its own messages. Oldest first: accepted, ' +
          'scheduled, each delivery attempt that met an error, each move to another number of its sender pool, sent, delivered, read (or failed, expired, ' +
          'canceled), and each webhook event with its delivery attempts to the key’s endpoints. `request` is the send ' +
          'as stored: only what names it once its content was removed (`redacted`).',
        params: MessageIdParams,
        response: {
          200: MessageTimeline,
          ...errorResponses('NOT_FOUND'),
        },
      },
    },
    async (request) => {
      const found = await findRequestedMessage(app, request)
      if ('row' in found) {
        const history = await owned(app.deps.db, callerOf(request)).messages.history(found.row)
        // The admins' retries name an admin: the key sees that it was retried, not by whom.
        const entries = timelineOf(found.row, history).map((entry) =>
          entry.kind === 'retried' ? { ...entry, summary: 'Retried by an admin' } : entry,
        )
        return {
          message: withSenderChange(
            withFallback(toMessageView(found.row), history.fallback, found.row),
            history.senderChanges.at(-1),
          ),
          request: found.row.payload as Record<string, unknown>,
          entries,
        }
      }
      // Not recorded yet: what Redis knows is how it started.
      const view = viewFromJob(found.job, found.state, found.claim)
      const entries = openingEntries(view.createdAt, view.sendAt, view.scheduledReason === 'quiet_hours')
      // Its latest move, which its job carries (its record keeps each once written).
      if (view.senderChanged) entries.push(senderChangedEntry(view.senderChanged))
      const { type, body } = found.job.data.message
      // A `discard` send's content lives in its job only: the key reads back what a record keeps.
      const asked = found.job.data.discardContent ? redactPayload(type, body) : body
      return { message: view, request: asked, entries }
    },
  )
}
