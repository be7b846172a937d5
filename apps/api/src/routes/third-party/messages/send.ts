import { MessageAccepted, type MessageType, SEND_BODIES, SEND_SCOPE } from '@dispatch/contracts'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import { errorResponses } from '../../../http/error-responses.ts'
import { scheduledFields } from '../../../sending/accept.ts'
import { prefetchChecks, requireFallbackScope, type SendItem } from '../../../sending/judge.ts'
import { submit } from '../../../sending/submit.ts'

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
 * lists, all in Redis. The worker writes the message record; the API never touches Postgres here,
 * except to list a scheduled message at once (it would otherwise have no record until it is due).
 * Each route parses the send and answers; `submit` (apps/api/src/sending) judges and stores it.
 */
export const sendMessageRoutes: FastifyPluginAsyncTypebox<MessageRouteOptions> = async (app, options) => {
  const { sending } = app
  // One bucket per key across the three sends and batches, in Redis, so it holds across instances.
  const perKeyLimit = (request: FastifyRequest) => app.spendMessageRate(request, 1)

  // A `fallback` needs its own scope, checked before anything is spent.
  const fallbackScope = async (request: FastifyRequest) =>
    requireFallbackScope(request.body, request.apiKey.scopes, 'body')

  for (const send of SENDS) {
    // The recipient's suppression entry (and window, under `enforce`) is read while the claim and
    // the rate limit run: one round trip for all, not one after the other.
    const prefetch = async (request: FastifyRequest) => {
      request.prefetchedChecks = prefetchChecks(sending, request.apiKey, send.type, request.body)
    }
    app.post(
      send.path,
      {
        config: { scope: SEND_SCOPE[send.type] },
        // Claimed first: a replay answers its stored 202 without spending rate or quota again.
        preHandler: [fallbackScope, prefetch, app.idempotency.claim, perKeyLimit],
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
          body: SEND_BODIES[send.type],
          response: {
            202: MessageAccepted,
            ...errorResponses(
              'VALIDATION_ERROR',
              'PRIORITY_NOT_ALLOWED',
              'IDEMPOTENCY_REQUEST_IN_PROGRESS',
              'PAYLOAD_TOO_LARGE',
              'UNSUPPORTED_MEDIA_TYPE',
              'IDEMPOTENCY_KEY_REUSED',
              'INVALID_REFERENCE',
              'TEMPLATE_NOT_FOUND',
              'TEMPLATE_NOT_APPROVED',
              'TEMPLATE_PARAMETERS_MISMATCH',
              'OUTSIDE_SERVICE_WINDOW',
              'RECIPIENT_OPTED_OUT',
              'FREQUENCY_CAP_EXCEEDED',
              'MESSAGING_LIMIT_REACHED',
              'RATE_LIMITED',
              'QUOTA_EXCEEDED',
              'OUTSTANDING_LIMIT_REACHED',
              'SERVICE_UNAVAILABLE',
            ),
          },
        },
      },
      async (request, reply) => {
        // The rate was spent before (perKeyLimit): given back only if the store refuses the send.
        const [answer] = await submit(
          sending,
          request.apiKey,
          [{ type: send.type, body: request.body as SendItem['body'], field: 'body' }],
          {
            prefetched: request.prefetchedChecks,
            rate: { giveBack: (count) => app.returnMessageRate(request, count) },
            log: request.log,
          },
        )
        if (!answer || 'error' in answer) throw answer?.error
        const { job, status } = answer.accepted
        const { messageId } = job
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
