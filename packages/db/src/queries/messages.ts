import {
  DEFAULT_SENDER_ID,
  type MessageError,
  type MessageJob,
  type MessagePricing,
  redactAfter,
  redactPayload,
} from '@dispatch/contracts'
import { and, eq, inArray, isNull, lt, or, type SQL, sql } from 'drizzle-orm'
import type { Db } from '../client.ts'
import { writingToPeriods } from '../partitions.ts'
import { type MessageRow, messages } from '../schema/messages.ts'
import { rememberRecipientPair } from './inbound-messages.ts'
import { messageWithId, messageWithPlatformId, platformIdIs } from './message-ids.ts'
import { type MessagesTable, onPartitionOf } from './message-partitions.ts'

export async function findMessageById(db: Db, id: string): Promise<MessageRow | undefined> {
  const [row] = await onPartitionOf(
    db,
    id,
    (day) => db.select().from(day).where(eq(day.id, id)).limit(1),
    () => db.select().from(messages).where(messageWithId(id)).limit(1),
  )
  return row
}

export type PlatformStatus = 'sent' | 'delivered' | 'read' | 'failed'

export interface PlatformStatusUpdate {
  platformMessageId: string
  /** Our id for it, as the status echoed it (`biz_opaque_callback_data`): narrows the search to its day. */
  messageId?: string
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
  return (await applyPlatformStatusTo(db, update)) !== undefined
}

/**
 * As applyPlatformStatus, answering the id of the message it moved (undefined: none moved).
 *
 * A `delivered` or `read` of a message already `failed` (WhatsApp's word after a 131026, say, whose
 * SMS fallback may have gone) moves nothing, as `failed` is final, but is recorded all the same in
 * the same statement: its `delivered_at` (and `read_at`), the first report's time, so the record
 * says both truthfully (docs/fallback.md, "WhatsApp's word after the fallback"). A duplicate finds
 * them set and writes nothing. `delivered_at` set is also what keeps a fallback not yet called from
 * going (fallback record: decided only while it is null, withdrawn at the call).
 */
export async function applyPlatformStatusTo(
  db: Db,
  update: PlatformStatusUpdate,
): Promise<string | undefined> {
  const { status, recipient } = update
  const at = sql`${update.at.toISOString()}::timestamptz`
  const reached = status === 'delivered' || status === 'read'
  const apply = (t: MessagesTable, found: SQL) =>
    db
      .update(t)
      .set({
        // Unchanged for a late report of a failed message: same status, so no status event.
        status: reached
          ? sql`case when ${t.status} < ${status}::message_status then ${status}::message_status else ${t.status} end`
          : status,
        updatedAt: sql`now()`,
        ...(recipient?.phone ? { phone: sql`coalesce(${t.phone}, ${recipient.phone})` } : {}),
        ...(recipient?.userId ? { userId: sql`coalesce(${t.userId}, ${recipient.userId})` } : {}),
        ...(status === 'sent' ? { sentAt: sql`coalesce(${t.sentAt}, ${at})` } : {}),
        ...(status === 'delivered' || status === 'read'
          ? { deliveredAt: sql`coalesce(${t.deliveredAt}, ${at})` }
          : {}),
        ...(status === 'read' ? { readAt: sql`coalesce(${t.readAt}, ${at})` } : {}),
        ...(status === 'failed'
          ? {
              failedAt: at,
              lastErrorCode: update.error?.code ?? null,
              lastErrorMessage: update.error?.message ?? null,
            }
          : {}),
      })
      .where(
        and(
          found,
          status === 'delivered' || status === 'read'
            ? or(lt(t.status, status), lateReport(t, status))
            : lt(t.status, status),
        ),
      )
      .returning({ id: t.id, status: t.status, phone: t.phone, userId: t.userId })
  const rows = await onPartitionOf(
    db,
    update.messageId,
    (day) => apply(day, platformIdIs(day, update.platformMessageId)),
    () => apply(messages, messageWithPlatformId(update.platformMessageId, update.messageId)),
  )
  const [written] = rows
  // A send names one of the two, so a message holding both got the other from a status.
  if (written?.phone && written.userId && recipient) {
    await rememberRecipientPair(db, { phone: written.phone, userId: written.userId }, update.at)
  }
  // A late report recorded beside `failed` moved nothing.
  return written?.status === status ? written.id : undefined
}

/** A `delivered` or `read` of a failed message not yet recorded (its first such report). */
const lateReport = (t: MessagesTable, status: 'delivered' | 'read') =>
  and(
    eq(t.status, 'failed'),
    status === 'read' ? or(isNull(t.deliveredAt), isNull(t.readAt)) : isNull(t.deliveredAt),
  )

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
  await writingToPeriods(db.$client, () => insertScheduled(db, jobs))
}

function insertScheduled(db: Db, jobs: MessageJob[]) {
  return db
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

/**
 * Marks a message canceled if it is still `scheduled` or `queued` (and, given `apiKeyId`, that key's);
 * answers whether it moved.
 */
export async function markMessageCanceled(db: Db, id: string, at: Date, apiKeyId?: string): Promise<boolean> {
  const rows = await db
    .update(messages)
    .set({ status: 'canceled', canceledAt: at, updatedAt: at })
    .where(
      and(
        messageWithId(id),
        inArray(messages.status, ['scheduled', 'queued']),
        apiKeyId === undefined ? undefined : eq(messages.apiKeyId, apiKeyId),
      ),
    )
    .returning({ id: messages.id })
  return rows.length > 0
}
