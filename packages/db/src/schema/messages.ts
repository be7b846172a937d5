import { sql } from 'drizzle-orm'
import {
  boolean,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  text,
  timestamp,
  uuid,
} from 'drizzle-orm/pg-core'
import { apiKeys } from './api-keys.ts'
import { messageStatus, messageType } from './enums.ts'

/**
 * The columns of `messages`, apart so a partition can be read as a table of its own
 * (queries/message-partitions.ts): the same columns under the partition's name.
 */
export const messageColumns = {
  id: uuid().notNull(),
  apiKeyId: uuid()
    .notNull()
    .references(() => apiKeys.id),
  type: messageType().notNull(),
  /** The recipient's phone, E.164; null for a send to a BSUID whose phone is not known. */
  phone: text(),
  /** The recipient's business-scoped user id (BSUID), for a send to one. */
  userId: text(),
  /** The request body as accepted (without the sender's reference, kept beside it). */
  payload: jsonb().notNull(),
  /** The sender's own reference, if it gave one. */
  clientReference: text(),
  /** The business number it went out from (`phone_number_id`): replies are routed on it. */
  senderPhoneNumberId: text(),
  /** The sender (`senders.id`) it went out through. No foreign key: a removed sender's history stays. */
  senderId: text(),
  status: messageStatus().notNull().default('queued'),
  attempts: integer().notNull().default(0),
  /** Stored before the job is acknowledged: a job run again after a crash never sends twice. */
  platformMessageId: text(),
  lastErrorCode: text(),
  lastErrorMessage: text(),
  /** The batch it came in (`POST /messages/batch`), if any. */
  batchId: uuid(),
  acceptedAt: timestamp({ withTimezone: true }).notNull(),
  /** When it is due, for a scheduled message. */
  sendAt: timestamp({ withTimezone: true }),
  /** Its `sendAt` is the end of the recipient's quiet hours, not a time the caller asked for. */
  heldForQuietHours: boolean().notNull().default(false),
  /**
   * Why the worker last held it `scheduled` at delivery (`messaging_limit`: its portfolio's limit
   * was reached), written on a hold only, never on the way to the platform (0034); null: never held
   * there. Quiet hours and the caller's `sendAt` keep their own columns above.
   */
  scheduledReason: text(),
  /** Not handed to the platform by then, it is never sent: `expired`. */
  expiresAt: timestamp({ withTimezone: true }),
  sentAt: timestamp({ withTimezone: true }),
  deliveredAt: timestamp({ withTimezone: true }),
  readAt: timestamp({ withTimezone: true }),
  failedAt: timestamp({ withTimezone: true }),
  expiredAt: timestamp({ withTimezone: true }),
  canceledAt: timestamp({ withTimezone: true }),
  /**
   * An admin's retries of the message once `failed` (`POST /api/admin/messages/:id/retry`): how
   * many, and the last one's time. Who: `admin_audit_log`.
   */
  retryCount: integer().notNull().default(0),
  retriedAt: timestamp({ withTimezone: true }),
  /** The window was closed at delivery, and the message's `fallbackTemplate` went out instead. */
  fallbackUsed: boolean().notNull().default(false),
  /** What the platform's status webhooks said it costs (`pricing`); null until one did. */
  pricingBillable: boolean(),
  pricingModel: text(),
  pricingCategory: text(),
  pricingType: text(),
  /**
   * When the message's content (text, template variables, captions, media ids) was removed from
   * `payload`: by its key's `contentRetention`, the send's own, or an erasure. Null while it is kept.
   * Views and events then say `redacted: true`.
   */
  redactedAt: timestamp({ withTimezone: true }),
  /**
   * When its content is due for redaction: acceptance plus its key's `contentRetention` hours as
   * they were then; null for a key that retains (or discards) content.
   */
  redactAfter: timestamp({ withTimezone: true }),
  /**
   * The SMS of its channel fallback when that has no `afterSeconds` (sent only if WhatsApp reports
   * it undeliverable, 131026): written with its sent record, read by a 131026 status webhook
   * (docs/fallback.md, "The timer"). Content: nulled by redaction and erasure; a message whose
   * content is discarded never has it (its text waits in Redis instead). Null otherwise (0052).
   */
  smsFallbackText: text(),
  updatedAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
}

/**
 * One row per accepted message, written by the worker (the API only enqueues). The id is the
 * `messageId` the client got with its 202, and the BullMQ job id.
 *
 * Partitioned by `accepted_at` (periods of MESSAGE_PARTITION_DAYS, migration 0023, created ahead and
 * dropped past `MESSAGE_RETENTION_DAYS` by the workers: packages/db/src/partitions.ts). So the
 * primary key holds `accepted_at`, and no index can be unique across periods: a platform id is
 * unique by construction (the platform's), not by constraint. A message's UUIDv7 id carries its
 * acceptance time, so a lookup by id reads one partition (queries/message-partitions.ts). Each
 * partition leaves a tenth of its pages free (fillfactor 90, `PARTITION_STORAGE`, migration 0032):
 * the pricing update that follows a message's insert touches no indexed column and is HOT then.
 */
