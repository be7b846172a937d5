import { sql } from 'drizzle-orm'
import {
  check,
  index,
  numeric,
  pgTable,
  smallint,
  text,
  timestamp,
  uniqueIndex,
  uuid,
} from 'drizzle-orm/pg-core'

/**
 * A fallback's life (docs/fallback.md, "At most once: the record"): each state is entered once,
 * forward only.
 */
export const FALLBACK_STATES = ['decided', 'withdrawn', 'calling', 'sent', 'failed', 'unknown'] as const
export type FallbackState = (typeof FALLBACK_STATES)[number]

/**
 * A message's channel fallback: at most one row per message, and the SMS it made at most once.
 * `decided` is taken by one conditional insert that finds the message neither `delivered` nor
 * `read`; `calling` is written before the provider is called, so a process killed after it never
 * calls again (such a row ends `unknown`); `sent` keeps the provider's id, which its status
 * callbacks name. No content: the SMS's text and the recipient are read from the message.
 *
 * Keyed by the message's id alone (one fallback per message), with its `accepted_at` beside it to
 * find the message's period; no foreign key, as `messages` is partitioned (see message-attempts.ts).
 */
export const messageFallbacks = pgTable(
  'message_fallbacks',
  {
    messageId: uuid().primaryKey(),
    /** The message's `accepted_at`: its period in the partitioned `messages`. */
    acceptedAt: timestamp({ withTimezone: true }).notNull(),
    apiKeyId: uuid().notNull(),
    /** The message's `batch_id` (a campaign's id): its SMS are counted and priced with the campaign. */
    batchId: uuid(),
    channel: text().notNull().default('sms'),
    /** Why: `whatsapp_undeliverable`, `expired` or `not_delivered_in_time`. */
    reason: text().notNull(),
    /** The platform's code behind it, when one (`131026`). */
    reasonCode: text(),
    state: text().$type<FallbackState>().notNull(),
    decidedAt: timestamp({ withTimezone: true }).notNull(),
    callingAt: timestamp({ withTimezone: true }),
    /** When the state ended: sent, failed, unknown or withdrawn. */
    settledAt: timestamp({ withTimezone: true }),
    provider: text(),
    /** The provider's id of the SMS (Twilio's `SM…` sid). */
    providerMessageId: text(),
    /** The SMS's delivery as the provider reports it: queued, sent, delivered, undelivered, failed. */
    providerStatus: text(),
    providerStatusAt: timestamp({ withTimezone: true }),
    errorCode: text(),
    errorMessage: text(),
    /** What the provider charged for the SMS, as a report said it (a positive amount), in `priceUnit`. */
    price: numeric({ precision: 12, scale: 5 }),
    /** Its currency (ISO 4217, `USD`). */
    priceUnit: text(),
    /**
     * The provider's Message resource asked for the price (the reports carry none): when last, and
     * how often; see `takeDuePriceChecks`.
     */
    priceCheckedAt: timestamp({ withTimezone: true }),
    priceChecks: smallint().notNull().default(0),
    updatedAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    // A status callback names the SMS by the provider's id.
    uniqueIndex('message_fallbacks_provider_message_id_idx')
      .on(t.providerMessageId)
      .where(sql`${t.providerMessageId} is not null`),
    // The sweep of calls a killed process left (`calling` for longer than any call takes).
    index('message_fallbacks_calling_idx').on(t.callingAt).where(sql`${t.state} = 'calling'`),
    // The lists' `channel=sms` and `fallback=<states>`, a key's and across keys, newest first
    // (message-list.ts, amongFallbacks): a fallback's message found by its id in its period. The
    // second also finds those dropped with their message's partition (partitions.ts).
    index('message_fallbacks_api_key_accepted_at_idx').on(t.apiKeyId, t.acceptedAt, t.messageId),
    index('message_fallbacks_accepted_at_idx').on(t.acceptedAt, t.messageId),
    // The SMS whose delivery ended without a price yet: the price checks' sweep (sms-price-sweep.ts).
    index('message_fallbacks_price_due_idx')
      .on(t.priceCheckedAt)
      .where(
        sql`${t.state} = 'sent' and ${t.price} is null and ${t.providerStatus} in ('delivered', 'undelivered', 'failed')`,
      ),
    // A campaign's SMS, summed with its pricing.
    index('message_fallbacks_batch_id_idx').on(t.batchId).where(sql`${t.batchId} is not null`),
    check(
      'message_fallbacks_state_check',
      sql`${t.state} in ('decided', 'withdrawn', 'calling', 'sent', 'failed', 'unknown')`,
    ),
  ],
)

export type MessageFallbackRow = typeof messageFallbacks.$inferSelect
