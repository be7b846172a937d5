import { sql } from 'drizzle-orm'
import {
  bigserial,
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

/**
 * The events a key's webhook endpoints receive, written by database triggers in the same
 * transaction as the change they report (a message's status, an inbound reply): an event exists
 * exactly when its change committed. Only keys with at least one endpoint get events. Each event
 * also leaves an outbox row, which the relay turns into one delivery job per subscribed endpoint.
 *
 * Partitioned by `created_at` (migration 0024, packages/db/src/partitions.ts) and dropped a whole
 * period at a time past WEBHOOK_EVENT_RETENTION_DAYS, with their attempts. Ids written since carry
 * that time (`msg_` and a UUIDv7's hex), so a lookup by id names its partition.
 */
export const webhookEvents = pgTable(
  'webhook_events',
  {
    /** The `webhook-id` header: the same on every delivery of this event, for receivers to dedupe. */
    id: text().notNull(),
    apiKeyId: uuid()
      .notNull()
      .references(() => apiKeys.id, { onDelete: 'cascade' }),
    type: text().notNull(),
    /** The message the event is about (an outbound message, or the inbound reply itself). */
    messageId: uuid(),
    /** Increases with each event of one message, so a receiver can put them in order. */
    sequence: integer(),
    /** The exact JSON the receivers get: `{type, timestamp, data}`. */
    payload: jsonb().notNull(),
    createdAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ columns: [t.id, t.createdAt] }),
    index('webhook_events_api_key_id_created_at_idx').on(t.apiKeyId, t.createdAt),
    index('webhook_events_message_id_sequence_idx').on(t.messageId, t.sequence),
    // No (created_at) index since 0029: no query reads events by time alone (by id, a key's or a
    // message's only), and retention drops whole partitions.
  ],
)

export type WebhookEventRow = typeof webhookEvents.$inferSelect

/**
 * One try at delivering one event to one endpoint, as the endpoint's owner sees it. Partitioned by its
 * own `created_at`, with the events' retention. `event_id` has no foreign key: one to a partitioned
 * table must hold its whole key (the event's `created_at` too). Attempts and events are dropped by
 * age together instead; an attempt outlives its event by at most its retries' delay.
 */
export const webhookAttempts = pgTable(
  'webhook_attempts',
  {
    id: bigserial({ mode: 'number' }).notNull(),
    /**
     * No foreign key either (0026): its check cost Postgres about 12 µs an attempt row, the largest
     * part of a delivery's share. An endpoint's attempts are deleted with it (deleteWebhookEndpoint);
     * the insert skips endpoints already gone.
     */
    endpointId: uuid().notNull(),
    eventId: text().notNull(),
    /** 1 for the first try of a delivery; a manual retry or a replay starts again at 1. */
    attempt: integer().notNull(),
    /** Null when no answer came (timeout, refused connection, blocked address). */
    statusCode: integer(),
    durationMs: integer().notNull(),
    /** At most 1 KiB of the answer's body. */
    responseExcerpt: text(),
    error: text(),
    /** When the next try is due; null after a success or the last try. */
    nextRetryAt: timestamp({ withTimezone: true }),
    createdAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ columns: [t.id, t.createdAt] }),
    index('webhook_attempts_endpoint_id_created_at_idx').on(t.endpointId, t.createdAt),
    index('webhook_attempts_event_id_idx').on(t.eventId),
    // The console's failing endpoints of the last hour. Partial: a successful attempt (the usual
    // one) writes no entry here.
    index('webhook_attempts_failed_created_at_idx')
      .on(t.createdAt)
      .where(sql`${t.statusCode} is null or ${t.statusCode} not between 200 and 299`),
  ],
)

export type WebhookAttemptRow = typeof webhookAttempts.$inferSelect
