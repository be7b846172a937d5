import { randomUUID } from 'node:crypto'
import {
  MessageAccepted,
  MessageJob,
  type MessageType,
  SendImageBody,
  SendTemplateBody,
  SendTextBody,
} from '@dispatch/contracts'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { TSchema } from 'typebox'
import { Compile } from 'typebox/compile'
import { unavailable } from '../../errors.ts'
import { MessageEnqueuer } from '../../message-enqueuer.ts'
import { errorResponses } from '../responses.ts'

const SENDS: ReadonlyArray<{
  path: string
  operationId: string
  type: MessageType
  scope: string
  body: TSchema
  summary: string
}> = [
  {
    path: '/send-text',
    operationId: 'sendTextMessage',
    type: 'text',
    scope: 'send:free-text',
    body: SendTextBody,
    summary: 'Send a free-text message',
  },
  {
    path: '/send-template',
    operationId: 'sendTemplateMessage',
    type: 'template',
    scope: 'send:template',
    body: SendTemplateBody,
    summary: 'Send an approved template message',
  },
  {
    path: '/send-image',
    operationId: 'sendImageMessage',
    type: 'image',
    scope: 'send:image',
    body: SendImageBody,
    summary: 'Send an image message',
  },
]

/** `hide` keeps a second mount of the routes (the spec's alias path) out of the OpenAPI document. */
export interface MessageRouteOptions {
  hide?: boolean
}

const jobIsValid = Compile(MessageJob)

/**
 * The hot path: a cached key check, one rate-limit call and one queue write, all in Redis. The
 * worker writes the message record; the API never touches Postgres here.
 */
export const sendMessageRoutes: FastifyPluginAsyncTypebox<MessageRouteOptions> = async (app, options) => {
  const { config, messageQueue, clock } = app.deps
  const enqueuer = new MessageEnqueuer(messageQueue)
  // One bucket per key across the three sends, on the root store, so it holds across instances.
  const perKeyLimit = app.rateLimit({
    max: config.MESSAGE_RATE_PER_SECOND,
    timeWindow: 1000,
    keyGenerator: (request) => `messages:${request.apiKey.id}`,
  })

  for (const send of SENDS) {
    app.post(
      send.path,
      {
        onRequest: app.requireApiKey(send.scope),
        preHandler: [perKeyLimit, app.idempotency.claim],
        onSend: app.idempotency.remember,
        schema: {
          operationId: send.operationId,
          hide: options.hide,
          tags: ['messages'],
          summary: send.summary,
          description: `Requires the \`${send.scope}\` scope. 202 means the message is queued for delivery.`,
          security: [{ apiKey: [] }],
          body: send.body,
          response: {
            202: MessageAccepted,
            ...errorResponses(
              'VALIDATION_ERROR',
              'API_KEY_MISSING',
              'API_KEY_INVALID',
              'API_KEY_NOT_ACTIVE',
              'INSUFFICIENT_SCOPE',
              'IDEMPOTENCY_REQUEST_IN_PROGRESS',
              'PAYLOAD_TOO_LARGE',
              'UNSUPPORTED_MEDIA_TYPE',
              'IDEMPOTENCY_KEY_REUSED',
              'RATE_LIMITED',
              'SERVICE_UNAVAILABLE',
            ),
          },
        },
      },
      async (request, reply) => {
        const { clientReference, ...body } = request.body as { phone: string; clientReference?: string }
        const messageId = randomUUID()
        const acceptedAt = clock().toISOString()
        const job = {
          messageId,
          apiKeyId: request.apiKey.id,
          acceptedAt,
          ...(clientReference === undefined ? {} : { clientReference }),
          message: { type: send.type, body },
        }
        if (!jobIsValid.Check(job)) throw new Error(`message job does not match its contract: ${messageId}`)
        try {
          await enqueuer.add(job as MessageJob)
        } catch (error) {
          request.log.error({ err: error, messageId }, 'could not enqueue message')
          throw unavailable('accept messages')
        }
        request.log.info({ messageId, type: send.type }, 'message accepted')
        return reply
          .code(202)
          .send({ messageId, status: 'queued', type: send.type, phone: body.phone, createdAt: acceptedAt })
      },
    )
  }
}
