import { MessageIdParams, type MessageJob, MessageView } from '@dispatch/contracts'
import { findMessageById, isUuid } from '@dispatch/db'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { Job } from 'bullmq'
import { AppError, unavailable } from '../../errors.ts'
import { toMessageView } from '../../views.ts'
import { errorResponses } from '../responses.ts'
import type { MessageRouteOptions } from './send.ts'

/** Before the worker's record lands, the queue knows the message: its state is the status. */
function viewFromJob(job: Job<MessageJob>, state: string): MessageView {
  const { data } = job
  const status =
    state === 'completed'
      ? 'sent'
      : state === 'failed'
        ? 'failed'
        : state === 'active' || job.attemptsMade > 0
          ? 'sending'
          : 'queued'
  const result = job.returnvalue as { platformMessageId?: string } | null | undefined
  const updatedAt = job.finishedOn ?? job.processedOn ?? job.timestamp
  return {
    messageId: data.messageId,
    type: data.message.type,
    phone: data.message.body.phone,
    status,
    clientReference: data.clientReference ?? null,
    // attemptsMade counts failed attempts; a completed job also made the one that succeeded.
    attempts: job.attemptsMade + (state === 'completed' ? 1 : 0),
    platformMessageId: result?.platformMessageId ?? null,
    lastError: job.failedReason ? { code: 'DELIVERY_FAILED', message: job.failedReason } : null,
    createdAt: data.acceptedAt,
    updatedAt: new Date(updatedAt).toISOString(),
  }
}

export const messageStatusRoutes: FastifyPluginAsyncTypebox<MessageRouteOptions> = async (app, options) => {
  const { db, messageQueue } = app.deps
  const notFound = () => new AppError('NOT_FOUND', 'Message not found')

  app.get(
    '/:messageId',
    {
      onRequest: app.requireApiKey('read:messages'),
      schema: {
        operationId: 'getMessage',
        hide: options.hide,
        tags: ['messages'],
        summary: 'A message and its delivery status',
        description: 'Requires the `read:messages` scope. A key sees only the messages it sent.',
        security: [{ apiKey: [] }],
        params: MessageIdParams,
        response: {
          200: MessageView,
          ...errorResponses(
            'API_KEY_MISSING',
            'API_KEY_INVALID',
            'API_KEY_NOT_ACTIVE',
            'INSUFFICIENT_SCOPE',
            'NOT_FOUND',
          ),
        },
      },
    },
    async (request) => {
      const { messageId } = request.params
      if (!isUuid(messageId)) throw notFound()
      const row = await findMessageById(db, messageId.toLowerCase())
      if (row) {
        if (row.apiKeyId !== request.apiKey.id) throw notFound()
        return toMessageView(row)
      }
      let job: Job<MessageJob> | undefined
      let state: string
      try {
        job = await messageQueue.getJob(messageId.toLowerCase())
        state = job ? await job.getState() : 'unknown'
      } catch (error) {
        request.log.error({ err: error }, 'message lookup in the queue failed')
        throw unavailable('look up this message')
      }
      if (!job || job.data.apiKeyId !== request.apiKey.id) throw notFound()
      // A finished job's record was written before it finished: it was only just too late above.
      if (state === 'completed' || state === 'failed') {
        const recorded = await findMessageById(db, job.data.messageId)
        if (recorded) return toMessageView(recorded)
      }
      return viewFromJob(job, state)
    },
  )
}
