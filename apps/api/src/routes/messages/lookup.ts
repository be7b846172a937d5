import {
  DEFAULT_SENDER_ID,
  type MessageClaim,
  type MessageJob,
  type MessageView,
  messageClaimKey,
} from '@dispatch/contracts'
import { findMessageById, isUuid, type MessageRow } from '@dispatch/db'
import type { Job } from 'bullmq'
import type { FastifyBaseLogger } from 'fastify'
import type { ApiDeps } from '../../deps.ts'
import { AppError, unavailable } from '../../errors.ts'

export const messageNotFound = () => new AppError('NOT_FOUND', 'Message not found')

/** Where a message is known: its record, or (before the worker wrote one) its queue job. */
export type FoundMessage =
  | { row: MessageRow }
  | { job: Job<MessageJob>; state: string; claim: MessageClaim | null }

/**
 * A key's own message, by id: the record first, else the queue's job with its state and who holds
 * its claim. Another key's message, an unknown id and a malformed one are all `404`.
 */
export async function findOwnMessage(
  deps: Pick<ApiDeps, 'db' | 'messageQueue' | 'redis' | 'config'>,
  apiKeyId: string,
  rawId: string,
  log: FastifyBaseLogger,
): Promise<FoundMessage> {
  if (!isUuid(rawId)) throw messageNotFound()
  const id = rawId.toLowerCase()
  const row = await findMessageById(deps.db, id)
  if (row) {
    if (row.apiKeyId !== apiKeyId) throw messageNotFound()
    return { row }
  }
  let job: Job<MessageJob> | undefined
  let state: string
  let claim: string | null = null
  try {
    job = await deps.messageQueue.getJob(id)
    state = job ? await job.getState() : 'unknown'
    if (job) claim = await deps.redis.get(messageClaimKey(deps.config.QUEUE_PREFIX, id))
  } catch (error) {
    log.error({ err: error }, 'message lookup in the queue failed')
    throw unavailable('look up this message')
  }
  if (!job || job.data.apiKeyId !== apiKeyId) throw messageNotFound()
  // A finished job's record was written before it finished: it was only just too late above.
  if (state === 'completed' || state === 'failed') {
    const recorded = await findMessageById(deps.db, id)
    if (recorded) return { row: recorded }
  }
  return { job, state, claim: claim === 'worker' || claim === 'cancel' ? claim : null }
}

type JobOutcome = { platformMessageId?: string; outcome?: 'expired' | 'canceled' } | null | undefined

/** Before the worker's record lands, the queue knows the message: its state is the status. */
export function viewFromJob(job: Job<MessageJob>, state: string, claim: MessageClaim | null): MessageView {
  const { data } = job
  const result = job.returnvalue as JobOutcome
  const status: MessageView['status'] =
    state === 'completed'
      ? (result?.outcome ?? 'sent')
      : state === 'failed'
        ? 'failed'
        : claim === 'cancel'
          ? 'canceled'
          : state === 'active' || job.attemptsMade > 0
            ? 'sending'
            : state === 'delayed' && data.sendAt
              ? 'scheduled'
              : 'queued'
  const updatedAt = job.finishedOn ?? job.processedOn ?? job.timestamp
  return {
    messageId: data.messageId,
    type: data.message.type,
    phone: data.message.body.phone,
    status,
    clientReference: data.clientReference ?? null,
    // attemptsMade counts failed attempts; a completed job also made the one that succeeded.
    attempts: job.attemptsMade + (state === 'completed' && status === 'sent' ? 1 : 0),
    platformMessageId: result?.platformMessageId ?? null,
    lastError: job.failedReason ? { code: 'DELIVERY_FAILED', message: job.failedReason } : null,
    batchId: data.batchId ?? null,
    sendAt: data.sendAt ?? null,
    expiresAt: data.expiresAt ?? null,
    senderId: data.senderId ?? DEFAULT_SENDER_ID,
    senderPhoneNumberId: null,
    createdAt: data.acceptedAt,
    updatedAt: new Date(updatedAt).toISOString(),
  }
}
