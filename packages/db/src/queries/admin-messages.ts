import {
  type AcceptedWindow,
  type AdminMessageListQuery,
  DEFAULT_SENDER_ID,
  type RetryMessagesBody,
} from '@dispatch/contracts'
import { and, asc, eq, inArray, isNull, or, type SQL, sql } from 'drizzle-orm'
import type { Db } from '../client.ts'
import { adminAuditLog } from '../schema/admin-audit-log.ts'
import { type MessageRow, messages } from '../schema/messages.ts'
import { whereAll } from './list-helpers.ts'
import { messageWithId } from './message-ids.ts'
import { fallbackSource, listMatchingMessages, messageFilters, narrowedByKeyAlone } from './message-list.ts'

type AdminFilters = Omit<RetryMessagesBody, 'limit'>
type Tx = Parameters<Parameters<Db['transaction']>[0]>[0]

/** The key list's filters, and the admins' own: the key, the sender, the last error code. */
function adminFilters(query: AdminFilters & { deleted?: 'true' | 'false' }, window: AcceptedWindow): SQL[] {
  const filters: (SQL | undefined)[] = [
    ...messageFilters(query, window),
    query.apiKeyId ? eq(messages.apiKeyId, query.apiKeyId.toLowerCase()) : undefined,
    // Messages recorded before senders existed have none: they went out through the default one.
    query.senderId === DEFAULT_SENDER_ID
      ? or(eq(messages.senderId, DEFAULT_SENDER_ID), isNull(messages.senderId))
      : query.senderId
        ? eq(messages.senderId, query.senderId)
        : undefined,
    query.errorCode ? eq(messages.lastErrorCode, query.errorCode) : undefined,
  ]
  return filters.filter((f) => f !== undefined)
}

/**
 * Every key's messages, as the key's own list pages, orders and counts them. Across keys, the
 * acceptance time (`messages_accepted_at_idx`) and the failed messages' partial index carry the
 * usual shapes; a filter on a key reads that key's indexes as its own list does.
 */
export function listAdminMessages(db: Db, query: AdminMessageListQuery, window: AcceptedWindow = {}) {
  return listMatchingMessages(db, adminFilters(query, window), query, {
    byKey: Boolean(query.apiKeyId) && narrowedByKeyAlone(query),
    fallbacks: fallbackSource(query, query.apiKeyId?.toLowerCase()),
  })
}

/** What a retry needs besides the messages: who, when, and until when the message may go out. */
export interface RetryRequest {
  actor: string
  now: Date
  expiresAt: Date
}

/** The Redis side of a retry, run inside its transaction: a throw rolls the retry back. */
export interface RetryHooks {
  /**
   * Frees each message in Redis (its old job, so the same id can be queued again). Answers the ids
   * that may go out again: a job still held by a worker cannot be removed, and stays `failed`.
   */
  release(rows: MessageRow[]): Promise<Set<string>>
  /** Stores them again for delivery, after their records moved back to `queued`. */
  requeue(rows: MessageRow[]): Promise<void>
}

export type RetryOutcome =
  | { outcome: 'retried'; row: MessageRow }
  | { outcome: 'not_found' }
  | { outcome: 'not_failed'; status: MessageRow['status'] }
  | { outcome: 'skipped' }

/**
 * The one sanctioned move backwards in the status order: `failed` → `queued`, for an admin's retry
 * only, never through the worker's forward-only upsert. In one transaction, for each message still
 * `failed` (locked, so two retries of one message cannot both win): the record goes back to
 * `queued` with its attempts kept, its retry counted, a fresh validity, and the platform id and times
 * of the failed try cleared (they are in the audit row); an audit row per message; then the hooks
 * move it in Redis before the commit. No webhook event is emitted for the move (the triggers report
 * `queued` for nothing); the next outcome is the next event, with the next sequence number.
 */
