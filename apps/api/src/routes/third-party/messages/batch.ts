import { randomUUID } from 'node:crypto'
import { BatchAccepted, BatchBody, type BatchItemResult, type MessageJob } from '@dispatch/contracts'
import { owned } from '@dispatch/db'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { AppError, errorBody, unavailable } from '../../../errors.ts'
import type { StoreOutcome } from '../../../message-store.ts'
import { SCOPE_IN_ROUTE } from '../../authenticate.ts'
import { errorResponses } from '../../responses.ts'
import { callerOf } from '../tenancy.ts'
import { type AcceptedMessage, outstandingLimitReached, scheduledFields } from './accept.ts'
import { judgeItems } from './judge.ts'
import type { MessageRouteOptions } from './send.ts'

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
      config: { scope: SCOPE_IN_ROUTE },
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
            'OUTSTANDING_LIMIT_REACHED',
            'SERVICE_UNAVAILABLE',
          ),
        },
      },
    },
    async (request, reply) => {
      const batchId = randomUUID()
      const now = clock()
      // Each item on its own: its shape and scope first, then every rule a single send meets.
      const judged = await judgeItems(
        app,
        request.apiKey,
        request.body.messages,
        (index) => `body.messages[${index}]`,
        { now, batchId },
      )
      const results: BatchItemResult[] = []
      const accepted: AcceptedMessage[] = []
      judged.forEach((j, index) => {
        if ('error' in j) {
          results.push({ index, error: failure(j.error) })
          return
        }
        accepted.push(j.accepted)
        results.push({
          index,
          messageId: j.accepted.job.messageId,
          status: j.accepted.status,
          ...scheduledFields(j.accepted.job),
        })
      })
      if (accepted.length === 0) {
        const first = results[0] && 'error' in results[0] ? results[0].error.message : 'no item'
        throw new AppError('VALIDATION_ERROR', `No item of the batch is valid; the first: ${first}`)
      }

      await app.spendMessageRate(request, accepted.length)
      let outcomes: StoreOutcome[]
      try {
        outcomes = await Promise.all(accepted.map(({ job, delayMs }) => messages.add(job, delayMs)))
      } catch (error) {
        request.log.error({ err: error, batchId }, 'could not enqueue batch')
        throw unavailable('accept messages')
      }
      // Items past the key's outstanding bound were not stored: each answered with its own error,
      // their quota given back; none stored at all is the request's 429.
      const refusedCount = outcomes.filter((outcome) => outcome === 'refused').length
      if (refusedCount > 0) {
        await app.returnMessageRate(request, refusedCount)
        if (refusedCount === accepted.length) throw outstandingLimitReached(config.MESSAGE_OUTSTANDING_MAX)
        const stored = accepted.filter((_, i) => outcomes[i] === 'stored')
        const refusedIds = new Set(
          accepted.filter((_, i) => outcomes[i] === 'refused').map((m) => m.job.messageId),
        )
        for (const [i, result] of results.entries()) {
          if ('messageId' in result && refusedIds.has(result.messageId)) {
            const field = `body.messages[${result.index}]`
            results[i] = {
              index: result.index,
              error: failure(outstandingLimitReached(config.MESSAGE_OUTSTANDING_MAX, field)),
            }
          }
        }
        accepted.splice(0, accepted.length, ...stored)
      }
      const scheduled: MessageJob[] = accepted.filter((m) => m.status === 'scheduled').map((m) => m.job)
      if (scheduled.length > 0) {
        await owned(db, callerOf(request))
          .messages.recordScheduled(scheduled)
          .catch((error) =>
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
