import {
  CONTENT_RETENTION_MAX_HOURS,
  type ConsentConfirmation,
  type ConsentKeywords,
  type MessageFallback,
  SENDER_DEFAULT_RATE,
} from '@dispatch/contracts'
import { sql } from 'drizzle-orm'
import { check, index, integer, jsonb, pgTable, text, timestamp } from 'drizzle-orm/pg-core'
import { messagingLimitPolicy, senderState, serviceWindowPolicy } from './enums.ts'

/**
 * WhatsApp business numbers messages go out through. The row `default` mirrors the environment's
 * `WHATSAPP_*` (or sandbox) settings, written by the worker at start, and holds no token: that stays
 * in the environment. Every other row is an admin's, with its token encrypted under `SECRETS_KEY`
 * (AES-256-GCM, `packages/runtime/src/secrets.ts`): the stored value is never the token.
 */
export const senders = pgTable(
  'senders',
  {
    /** `default`, or a UUID for an admin's sender. */
    id: text().primaryKey(),
    phoneNumberId: text().notNull().unique(),
    displayName: text().notNull(),
    displayPhoneNumber: text(),
    /** `v1.<key id>.<iv>.<tag>.<ciphertext>` (base64url); null for `default`. */
    accessTokenCiphertext: text(),
    accessTokenLast4: text(),
    ratePerSecond: integer().notNull().default(SENDER_DEFAULT_RATE),
    state: senderState().notNull().default('active'),
    stateReason: text(),
    /** The WhatsApp Business Account the number belongs to: its templates are synced from it. */
    wabaId: text(),
    serviceWindowPolicy: serviceWindowPolicy().notNull().default('off'),
    /** At most `count` marketing messages per recipient within `hours`; null: no cap. */
    marketingCap: jsonb().$type<{ count: number; hours: number }>(),
    /** Its own keywords, folded as replies are matched; null: the defaults. */
    consentKeywords: jsonb().$type<ConsentKeywords>(),
    /** Texts sent back to a user a keyword opted out (or in); null: none. */
    consentConfirmation: jsonb().$type<ConsentConfirmation>(),
    /**
     * The channel fallback (`fallback`, docs/fallback.md) a send through this number carries when it
     * has none of its own and its key holds `send:sms-fallback`; null: none.
     */
    defaultFallback: jsonb().$type<MessageFallback>(),
    /**
     * How many hours the content of replies to this number is kept (`inboundContentRetention`):
     * null `retain`, 0 `discard` (never stored), N redacted N hours after receipt.
     */
    inboundContentRetentionHours: integer(),
    /** The last completed template sync; null: never synced, so template sends are not checked. */
    templatesSyncedAt: timestamp({ withTimezone: true }),
    /** Health as Meta last reported it (account_update, business_capability_update, quality updates). */
    accountStatus: text(),
    accountStatusReason: text(),
    messagingLimitTier: text(),
    /**
     * The business portfolio (Meta business id) the number belongs to, set by an admin: its numbers
     * share one messaging limit. Null: a portfolio of its own, keyed by its WABA (or the sender).
     */
    businessId: text(),
    /** Under a finite messaging limit: `hold` a template past it, `refuse` it at accept, or `off`. */
    messagingLimitPolicy: messagingLimitPolicy().notNull().default('hold'),
    /** The admin's messaging limit over the synced tier; null: the synced tier (or none). */
    messagingLimitOverride: integer(),
    qualityRating: text(),
    healthUpdatedAt: timestamp({ withTimezone: true }),
    createdAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    index('senders_display_phone_number_idx').on(t.displayPhoneNumber),
    // Meta's template and account webhooks name the account (`entry[].id`), not the number.
    index('senders_waba_id_idx').on(t.wabaId),
    check('senders_messaging_limit_override_check', sql`${t.messagingLimitOverride} > 0`),
    check(
      'senders_inbound_content_retention_hours_check',
      sql`${t.inboundContentRetentionHours} between 0 and ${sql.raw(String(CONTENT_RETENTION_MAX_HOURS))}`,
    ),
  ],
)

export type SenderRow = typeof senders.$inferSelect