async function retryLocked(
  db: Db,
  pick: (tx: Tx) => Promise<MessageRow[]>,
  request: RetryRequest,
  hooks: RetryHooks,
  bulk: boolean,
): Promise<MessageRow[]> {
  return db.transaction(async (tx) => {
    const candidates = await pick(tx)
    if (candidates.length === 0) return []
    const released = await hooks.release(candidates)
    const ids = candidates.filter((row) => released.has(row.id)).map((row) => row.id)
    if (ids.length === 0) return []
    const rows = await tx
      .update(messages)
      .set({
        status: 'queued',
        retryCount: sql`${messages.retryCount} + 1`,
        retriedAt: request.now,
        expiresAt: request.expiresAt,
        platformMessageId: null,
        sentAt: null,
        deliveredAt: null,
        readAt: null,
        failedAt: null,
        updatedAt: request.now,
      })
      .where(and(inArray(messages.id, ids), eq(messages.status, 'failed')))
      .returning()
    const before = new Map(candidates.map((row) => [row.id, row]))
    await tx.insert(adminAuditLog).values(
      rows.map((row) => {
        const old = before.get(row.id) as MessageRow
        return {
          actor: request.actor,
          action: 'message.retry',
          targetType: 'message',
          targetId: row.id,
          details: {
            bulk,
            from: 'failed',
            to: 'queued',
            apiKeyId: row.apiKeyId,
            attempts: old.attempts,
            lastErrorCode: old.lastErrorCode,
            lastErrorMessage: old.lastErrorMessage,
            failedAt: old.failedAt?.toISOString() ?? null,
            platformMessageId: old.platformMessageId,
            retryCount: row.retryCount,
            expiresAt: request.expiresAt.toISOString(),
          },
          createdAt: request.now,
        }
      }),
    )
    await hooks.requeue(rows)
    return rows
  })
}

/** Retries one failed message (`POST /api/admin/messages/:id/retry`). */
export async function retryFailedMessage(
  db: Db,
  id: string,
  request: RetryRequest,
  hooks: RetryHooks,
): Promise<RetryOutcome> {
  const [row] = await retryLocked(
    db,
    (tx) =>
      tx
        .select()
        .from(messages)
        .where(and(messageWithId(id), eq(messages.status, 'failed')))
        .for('update'),
    request,
    hooks,
    false,
  )
  if (row) return { outcome: 'retried', row }
  const [current] = await db.select({ status: messages.status }).from(messages).where(messageWithId(id))
  if (!current) return { outcome: 'not_found' }
  return current.status === 'failed'
    ? { outcome: 'skipped' }
    : { outcome: 'not_failed', status: current.status }
}

/**
 * Retries up to `limit` failed messages matching the filters, oldest accepted first
 * (`POST /api/admin/messages/retry`). Messages another retry holds right now are skipped, not
 * waited for.
 */
export function retryFailedMessages(
  db: Db,
  filters: RetryMessagesBody,
  window: AcceptedWindow,
  request: RetryRequest,
  hooks: RetryHooks,
): Promise<MessageRow[]> {
  return retryLocked(
    db,
    (tx) =>
      tx
        .select()
        .from(messages)
        .where(whereAll([...adminFilters(filters, window), eq(messages.status, 'failed')]))
        .orderBy(asc(messages.acceptedAt), asc(messages.id))
        .limit(filters.limit)
        .for('update', { skipLocked: true }),
    request,
    hooks,
    true,
  )
}

/**
 * An admin's cancel of a message not yet taken (`POST /api/admin/messages/:id/cancel`): its record
 * marked `canceled` and the audit row (`message.cancel`, the admin as actor), in one transaction.
 * Undefined when the record is no longer `scheduled` or `queued`.
 */
export function cancelMessageByAdmin(
  db: Db,
  id: string,
  request: { actor: string; now: Date },
): Promise<MessageRow | undefined> {
  return db.transaction(async (tx) => {
    const [old] = await tx
      .select()
      .from(messages)
      .where(and(messageWithId(id), inArray(messages.status, ['scheduled', 'queued'])))
      .for('update')
    if (!old) return undefined
    const [row] = await tx
      .update(messages)
      .set({ status: 'canceled', canceledAt: request.now, updatedAt: request.now })
      .where(messageWithId(id))
      .returning()
    await tx.insert(adminAuditLog).values({
      actor: request.actor,
      action: 'message.cancel',
      targetType: 'message',
      targetId: old.id,
      details: {
        from: old.status,
        to: 'canceled',
        apiKeyId: old.apiKeyId,
        sendAt: old.sendAt?.toISOString() ?? null,
        scheduledReason: old.scheduledReason,
      },
      createdAt: request.now,
    })
    return row
  })
}
