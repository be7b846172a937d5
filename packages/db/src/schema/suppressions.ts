import { SUPPRESSION_SCOPES, SUPPRESSION_SOURCES } from '@dispatch/contracts'
import { index, pgTable, text, timestamp, uniqueIndex, uuid } from 'drizzle-orm/pg-core'

/**
 * The suppression list: a recipient (phone or BSUID) who opted out of a business number, with what
 * the entry blocks (`marketing` or `all`), where it came from (a keyword, Meta's `user_preferences`
 * webhook, a `131050` failure, a key, an admin) and why. One entry per number and recipient: a newer
 * opt-out widens or replaces it. The record the Redis copy is rebuilt from; kept past any message
 * retention (an opt-out must outlive the messages that led to it).
 */
export const suppressions = pgTable(
  'suppressions',
  {
    id: uuid().primaryKey().defaultRandom(),
    /** The business number (`phone_number_id`) the recipient opted out of. */
    phoneNumberId: text().notNull(),
    /** Its sender (`senders.id`), as known when the entry was made; no foreign key, as for messages. */
    senderId: text().notNull(),
    recipient: text().notNull(),
    scope: text({ enum: SUPPRESSION_SCOPES }).notNull(),
    source: text({ enum: SUPPRESSION_SOURCES }).notNull(),
    reason: text(),
    /** Who made it: `key:<id>`, `admin:<name>`, or `platform` (a keyword, a webhook, a failure). */
    createdBy: text().notNull(),
    createdAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('suppressions_number_recipient_idx').on(t.phoneNumberId, t.recipient),
    index('suppressions_sender_created_at_idx').on(t.senderId, t.createdAt),
  ],
)

export type SuppressionRow = typeof suppressions.$inferSelect
