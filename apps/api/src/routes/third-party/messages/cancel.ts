import {
  DEFAULT_SENDER_ID,
  MessageIdParams,
  type MessageType,
  MessageView,
  SEND_SCOPE,
} from '@dispatch/contracts'
import { owned } from '@dispatch/db'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { AppError, unavailable } from '../../../errors.ts'
import { callerOf } from '../../../http/caller.ts'
import { errorResponses } from '../../../http/error-responses.ts'
import { takeCancelClaim, tooLate } from '../../../sending/cancel-claim.ts'
import { findRequestedMessage, viewFromJob } from '../../../sending/find-message.ts'
import { toMessageView } from '../../../views.ts'
import { SCOPE_IN_ROUTE } from '../../authenticate.ts'
import type { MessageRouteOptions } from './send.ts'

/** The scope that sends a message's type cancels it; there is no wildcard (scopes.ts). */
const mayCancel = (scopes: string[], type: MessageType) => scopes.includes(SEND_SCOPE[type])

/** A record in one of these, found after the claim was taken: not ended by a worker. */
const CANCELABLE: ReadonlySet<string> = new Set(['scheduled', 'queued', 'sending', 'canceled'])

/**
 * Cancels a message no worker has taken yet. The message's claim in Redis decides a race with a
 * worker: whoever sets it first wins, so the answer is either `canceled` (and the platform is never
 * called) or `409` (and the message goes out), never both.
 */
export const cancelMessageRoutes: FastifyPluginAsyncTypebox<MessageRouteOptions> = async (app, options) => {
  const { db, clock } = app.deps

  app.post(
    '/:messageId/cancel',
    {
      config: { scope: SCOPE_IN_ROUTE },
      schema: {
        operationId: 'cancelMessage',
        hide: options.hide,
        tags: ['messages'],
        summary: 'Cancel a queued or scheduled message',
        description:
          "Requires the send scope of the message's type. A message a worker has taken " +
          '(`sending` or later) is `409 INVALID_STATE_TRANSITION`. Canceling a canceled message answers it again.',
        security: [{ apiKey: [] }],
        params: MessageIdParams,
        response: {
          200: MessageView,
          ...errorResponses('NOT_FOUND', 'INVALID_STATE_TRANSITION', 'SERVICE_UNAVAILABLE'),
        },
      },
    },
    async (request) => {
      const { scopes } = request.apiKey
      if (!scopes.some((s) => s.startsWith('send:'))) {
        throw new AppError('INSUFFICIENT_SCOPE', 'The API key lacks a send scope')
      }
      const found = await findRequestedMessage(app, request)
      const type = 'row' in found ? found.row.type : found.job.data.message.type
      if (!mayCancel(scopes, type)) {
        throw new AppError('INSUFFICIENT_SCOPE', `The API key lacks the "${SEND_SCOPE[type]}" scope`)
      }
      if ('row' in found && found.row.status === 'canceled') return toMessageView(found.row)
      if ('row' in found && found.row.status !== 'scheduled' && found.row.status !== 'queued') {
        throw tooLate(found.row.status)
      }
      const messageId = 'row' in found ? found.row.id : found.job.data.messageId
      const expiresAt = 'row' in found ? found.row.expiresAt?.toISOString() : found.job.data.expiresAt

      const claim = await takeCancelClaim(app.deps, messageId, expiresAt, request.log)
      // A claim is released once the message's outcome is in Postgres (message-claims.ts): one set
      // now may come after a worker's that sent it and was released since our first read of the
      // record. The record, written before the release, says so: the cancel lost, and leaves the
      // message as the worker ended it.
      if (claim.won) {
        const ended = await owned(db, callerOf(request))
          .messages.find(messageId)
          .catch(async (error) => {
            // Not known to be ours: given back, and the caller asks again.
            request.log.error({ err: error, messageId }, 'message cancel could not read its record')
            await claim.giveBack()
            throw unavailable('cancel messages')
          })
        if (ended && !CANCELABLE.has(ended.status)) {
          await claim.giveBack()
          throw tooLate(ended.status)
        }
      }

      const now = clock()
      // The record, when there is one (a scheduled message); the worker writes it otherwise. Either
      // way the claim already guarantees the message is never sent.
      await owned(db, callerOf(request))
        .messages.cancel(messageId, now)
        .catch((error) =>
          request.log.warn({ err: error, messageId }, 'canceled message not yet recorded; the worker will'),
        )
      // Due at once: the worker records the cancel now instead of at the scheduled time.
      const senderId = ('row' in found ? found.row.senderId : found.job.data.senderId) ?? DEFAULT_SENDER_ID
      await app.deps.messages
        .promote(senderId, messageId)
        .catch((error) =>
          request.log.warn(
            { err: error, messageId },
            'canceled message stays until its time; the worker records it then',
          ),
        )
      request.log.info({ messageId }, 'message canceled')
      if ('row' in found)
        return { ...toMessageView(found.row), status: 'canceled' as const, updatedAt: now.toISOString() }
      return viewFromJob(found.job, found.state, 'cancel')
    },
  )
}
