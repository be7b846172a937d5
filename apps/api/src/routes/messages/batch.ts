import { randomUUID } from 'node:crypto'
import {
  BatchAccepted,
  BatchBody,
  BatchItem,
  type BatchItemResult,
  type MessageJob,
  type MessageType,
  SEND_SCOPE,
} from '@dispatch/contracts'
import { recordScheduledMessages } from '@dispatch/db'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { AppError, errorBody, unavailable } from '../../errors.ts'
import { describeValidationError, makeAjv } from '../../plugins/validation.ts'
import { errorResponses } from '../responses.ts'
import { type AcceptedMessage, acceptMessage } from './accept.ts'
import type { MessageRouteOptions } from './send.ts'

/** Each item type's own check, as the single sends have it. */
const ajv = makeAjv(false)
const CHECKS: Record<MessageType, ReturnType<typeof ajv.compile>> = {
  text: ajv.compile(BatchItem.anyOf[0]),
  template: ajv.compile(BatchItem.anyOf[1]),
  image: ajv.compile(BatchItem.anyOf[2]),
}
const isType = (type: unknown): type is MessageType => typeof type === 'string' && Object.hasOwn(CHECKS, type)

const failure = (error: AppError) => errorBody(error.errorCode, error.statusCode, error.message)

/**
 * Many messages in one request: each item is checked on its own and answered in its own result;
 * the valid ones are stored together (one pipeline), count against the key's rate limit by
 * number, and share a `batchId`. `Idempotency-Key` covers the batch as a whole.
 */
export const batchMessageRoutes: FastifyPluginAsyncTypebox<MessageRouteOptions> = async (app, options) => {
  const { config, messages, clock, db } = app.deps

  app.post(
    '/batch',
    {
      onRequest: app.requireApiKey(),
      preHandler: app.idempotency.claim,
      onSend: app.idempotency.remember,
      bodyLimit: config.BATCH_BODY_LIMIT_BYTES,
      schema: {
        operationId: 'sendMessageBatch',
        hide: options.hide,
        tags: ['messages'],
        summary: 'Send up to 1,000 messages in one request',
        description:
          'Each item is `{type: "text" | "template" | "image", ...the body of that send}` and needs the ' +
          'scope of its type. Items are judged one by one: the answer has one result per item, in order, ' +
          'a `messageId` or the error body. A batch with no valid item is 400.',
        security: [{ apiKey: [] }],
        body: BatchBody,
        response: {
          202: BatchAccepted,
          ...errorResponses(
            'VALIDATION_ERROR',
            'API_KEY_MISSING',
            'API_KEY_INVALID',
            'API_KEY_NOT_ACTIVE',
            'IDEMPOTENCY_REQUEST_IN_PROGRESS',
            'PAYLOAD_TOO_LARGE',
            'UNSUPPORTED_MEDIA_TYPE',
            'IDEMPOTENCY_KEY_REUSED',
            'RATE_LIMITED',
            'QUOTA_EXCEEDED',
            'SERVICE_UNAVAILABLE',
          ),
        },
      },
    },
    async (request, reply) => {
      const batchId = randomUUID()
      const now = clock()
      const { scopes } = request.apiKey
      const results: BatchItemResult[] = []
      const accepted: AcceptedMessage[] = []
      request.body.messages.forEach((item, index) => {
        const field = `body.messages[${index}]`
        try {
          const { type, ...body } = item as { type?: unknown }
          if (!isType(type)) {
            throw new AppError('VALIDATION_ERROR', `${field}.type must be one of "text", "template", "image"`)
          }
          const check = CHECKS[type]
          const scope = SEND_SCOPE[type]
          if (!check(item))
            throw new AppError('VALIDATION_ERROR', describeValidationError(field, check.errors?.[0]))
          if (!scopes.includes(scope)) {
            throw new AppError('INSUFFICIENT_SCOPE', `The API key lacks the "${scope}" scope for ${field}`)
          }
          const message = acceptMessage(
            {
              type,
              body: body as AcceptedMessage['job']['message']['body'],
              apiKey: request.apiKey,
              now,
              batchId,
              field,
            },
            config,
          )
          accepted.push(message)
          results.push({ index, messageId: message.job.messageId, status: message.status })
        } catch (error) {
          if (!(error instanceof AppError)) throw error
          results.push({ index, error: failure(error) })
        }
      })
      if (accepted.length === 0) {
        const first = results[0] && 'error' in results[0] ? results[0].error.message : 'no item'
        throw new AppError('VALIDATION_ERROR', `No item of the batch is valid; the first: ${first}`)
      }

      await app.spendMessageRate(request, accepted.length)
      try {
        await Promise.all(accepted.map(({ job, delayMs }) => messages.add(job, delayMs)))
      } catch (error) {
        request.log.error({ err: error, batchId }, 'could not enqueue batch')
        throw unavailable('accept messages')
      }
      const scheduled: MessageJob[] = accepted.filter((m) => m.status === 'scheduled').map((m) => m.job)
      if (scheduled.length > 0) {
        await recordScheduledMessages(db, scheduled).catch((error) =>
          request.log.warn({ err: error, batchId }, 'scheduled messages not listed until due'),
        )
      }
      app.metrics?.acceptedBatch(accepted.map(({ job }) => job.message.type))
      const rejected = results.length - accepted.length
      request.log.info({ batchId, accepted: accepted.length, rejected }, 'message batch accepted')
      return reply.code(202).send({ batchId, accepted: accepted.length, rejected, results })
    },
  )
}
