import { type MessageType, UNDELIVERABLE_CODE } from '@dispatch/contracts'
import { and, eq, gte, isNotNull, isNull, notExists, type SQL, sql } from 'drizzle-orm'
import type { Db, Sql } from '../client.ts'
import { writingToPeriods } from '../partitions.ts'
import { messageFallbacks } from '../schema/message-fallbacks.ts'
import { messages } from '../schema/messages.ts'
import { messageWithId } from './message-ids.ts'
import { isMissingTable, onPartitionOf, partitionAt } from './message-partitions.ts'
import { arrayLiteral } from './pg-arrays.ts'

/** What one delivery attempt leaves behind, written by the worker before the job is acknowledged. */
export interface DeliveryOutcome {
  id: string
  apiKeyId: string
  type: MessageType
  /** The recipient: its phone, its BSUID, or both. */
  phone: string | null
  userId: string | null
  /** The body as the job carries it, or without its content (`redactPayload`) when `redacted`. */
  payload: unknown
  /** Its content was never to be stored (`discardContent`): the record is redacted from the start. */
  redacted?: boolean
  /** When its content is due for redaction (its key's hours at acceptance); null: never. */
  redactAfter?: Date | null
  clientReference: string | null
  /** The business number it goes out from; kept from the first record. */
  senderPhoneNumberId: string
  /** The sender (`senders.id`) it goes out through. */
  senderId: string
  batchId: string | null
  acceptedAt: Date
  sendAt: Date | null
  /** `sendAt` is the end of the recipient's quiet hours. */
  heldForQuietHours?: boolean
  expiresAt: Date | null
  status: 'sending' | 'sent' | 'failed' | 'expired' | 'canceled'
  attempts: number
  platformMessageId: string | null
  lastErrorCode: string | null
  lastErrorMessage: string | null
  /** The window was closed, and the message's fallback template went out instead. */
  fallbackUsed?: boolean
  /**
   * A `sent` message's SMS fallback without `afterSeconds` (sent only on a 131026): kept with its
   * record for a status webhook to read (`findUndeliverableSms`). Never for a redacted record.
   */
  smsFallbackText?: string | null
  at: Date
}

/** A 131026's SMS as the message's record keeps it (`findUndeliverableSms`). */
export interface UndeliverableSms {
  to: string
  text: string
  acceptedAt: Date
  sentAt: Date
}

/**
 * The SMS of a message recorded `failed` with 131026 whose fallback has no `afterSeconds`, kept
 * with its sent record (`smsFallbackText`): while its content is kept (not redacted or erased), it
 * has a number, WhatsApp never reported it delivered, no fallback was decided for it yet, and it
 * was sent after `sentSince`. Else undefined: nothing to send.
 */
export async function findUndeliverableSms(
  db: Db,
  id: string,
  sentSince: Date,
): Promise<UndeliverableSms | undefined> {
  const read = (table: typeof messages, where: SQL) =>
    db
      .select({
        to: table.phone,
        text: table.smsFallbackText,
        acceptedAt: table.acceptedAt,
        sentAt: table.sentAt,
      })
      .from(table)
      .where(
        and(
          where,
          eq(table.status, 'failed'),
          eq(table.lastErrorCode, UNDELIVERABLE_CODE),
          isNotNull(table.smsFallbackText),
          isNotNull(table.phone),
          isNull(table.redactedAt),
          isNull(table.deliveredAt),
          gte(table.sentAt, sentSince),
          notExists(
            db.select({ one: sql`1` }).from(messageFallbacks).where(eq(messageFallbacks.messageId, table.id)),
          ),
        ),
      )
      .limit(1)
  const [row] = await onPartitionOf(
    db,
    id,
    (day) => read(day as unknown as typeof messages, eq(day.id, id)),
    () => read(messages, messageWithId(id)),
  )
  return row ? (row as UndeliverableSms) : undefined
}

/** The platform id already recorded for a message, if any: a job run again must not resend it. */
export async function findPlatformMessageId(db: Db, id: string): Promise<string | null> {
  return (await findRecordedDelivery(db, id))?.platformMessageId ?? null
}

