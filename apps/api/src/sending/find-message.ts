import { DEFAULT_SENDER_ID, type MessageView } from '@dispatch/contracts'
import { isUuid, type MessageRow, owned } from '@dispatch/db'
import { type MessageClaim, messageClaimKey } from '@dispatch/runtime/message-handoff'
import type { FastifyBaseLogger } from 'fastify'
import type { ApiDeps } from '../deps.ts'
import { AppError, unavailable } from '../errors.ts'
import type { QueuedJob, QueuedMessage } from './message-store.ts'

export const messageNotFound = () => new AppError('NOT_FOUND', 'Message not found')

/** Where a message is known: its record, or (before the worker wrote one) Redis. */
export type FoundMessage = { row: MessageRow } | (QueuedMessage & { claim: MessageClaim | null })

/**
 * A key's own message, by id: the record first, else the queue's job with its state and who holds
 * its claim. Another key's message, an unknown id and a malformed one are all `404`.
 */
export async function findOwnMessage(
  deps: Pick<ApiDeps, 'db' | 'messages' | 'redis' | 'config'>,
  apiKey: { id: string; senderId: string | null; tenantId?: string | null },
  rawId: string,
  log: FastifyBaseLogger,
  /** Other senders its messages may wait on: the members of the key's sender pool (`poolSendersOf`). */
  others: readonly string[] = [],
): Promise<FoundMessage> {
  const apiKeyId = apiKey.id
  if (!isUuid(rawId)) throw messageNotFound()
  const id = rawId.toLowerCase()
  // Records through the owned layer: another key's message is never read here.
  const mine = owned(deps.db, {
    apiKeyId,
    tenantId: apiKey.tenantId ?? null,
    senderId: apiKey.senderId ?? DEFAULT_SENDER_ID,
  }).messages
  const row = await mine.find(id)
  if (row) return { row: await heldUntil(deps, row) }
  // Looked for on the key's sender: a message queued before the key was bound to another waits
  // on the old one, and is known here once its record is written.
  let found: QueuedMessage | undefined
  let claim: string | null = null
  try {
    const own = apiKey.senderId ?? DEFAULT_SENDER_ID
    found = await deps.messages.find(own, id)
    // A pooled key's message waits on the number chosen for it.
    for (const senderId of others) {
      if (found) break
      if (senderId !== own) found = await deps.messages.find(senderId, id)
    }
    if (found) claim = await deps.redis.get(messageClaimKey(deps.config.QUEUE_PREFIX, id))
  } catch (error) {
    log.error({ err: error }, 'message lookup in the queue failed')
    throw unavailable('look up this message')
  }
  if (!found) {
    // Recorded since the first look, and gone from Redis meanwhile (a finished bundle's message,
    // its sent-log entry dropped once written): Postgres has it now.
    const recorded = await mine.find(id)
    if (recorded) return { row: recorded }
    throw messageNotFound()
  }
  if (found.job.data.apiKeyId !== apiKeyId) throw messageNotFound()
  // A finished job's record was written before it finished, or (a sent one: its sender's sent log)
  // a moment after: look once more, else answer from the job.
  if (found.state === 'completed' || found.state === 'failed') {
    const recorded = await mine.find(id)
    if (recorded) return { row: recorded }
  }
  // Held by a job: `worker` (a message's own job) or a bundle's id (message-bundles.ts).
  return { ...found, claim: claim === null ? null : claim === 'cancel' ? 'cancel' : 'worker' }
}

/**
 * A message held for the messaging limit: its record keeps the first hold's time, its job the
 * current one (held again when others took the room): read from the job while it waits. Redis
 * unreadable, or the job gone: the record's.
 */
async function heldUntil(deps: Pick<ApiDeps, 'messages'>, row: MessageRow): Promise<MessageRow> {
  if (row.status !== 'scheduled' || row.scheduledReason !== 'messaging_limit') return row
  const found = await deps.messages.find(row.senderId ?? DEFAULT_SENDER_ID, row.id).catch(() => undefined)
  const sendAt = found?.job.data.scheduledReason === 'messaging_limit' ? found.job.data.sendAt : undefined
  return sendAt ? { ...row, sendAt: new Date(sendAt) } : row
}

type JobOutcome = { platformMessageId?: string; outcome?: 'expired' | 'canceled' } | null | undefined

/** Before the worker's record lands, Redis knows the message: its state is the status. */
export function viewFromJob(job: QueuedJob, state: string, claim: MessageClaim | null): MessageView {
  const { data } = job
  const result = job.returnvalue as JobOutcome
  const status: MessageView['status'] =
    state === 'completed'
      ? // A sent message's record lands a moment after its job completes (the sender's sent log):
        // it is `sent` once recorded, so `sent` here always means the lists and replies know it.
        (result?.outcome ?? 'sending')
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
    phone: data.message.body.phone ?? null,
    userId: data.message.body.userId ?? null,
    status,
    clientReference: data.clientReference ?? null,
    // BullMQ counts the attempt a job completed with too: a sent message made it, a canceled or
    // expired one did not.
    attempts:
      (data.priorAttempts ?? 0) +
      (state === 'completed' && result?.outcome ? Math.max(0, job.attemptsMade - 1) : job.attemptsMade),
    platformMessageId: result?.platformMessageId ?? null,
    lastError: job.failedReason ? { code: 'DELIVERY_FAILED', message: job.failedReason } : null,
    batchId: data.batchId ?? null,
    sendAt: data.sendAt ?? null,
    scheduledReason: data.scheduledReason ?? (data.sendAt ? 'send_at' : null),
    expiresAt: data.expiresAt ?? null,
    senderId: data.senderId ?? DEFAULT_SENDER_ID,
    senderPhoneNumberId: null,
    fallbackUsed: (result as { fallbackUsed?: boolean } | undefined)?.fallbackUsed === true,
    pricing: null,
    // Moved off a pool's fallen number: its job says so until its record does.
    ...(data.senderChanged ? { senderChanged: data.senderChanged } : {}),
    // Its record will be redacted from the start: say so already while only the queue holds it.
    ...(data.discardContent ? { redacted: true as const } : {}),
    createdAt: data.acceptedAt,
    updatedAt: new Date(updatedAt).toISOString(),
  }
}

/** The senders a key's messages may wait on besides its own: its sender pool's members (none unpooled). */
/**
 * The message a key's route names (`:messageId`), found as `findOwnMessage` finds it: on the key's
 * own sender or, for a pooled key, on any member of its pool.
 */
export function findRequestedMessage(
  app: {
    deps: Parameters<typeof findOwnMessage>[0]
    sending: { pools: Parameters<typeof poolSendersOf>[0] }
  },
  request: {
    apiKey: Parameters<typeof findOwnMessage>[1] & Parameters<typeof poolSendersOf>[1]
    params: { messageId: string }
    log: FastifyBaseLogger
  },
): Promise<FoundMessage> {
  const { apiKey } = request
  return findOwnMessage(
    app.deps,
    apiKey,
    request.params.messageId,
    request.log,
    poolSendersOf(app.sending.pools, apiKey),
  )
}

const poolSendersOf = (
  pools: { get(poolId: string): { members: ReadonlyArray<{ senderId: string }> } | undefined },
  apiKey: { senderPoolId?: string | null },
): string[] =>
  apiKey.senderPoolId ? (pools.get(apiKey.senderPoolId)?.members.map((m) => m.senderId) ?? []) : []
