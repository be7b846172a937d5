import { MarkedRead, MarkReadBody, ReplyIdParams, Scopes } from '@dispatch/contracts'
import { owned } from '@dispatch/db'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { AppError } from '../../../errors.ts'
import { callerOf } from '../../../http/caller.ts'
import { errorResponses } from '../../../http/error-responses.ts'
import { graphErrorOf, parseJson } from '../../../platform/graph-answer.ts'
import { createSenderAccess } from '../../../platform/sender-access.ts'
import type { MessageRouteOptions } from './send.ts'

/** How long the read receipt may take: the caller is waiting on it. */
const READ_TIMEOUT_MS = 10_000

/**
 * `POST /messages/:messageId/read`: the blue ticks on a reply routed to this key, and with
 * `typing: true` the typing indicator. Sent to the platform during the request, never through the
 * sender's queue, so a backlog of outbound messages does not hold it back. Nothing is stored: a
 * receipt that fails is answered as failed, for the caller to try again.
 */
export const markReadRoutes: FastifyPluginAsyncTypebox<MessageRouteOptions> = async (app, options) => {
  const accessOf = createSenderAccess(app.deps)
  app.post(
    '/:messageId/read',
    {
      config: { scope: Scopes.readMessages },
      schema: {
        operationId: 'markMessageRead',
        hide: options.hide,
        tags: ['messages'],
        summary: 'Mark a reply read, and show the typing indicator',
        description:
          'Requires the `read:messages` scope. `messageId` is a reply routed to this key (its `messageId` in ' +
          '`message.received`, or its wamid); any other is 404. Sent to the platform at once, ahead of the ' +
          "sender's queued messages. `typing: true` also shows the typing indicator.",
        params: ReplyIdParams,
        body: MarkReadBody,
        response: {
          200: MarkedRead,
          ...errorResponses('VALIDATION_ERROR', 'NOT_FOUND', 'PLATFORM_ERROR', 'SERVICE_UNAVAILABLE'),
        },
      },
    },
    async (request) => {
      const reply = await owned(app.deps.db, callerOf(request)).messages.reply(request.params.messageId)
      if (!reply) throw new AppError('NOT_FOUND', 'No reply with this id was routed to this API key')
      const typing = request.body?.typing === true
      const answer = {
        messageId: reply.id,
        platformMessageId: reply.platformMessageId,
        read: true as const,
        typing,
      }
      const access = await accessOf(reply.phoneNumberId)
      if (!access) {
        request.log.info(
          { messageId: reply.id },
          'read receipt not sent: no Cloud API access for this number',
        )
        return { ...answer, delivered: false }
      }
      let response: Response
      try {
        response = await fetch(`${access.numberUrl}/messages`, {
          method: 'POST',
          headers: { authorization: `Bearer ${access.accessToken}`, 'content-type': 'application/json' },
          body: JSON.stringify({
            messaging_product: 'whatsapp',
            status: 'read',
            message_id: reply.platformMessageId,
            ...(typing ? { typing_indicator: { type: 'text' } } : {}),
          }),
          signal: AbortSignal.timeout(READ_TIMEOUT_MS),
        })
      } catch (error) {
        request.log.warn({ err: error, messageId: reply.id }, 'read receipt not sent')
        throw new AppError('SERVICE_UNAVAILABLE', 'The messaging platform did not answer; try again', {
          'retry-after': '1',
        })
      }
      if (!response.ok) {
        const detail = await response.text().catch(() => '')
        request.log.warn({ status: response.status, messageId: reply.id }, 'read receipt refused')
        if (response.status >= 500 || response.status === 429) {
          throw new AppError('SERVICE_UNAVAILABLE', 'The messaging platform cannot take it now; try again', {
            'retry-after': '1',
          })
        }
        throw new AppError(
          'PLATFORM_ERROR',
          `The messaging platform refused the read receipt: ${graphErrorOf(parseJson(detail)).message.slice(0, 200) || 'no reason given'}`,
        )
      }
      request.log.info({ messageId: reply.id, typing }, 'reply marked read')
      return { ...answer, delivered: true }
    },
  )
}
