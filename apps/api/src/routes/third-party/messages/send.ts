import {
  DEFAULT_SENDER_ID,
  MessageAccepted,
  type MessageJob,
  type MessageType,
  SEND_BODIES,
  SEND_SCOPE,
} from '@dispatch/contracts'
import { owned } from '@dispatch/db'
import { suppressionOwner } from '@dispatch/runtime'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import { unavailable } from '../../../errors.ts'
import type { StoreOutcome } from '../../../message-store.ts'
import { errorResponses } from '../../responses.ts'
import { callerOf } from '../tenancy.ts'
import { outstandingLimitReached, scheduledFields } from './accept.ts'
import { judgeSends, type SendItem } from './judge.ts'

/** Each send endpoint: its path, its OpenAPI operation and its type (whose body and scope it takes). */
const SENDS: ReadonlyArray<{ path: string; operationId: string; type: MessageType; summary: string }> = [
  { path: '/send-text', operationId: 'sendTextMessage', type: 'text', summary: 'Send a free-text message' },
  {
    path: '/send-template',
    operationId: 'sendTemplateMessage',
    type: 'template',
    summary: 'Send an approved template message',
  },
  { path: '/send-image', operationId: 'sendImageMessage', type: 'image', summary: 'Send an image message' },
  {
    path: '/send-document',
    operationId: 'sendDocumentMessage',
    type: 'document',
    summary: 'Send a document (a PDF, an invoice…)',
  },
  { path: '/send-video', operationId: 'sendVideoMessage', type: 'video', summary: 'Send a video' },
  {
    path: '/send-audio',
    operationId: 'sendAudioMessage',
    type: 'audio',
    summary: 'Send an audio file or voice note',
  },
  { path: '/send-sticker', operationId: 'sendStickerMessage', type: 'sticker', summary: 'Send a sticker' },
  {
    path: '/send-location',
    operationId: 'sendLocationMessage',
    type: 'location',
    summary: 'Send a location',
  },
  {
    path: '/send-contacts',
    operationId: 'sendContactsMessage',
    type: 'contacts',
    summary: 'Send contact cards',
  },
  {
    path: '/send-interactive',
    operationId: 'sendInteractiveMessage',
    type: 'interactive',
    summary: 'Send reply buttons, a list, a call-to-action URL button or a location request',
  },
  {
    path: '/send-reaction',
    operationId: 'sendReactionMessage',
    type: 'reaction',
    summary: 'React to a message with an emoji',
  },
]

/** `hide` keeps a second mount of the routes (the spec's alias path) out of the OpenAPI document. */
export interface MessageRouteOptions {
  hide?: boolean
}

/**
 * The hot path: a cached key check, one rate-limit call and one write to the sender's fair-admission
 * lists, all in Redis. The
 * worker writes the message record; the API never touches Postgres here, except to list a
 * scheduled message at once (it would otherwise have no record until it is due).
 */
export const sendMessageRoutes: FastifyPluginAsyncTypebox<MessageRouteOptions> = async (app, options) => {
  const { messages, clock, db, config } = app.deps
  /** Best effort: the job is stored; without this row the worker writes one when it is due. */
  const recordScheduled = async (request: FastifyRequest, job: MessageJob) => {
    try {
      await owned(db, callerOf(request)).messages.recordScheduled([job])
    } catch (error) {
      request.log.warn({ err: error, messageId: job.messageId }, 'scheduled message not listed until due')
    }
  }
  // One bucket per key across the three sends and batches, in Redis, so it holds across instances.
  const perKeyLimit = (request: FastifyRequest) => app.spendMessageRate(request, 1)

  for (const send of SENDS) {
    // The recipient's suppression entry (and window, under `enforce`) is read while the claim and
    // the rate limit run: one round trip for all, not one after the other.
    const prefetch = async (request: FastifyRequest) => {
      request.prefetched = app.sendChecks.prefetch(
        request.apiKey.senderId ?? DEFAULT_SENDER_ID,
        request.body,
        send.type,
        suppressionOwner({ apiKeyId: request.apiKey.id, tenantId: request.apiKey.tenantId }),
      )
    }
    app.post(
      send.path,
      {
        config: { scope: SEND_SCOPE[send.type] },
        // Claimed first: a replay answers its stored 202 without spending rate or quota again.
        preHandler: [prefetch, app.idempotency.claim, perKeyLimit],
        onSend: app.idempotency.remember,
        schema: {
          operationId: send.operationId,
          hide: options.hide,
          tags: ['messages'],
          summary: send.summary,
          description:
            `Requires the \`${SEND_SCOPE[send.type]}\` scope. The recipient is exactly one of \`phone\` (E.164) and ` +
            '`userId` (a BSUID, for a user known by username); `replyTo` quotes a message. 202 means the message ' +
            'is stored in the queue: `queued`, or `scheduled` with a `sendAt`.',
          security: [{ apiKey: [] }],
          body: SEND_BODIES[send.type],
          response: {
            202: MessageAccepted,
            ...errorResponses(
              'VALIDATION_ERROR',
              'API_KEY_MISSING',
              'API_KEY_INVALID',
              'API_KEY_NOT_ACTIVE',
              'INSUFFICIENT_SCOPE',
              'PRIORITY_NOT_ALLOWED',
              'IDEMPOTENCY_REQUEST_IN_PROGRESS',
              'PAYLOAD_TOO_LARGE',
              'UNSUPPORTED_MEDIA_TYPE',
              'IDEMPOTENCY_KEY_REUSED',
              'TEMPLATE_NOT_FOUND',
              'TEMPLATE_NOT_APPROVED',
              'TEMPLATE_PARAMETERS_MISMATCH',
              'OUTSIDE_SERVICE_WINDOW',
              'RECIPIENT_OPTED_OUT',
              'FREQUENCY_CAP_EXCEEDED',
              'RATE_LIMITED',
              'QUOTA_EXCEEDED',
              'OUTSTANDING_LIMIT_REACHED',
              'SERVICE_UNAVAILABLE',
            ),
          },
        },
      },
      async (request, reply) => {
        const [judged] = await judgeSends(
          app,
          request.apiKey,
          [{ type: send.type, body: request.body as SendItem['body'], field: 'body' }],
          { now: clock(), prefetched: request.prefetched },
        )
        if (!judged || 'error' in judged) throw judged?.error
        const { job, delayMs, status } = judged.accepted
        const { messageId } = job
        let stored: StoreOutcome
        try {
          stored = await messages.add(job, delayMs)
        } catch (error) {
          request.log.error({ err: error, messageId }, 'could not enqueue message')
          throw unavailable('accept messages')
        }
        if (stored === 'refused') {
          await app.returnMessageRate(request, 1)
          throw outstandingLimitReached(config.MESSAGE_OUTSTANDING_MAX)
        }
        if (status === 'scheduled') await recordScheduled(request, job)
        app.metrics?.accepted(send.type)
        request.log.info({ messageId, type: send.type, status }, 'message accepted')
        return reply.code(202).send({
          messageId,
          status,
          type: send.type,
          phone: job.message.body.phone ?? null,
          ...(job.message.body.userId === undefined ? {} : { userId: job.message.body.userId }),
          ...scheduledFields(job),
          createdAt: job.acceptedAt,
        })
      },
    )
  }
}