export const messages = pgTable('messages', messageColumns, (t) => [
  primaryKey({ columns: [t.id, t.acceptedAt] }),
  // A message by the platform's id (a status, a quoted reply): the index holds the id's 8-byte hash,
  // not the ~50-60-byte id, and each query compares the id itself too (queries/message-ids.ts,
  // `platformIdIs`). Whole, not partial: Postgres keeps no statistics on a partial index's
  // expression, and without them guessed 0.5 % of the rows for one hash (migration 0040).
  index('messages_platform_message_id_hash_idx').on(sql`hashtextextended(${t.platformMessageId}, 0)`),
  // No (api_key_id, accepted_at) index since 0029: a key's list in acceptance order is read off the
  // (api_key_id, status, accepted_at) index below, one short range per status merged
  // (queries/message-list.ts); the index cost every insert and status change an entry of ~50 bytes.
  // Every index here must be argued for in docs/redis-and-postgres.md (Postgres: indexes and writes per
  // message) and listed in ../hot-indexes.ts, or a test fails.
  // A reply goes to the key that last sent to its number: the newest sent message per phone.
  index('messages_phone_sent_at_idx').on(t.phone, t.sentAt),
  // …and on the BSUID, for a user known by username (most messages have none: partial).
  index('messages_user_id_sent_at_idx').on(t.userId, t.sentAt).where(sql`${t.userId} is not null`),
  index('messages_api_key_batch_idx').on(t.apiKeyId, t.batchId).where(sql`${t.batchId} is not null`),
  // The message list (issue 12; measured in docs/benchmarks-paths.md). Each index here is written on
  // every insert and on every update that is not HOT, and one on `status` or `updated_at` makes
  // every status change non-HOT: the webhook's delivered/read updates go from 65–82 % HOT to none,
  // and from ~250 to ~750 bytes of WAL each (an entry in each of the table's 8 indexes). Kept
  // because without them, at 10 M messages for a key, `status=failed` over a week takes ~0.2 s (up
  // to 1.6 s), `orderField=updatedAt` 6.5 s, a `clientReference` 3.6 s; with them 1–13 ms.
  // `status` (in time order, and its count): one short range per status; and since 0029 the key's
  // whole list in acceptance order (each status's range, merged) and its count (the key's prefix).
  index('messages_api_key_status_accepted_at_idx').on(t.apiKeyId, t.status, t.acceptedAt),
  // `orderField=updatedAt`: otherwise a sort of every matching row. Given the index above, it adds
  // one entry per write at the right edge of the key's range (a page in memory), no further HOT loss.
  index('messages_api_key_updated_at_idx').on(t.apiKeyId, t.updatedAt),
  // `clientReference` (and `q`): the sender's own id for a message, its usual way to find one; and
  // an admin's search by it across every key (issue 24, migration 0019). The reference leads, so
  // one index serves both: with the key it is two equalities, without it one. Until 0019 it was
  // (api_key_id, client_reference), which across keys could only be read whole: at 10 M messages
  // an admin's search took 0.64–0.74 s (p95 of the query), now 8–11 ms (docs/benchmarks-paths.md,
  // Message search at 10 M). Swapping the columns rather than adding an index costs nothing more
  // on writes: one entry per message with a reference, at insert and at each non-HOT update
  // (status changes, since 0009), none for messages without one (partial). Never updated itself,
  // so no HOT cost.
  index('messages_client_reference_idx')
    .on(t.clientReference, t.apiKeyId)
    .where(sql`${t.clientReference} is not null`),
  // The admins' list across every key (migration 0011):
  // without these, at 4 M messages, the newest page took 1.1 s, `status=failed` 0.7 s and a bulk
  // retry's pick of the oldest failed 0.7 s; with them 1–5 ms. `accepted_at` costs one entry per
  // insert and per status change (status changes are not HOT since 0009); the partial one only
  // holds failed messages, written when a message fails.
  index('messages_accepted_at_idx').on(t.acceptedAt),
  index('messages_failed_accepted_at_idx').on(t.acceptedAt).where(sql`${t.status} = 'failed'`),
  // Timed content retention (issue 25): only messages whose key kept content N hours when they
  // were accepted have a `redact_after`, so only they are in this index. A first version indexed
  // every unredacted message and cost every key's writes 4–8 % (bench:redaction-index).
  index('messages_redact_after_idx')
    .on(t.redactAfter)
    .where(sql`${t.redactAfter} is not null and ${t.redactedAt} is null`),
])

export type MessageRow = typeof messages.$inferSelect
