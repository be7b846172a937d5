import { sql } from 'drizzle-orm'
import { index, jsonb, pgTable, primaryKey, text, timestamp, uniqueIndex, uuid } from 'drizzle-orm/pg-core'
import { apiKeys } from './api-keys.ts'

/**
 * Messages the recipients sent back, from the platform's webhook. Each is routed to the key that
 * last sent to that phone number from that business number within the customer-service window;
 * one that no key sent to stays here unrouted (`api_key_id` null), for admins to see.
 *
 * Partitioned by `received_at` (migration 0024, packages/db/src/partitions.ts): the platform's time
 * of the reply, known at every insert and the same on every redelivery of it, so a key that holds it
 * (the primary key, the wamid's uniqueness) still catches a redelivery. Ids are UUIDv7 of that time,
 * so a lookup by id names its partition (queries/partitioned-ids.ts).
 */
export const inboundMessages = pgTable(
  'inbound_messages',
  {
    /** UUIDv7 of `received_at` (older rows: random UUIDs). */
    id: uuid().notNull().defaultRandom(),
    /**
     * The platform's id (wamid): the platform redelivers webhooks, and a reply is stored once. Unique
     * with `received_at` (a partitioned table's keys hold its column): a redelivery carries the same
     * `timestamp`, so it meets the first copy in the same partition and index.
     */
    platformMessageId: text().notNull(),
    /** The business number that received it (`metadata.phone_number_id`). */
    phoneNumberId: text().notNull(),
    /** The sender of the reply, E.164 (`+` and the platform's `from`); null when Meta withholds it. */
    phone: text(),
    /** The sender's business-scoped user id (`from_user_id`), when the platform gives one. */
    userId: text(),
    /** The sender's WhatsApp username (`contacts[].profile.username`), when it has one. */
    username: text(),
    /** The platform's message type: text, image, document, audio, button, interactive, location… */
    type: text().notNull(),
    /** What the reply carries, normalized (see docs/message-kinds.md, "Receiving"). */
    content: jsonb().notNull(),
    /** The key it was routed to; null when none had sent to this number in the window. */
    apiKeyId: uuid().references(() => apiKeys.id, { onDelete: 'set null' }),
    /** The wamid of the message it quotes or answers (`context.id`), ours or not. */
    contextId: text(),
    /** Our message it answers, when the platform says so (`context.id`) and we know it. */
    inReplyTo: uuid(),
    receivedAt: timestamp({ withTimezone: true }).notNull(),
    /** When its `content` was removed (the sender's content retention, or an erasure); null while kept. */
    redactedAt: timestamp({ withTimezone: true }),
    /** When its content is due for redaction: receipt plus its sender's hours then; null: never. */
    redactAfter: timestamp({ withTimezone: true }),
    createdAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ columns: [t.id, t.receivedAt] }),
    uniqueIndex('inbound_messages_platform_message_id_received_at_idx').on(t.platformMessageId, t.receivedAt),
    index('inbound_messages_api_key_id_received_at_idx').on(t.apiKeyId, t.receivedAt),
    index('inbound_messages_unrouted_idx').on(t.receivedAt).where(sql`${t.apiKeyId} is null`),
    // `GET /media/{id}/content` finds a message by its media's platform id.
    index('inbound_messages_media_id_idx').on(sql`(${t.content}->'media'->>'id')`),
    // Timed content retention of a sender's replies: only those due for redaction are indexed.
    index('inbound_messages_redact_after_idx')
      .on(t.redactAfter)
      .where(sql`${t.redactAfter} is not null and ${t.redactedAt} is null`),
  ],
)

/** The platform id of an inbound message's media (`content.media.id`), as the index above holds it. */
export const inboundMediaId = sql<string>`(${inboundMessages.content}->'media'->>'id')`

export type InboundMessageRow = typeof inboundMessages.$inferSelect

/**
 * A user's BSUID and phone, remembered when a webhook names both, so a conversation is found by
 * either: a reply from the BSUID alone goes to the key that wrote to the phone, and the reverse.
 */
export const recipientIdentities = pgTable(
  'recipient_identities',
  {
    userId: text().primaryKey(),
    phone: text().notNull(),
    updatedAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index('recipient_identities_phone_idx').on(t.phone)],
)

/**
 * The customer-service window per business number and recipient: free-form messages may go out
 * within 24 h of the recipient's last message. Recorded on every reply, routed or not.
 */
export const conversationWindows = pgTable(
  'conversation_windows',
  {
    phoneNumberId: text().notNull(),
    /** The recipient: its phone (E.164) or its BSUID; a user known by both has a row for each. */
    phone: text().notNull(),
    lastInboundAt: timestamp({ withTimezone: true }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.phoneNumberId, t.phone] })],
)
