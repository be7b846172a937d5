import { randomUUID } from 'node:crypto'
import { BatchAccepted, BatchBody, type BatchItemResult, type MessageType } from '@dispatch/contracts'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { AppError, errorBody } from '../../../errors.ts'
import { errorResponses } from '../../../http/error-responses.ts'
import { scheduledFields } from '../../../sending/accept.ts'
import { answerEachItem, SEND_ITEM_SCOPES } from '../../../sending/judge.ts'
import { submit } from '../../../sending/submit.ts'
import { SCOPE_IN_ROUTE } from '../../authenticate.ts'
import type { MessageRouteOptions } from './send.ts'

const failure = (error: AppError) => errorBody(error.errorCode, error.statusCode, error.message)

/**
 * Many messages in one request: each item is checked on its own and answered in its own result;
 * the valid ones are stored together (one pipeline), count against the key's rate limit by
 * number, and share a `batchId`. `Idempotency-Key` covers the batch as a whole.
 */
export const batchMessageRoutes: FastifyPluginAsyncTypebox<MessageRouteOptions> = async (app, options) => {
  const { config } = app.deps
  const { sending } = app

  app.post(
    '/batch',
    {
      config: { scope: SCOPE_IN_ROUTE, scopesInRoute: SEND_ITEM_SCOPES },
      preHandler: app.idempotency.claim,
      onSend: app.idempotency.remember,
      bodyLimit: config.BATCH_BODY_LIMIT_BYTES,
      schema: {
        operationId: 'sendMessageBatch',
        hide: options.hide,
        tags: ['messages'],
        summary: 'Send up to 1,000 messages in one request',
        description:
          'Each item is `{type, ...the body of that send}` (`type`: any send kind: `text`, `template`, `image`, ' +
          '`document`, `video`, `audio`, `sticker`, `location`, `contacts`, `interactive`, `reaction`) and needs the ' +
          'scope of its type. Items are judged one by one: the answer has one result per item, in order, ' +
          'a `messageId` or the error body (`TEMPLATE_NOT_FOUND`, `OUTSIDE_SERVICE_WINDOW`… with their own code). ' +
          'A batch with no valid item is 400.',
        body: BatchBody,
        response: {
          202: BatchAccepted,
          ...errorResponses(
            'VALIDATION_ERROR',
            'IDEMPOTENCY_REQUEST_IN_PROGRESS',
            'PAYLOAD_TOO_LARGE',
            'UNSUPPORTED_MEDIA_TYPE',
            'IDEMPOTENCY_KEY_REUSED',
            'RATE_LIMITED',
            'QUOTA_EXCEEDED',
            'OUTSTANDING_LIMIT_REACHED',
            'SERVICE_UNAVAILABLE',
          ),
        },
      },
    },
    async (request, reply) => {
      const batchId = randomUUID()
      // Each item on its own: its shape and scope first, then every rule a single send meets; the
      // valid ones counted against the key's rate and stored.
      const submitted = await answerEachItem(
        request.body.messages,
        (index) => `body.messages[${index}]`,
        request.apiKey.scopes,
        (sends) =>
          submit(sending, request.apiKey, sends, {
            batchId,
            rate: {
              spend: (count) => app.spendMessageRate(request, count),
              giveBack: (count) => app.returnMessageRate(request, count),
            },
            log: request.log,
          }),
      )
      const stored: MessageType[] = []
      const results: BatchItemResult[] = submitted.map((answer, index) => {
        if ('error' in answer) return { index, error: failure(answer.error) }
        const { job, status } = answer.accepted
        stored.push(job.message.type)
        return { index, messageId: job.messageId, status, ...scheduledFields(job) }
      })
      if (stored.length === 0) {
        const first = results[0] && 'error' in results[0] ? results[0].error.message : 'no item'
        throw new AppError('VALIDATION_ERROR', `No item of the batch is valid; the first: ${first}`)
      }
      app.metrics?.acceptedBatch(stored)
      const rejected = results.length - stored.length
      request.log.info({ batchId, accepted: stored.length, rejected }, 'message batch accepted')
      return reply.code(202).send({ batchId, accepted: stored.length, rejected, results })
    },
  )
}