/**
 * What the record says of a message's delivery, if it has one: its status and the platform id. A
 * job that may follow another reads it before sending (its claim may be gone: message-claims.ts).
 */
export async function findRecordedDelivery(
  db: Db,
  id: string,
): Promise<{ status: string; platformMessageId: string | null; lastErrorCode: string | null } | undefined> {
  const [row] = await onPartitionOf(
    db,
    id,
    (day) =>
      db
        .select({
          status: day.status,
          platformMessageId: day.platformMessageId,
          lastErrorCode: day.lastErrorCode,
        })
        .from(day)
        .where(eq(day.id, id))
        .limit(1),
    () =>
      db
        .select({
          status: messages.status,
          platformMessageId: messages.platformMessageId,
          lastErrorCode: messages.lastErrorCode,
        })
        .from(messages)
        .where(messageWithId(id))
        .limit(1),
  )
  return row
}

/**
 * Writes many outcomes in one statement, the rows passed as one array per column (`unnest`), so the
 * statement is the same whatever the batch size and is prepared once. The first outcome of a message
 * inserts its row; later ones update it, only forward: the status never moves back (a webhook may
 * already have said `delivered`), attempts never decrease, a recorded platform id is never replaced.
 */
export async function recordDeliveryOutcomes(
  sql: Sql,
  outcomes: DeliveryOutcome[],
  /**
   * Every outcome whose failed attempt goes on the timeline, when the caller kept only each
   * message's latest in `outcomes` (a retry's failure and its next attempt's, written together).
   */
  attempts: DeliveryOutcome[] = outcomes,
): Promise<void> {
  if (outcomes.length === 0) return
  // Into the period's partition when it has one (one table, not every one: see message-partitions.ts),
  // one statement per period, usually one; else, or when it was dropped meanwhile, through `messages`.
  const byPartition = new Map<string | null, DeliveryOutcome[]>()
  for (const outcome of outcomes) {
    const partition = await partitionAt(sql, outcome.acceptedAt.getTime())
    const group = byPartition.get(partition)
    if (group) group.push(outcome)
    else byPartition.set(partition, [outcome])
  }
  for (const [partition, group] of byPartition) {
    if (partition !== null) {
      try {
        await upsertOutcomes(sql, partition, group)
        continue
      } catch (error) {
        if (!isMissingTable(error)) throw error
      }
    }
    await writingToPeriods(sql, () => upsertOutcomes(sql, 'messages', group))
  }
  await writingToPeriods(sql, () => recordFailedAttempts(sql, attempts))
}

/**
 * The outcomes that carry an error, one row each in `message_attempts` (the message's timeline).
 * A sent message leaves none: the usual batch costs no statement here.
 */
async function recordFailedAttempts(sql: Sql, outcomes: DeliveryOutcome[]): Promise<void> {
  const failed = outcomes.filter((o) => o.lastErrorCode !== null)
  if (failed.length === 0) return
  await sql`
    insert into message_attempts ${sql(
      failed.map((o) => ({
        message_id: o.id,
        attempt: o.attempts,
        outcome: o.status,
        error_code: o.lastErrorCode,
        error_message: o.lastErrorMessage,
        created_at: o.at.toISOString(),
      })),
    )}`
}

/**
 * The upsert of `group` into `table`: `messages`, or one partition of it when every outcome's
 * `acceptedAt` is in that partition's period. Exported for the partitions benchmark, which runs it
 * on a plain table.
 */
