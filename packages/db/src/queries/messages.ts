import type { MessageError, MessageJob, MessagePricing } from '@dispatch/contracts'
import { DEFAULT_SENDER_ID, redactAfter, redactPayload } from '@dispatch/contracts'
import { and, eq, inArray, lt, sql } from 'drizzle-orm'
import type { Db } from '../client.ts'
import { type MessageRow, messages } from '../schema/messages.ts'
import { rememberRecipientPair } from './inbound-messages.ts'

export async function findMessageById(db: Db, id: string): Promise<MessageRow | undefined> {
  const [row] = await db.select().from(messages).where(eq(messages.id, id)).limit(1)
  return row
}

export type PlatformStatus = 'sent' | 'delivered' | 'read' | 'failed'

export interface PlatformStatusUpdate {
  platformMessageId: string
  status: PlatformStatus
  at: Date
  error?: MessageError
  /** The status's `pricing`, when it carried a readable one. */
  pricing?: MessagePricing
  /**
   * Who the status names (`recipient_id`, `recipient_user_id`), when it names anyone: fills in the
   * message's phone or BSUID where it has none, and remembers the pair when both are known.
   */
  recipient?: { phone: string | null; userId: string | null }
}

/**
 * Applies a status the platform reported, only forward: the enum is declared in order of progress,
 * so `status < new` refuses a late `delivered` after `read`. Returns whether a message moved.
 * A status that names the user fills in the message's missing phone or BSUID in the same update (so
 * its event carries both) and remembers the pair, so a reply naming either finds the conversation.
 */
export async function applyPlatformStatus(db: Db, update: PlatformStatusUpdate): Promise<boolean> {
  const { status, recipient } = update
  const at = sql`${update.at.toISOString()}::timestamptz`
  const rows = await db
    .update(messages)
    .set({
      status,
      updatedAt: sql`now()`,
      ...(recipient?.phone ? { phone: sql`coalesce(${messages.phone}, ${recipient.phone})` } : {}),
      ...(recipient?.userId ? { userId: sql`coalesce(${messages.userId}, ${recipient.userId})` } : {}),
      ...(status === 'sent' ? { sentAt: sql`coalesce(${messages.sentAt}, ${at})` } : {}),
      ...(status === 'delivered' || status === 'read'
        ? { deliveredAt: sql`coalesce(${messages.deliveredAt}, ${at})` }
        : {}),
      ...(status === 'read' ? { readAt: update.at } : {}),
      ...(status === 'failed'
        ? {
            failedAt: at,
            lastErrorCode: update.error?.code ?? null,
            lastErrorMessage: update.error?.message ?? null,
          }
        : {}),
    })
    .where(and(eq(messages.platformMessageId, update.platformMessageId), lt(messages.status, status)))
    .returning({ id: messages.id, phone: messages.phone, userId: messages.userId })
  const [moved] = rows
  // A send names one of the two, so a message holding both got the other from a status.
  if (moved?.phone && moved.userId && recipient) {
    await rememberRecipientPair(db, { phone: moved.phone, userId: moved.userId }, update.at)
  }
  return rows.length > 0
}

/**
 * The record of a message scheduled for later, written by the API when it accepts it, so it is
 * listed (and cancelable in Postgres) before it is due. The worker's record fills in the rest.
 */
export async function recordScheduledMessage(db: Db, job: MessageJob): Promise<void> {
  await recordScheduledMessages(db, [job])
}

/** The records of many scheduled messages (a batch's), in one statement. */
export async function recordScheduledMessages(db: Db, jobs: MessageJob[]): Promise<void> {
  if (jobs.length === 0) return
  await db
    .insert(messages)
    .values(
      jobs.map((job) => ({
        id: job.messageId,
        apiKeyId: job.apiKeyId,
        type: job.message.type,
        phone: job.message.body.phone ?? null,
        userId: job.message.body.userId ?? null,
        payload: job.discardContent ? redactPayload(job.message.type, job.message.body) : job.message.body,
        redactedAt: job.discardContent ? new Date(job.acceptedAt) : null,
        redactAfter: redactAfter(job.acceptedAt, job.contentRetentionHours),
        clientReference: job.clientReference ?? null,
        batchId: job.batchId ?? null,
        senderId: job.senderId ?? DEFAULT_SENDER_ID,
        status: 'scheduled' as const,
        acceptedAt: new Date(job.acceptedAt),
        sendAt: job.sendAt ? new Date(job.sendAt) : null,
        heldForQuietHours: job.scheduledReason === 'quiet_hours',
        expiresAt: job.expiresAt ? new Date(job.expiresAt) : null,
        updatedAt: new Date(job.acceptedAt),
      })),
    )
    .onConflictDoNothing()
}

/** Marks a message canceled if it is still `scheduled` or `queued`; answers whether it moved. */
export async function markMessageCanceled(db: Db, id: string, at: Date): Promise<boolean> {
  const rows = await db
    .update(messages)
    .set({ status: 'canceled', canceledAt: at, updatedAt: at })
    .where(and(eq(messages.id, id), inArray(messages.status, ['scheduled', 'queued'])))
    .returning({ id: messages.id })
  return rows.length > 0
}
