import { SENDER_DEFAULT_RATE } from '@dispatch/contracts'
import { index, integer, pgTable, text, timestamp } from 'drizzle-orm/pg-core'
import { senderState } from './enums.ts'

/**
 * WhatsApp business numbers messages go out through. The row `default` mirrors the environment's
 * `WHATSAPP_*` (or sandbox) settings, written by the worker at start, and holds no token: that stays
 * in the environment. Every other row is an admin's, with its token encrypted under `SECRETS_KEY`
 * (AES-256-GCM, `packages/contracts/src/secrets.ts`): the stored value is never the token.
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
    createdAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index('senders_display_phone_number_idx').on(t.displayPhoneNumber)],
)

export type SenderRow = typeof senders.$inferSelect