export function upsertOutcomes(sql: Sql, table: string, group: DeliveryOutcome[]) {
  // Each column goes as one Postgres array literal, cast in SQL: no dependence on how the client
  // serializes arrays.
  const column = (pick: (o: DeliveryOutcome) => string | number | null) => arrayLiteral(group.map(pick))
  const iso = (date: Date | null) => date?.toISOString() ?? null
  return sql`
  insert into ${sql(table)} as m (id, api_key_id, type, phone, user_id, payload, client_reference, sender_phone_number_id, sender_id, status, attempts,
    platform_message_id, last_error_code, last_error_message, batch_id, accepted_at, send_at, expires_at,
    sent_at, failed_at, expired_at, canceled_at, updated_at, fallback_used, held_for_quiet_hours, redacted_at, redact_after,
    sms_fallback_text)
  select * from unnest(
    ${column((o) => o.id)}::text[]::uuid[], ${column((o) => o.apiKeyId)}::text[]::uuid[],
    ${column((o) => o.type)}::text[]::message_type[], ${column((o) => o.phone)}::text[],
    ${column((o) => o.userId)}::text[],
    ${column((o) => JSON.stringify(o.payload))}::text[]::jsonb[], ${column((o) => o.clientReference)}::text[],
    ${column((o) => o.senderPhoneNumberId)}::text[], ${column((o) => o.senderId)}::text[],
    ${column((o) => o.status)}::text[]::message_status[],
    ${column((o) => o.attempts)}::text[]::int[], ${column((o) => o.platformMessageId)}::text[],
    ${column((o) => o.lastErrorCode)}::text[], ${column((o) => o.lastErrorMessage)}::text[],
    ${column((o) => o.batchId)}::text[]::uuid[],
    ${column((o) => iso(o.acceptedAt))}::text[]::timestamptz[],
    ${column((o) => iso(o.sendAt))}::text[]::timestamptz[],
    ${column((o) => iso(o.expiresAt))}::text[]::timestamptz[],
    ${column((o) => iso(o.status === 'sent' ? o.at : null))}::text[]::timestamptz[],
    ${column((o) => iso(o.status === 'failed' ? o.at : null))}::text[]::timestamptz[],
    ${column((o) => iso(o.status === 'expired' ? o.at : null))}::text[]::timestamptz[],
    ${column((o) => iso(o.status === 'canceled' ? o.at : null))}::text[]::timestamptz[],
    ${column((o) => iso(o.at))}::text[]::timestamptz[],
    ${column((o) => (o.fallbackUsed ? 'true' : 'false'))}::text[]::boolean[],
    ${column((o) => (o.heldForQuietHours ? 'true' : 'false'))}::text[]::boolean[],
    ${column((o) => (o.redacted ? iso(o.at) : null))}::text[]::timestamptz[],
    ${column((o) => iso(o.redactAfter ?? null))}::text[]::timestamptz[],
    ${column((o) => (o.redacted ? null : (o.smsFallbackText ?? null)))}::text[])
  on conflict (id, accepted_at) do update set
    status = greatest(m.status, excluded.status),
    attempts = greatest(m.attempts, excluded.attempts),
    sender_phone_number_id = coalesce(m.sender_phone_number_id, excluded.sender_phone_number_id),
    sender_id = coalesce(m.sender_id, excluded.sender_id),
    platform_message_id = coalesce(m.platform_message_id, excluded.platform_message_id),
    last_error_code = coalesce(excluded.last_error_code, m.last_error_code),
    last_error_message = coalesce(excluded.last_error_message, m.last_error_message),
    sent_at = coalesce(m.sent_at, excluded.sent_at),
    failed_at = coalesce(m.failed_at, excluded.failed_at),
    expired_at = coalesce(m.expired_at, excluded.expired_at),
    canceled_at = coalesce(m.canceled_at, excluded.canceled_at),
    batch_id = coalesce(m.batch_id, excluded.batch_id),
    send_at = coalesce(m.send_at, excluded.send_at),
    expires_at = coalesce(m.expires_at, excluded.expires_at),
    updated_at = greatest(m.updated_at, excluded.updated_at),
    fallback_used = m.fallback_used or excluded.fallback_used,
    held_for_quiet_hours = m.held_for_quiet_hours or excluded.held_for_quiet_hours,
    payload = case when m.redacted_at is null and excluded.redacted_at is not null
      then excluded.payload else m.payload end,
    redacted_at = coalesce(m.redacted_at, excluded.redacted_at),
    sms_fallback_text = case when m.redacted_at is null and excluded.redacted_at is null
      then coalesce(m.sms_fallback_text, excluded.sms_fallback_text) end,
    redact_after = coalesce(m.redact_after, excluded.redact_after)`
}
