import { SUPPRESSION_SCOPES, SUPPRESSION_SOURCES } from '@dispatch/contracts'
import { sql } from 'drizzle-orm'
import { index, pgTable, text, timestamp, uniqueIndex, uuid } from 'drizzle-orm/pg-core'

/**
 * The suppression list: a recipient (phone or BSUID) who opted out of a business number, with what
 * the entry blocks (`marketing` or `all`), where it came from (a keyword, Meta's `user_preferences`
 * webhook, a `131050` failure, a key, an admin) and why. One entry per number, recipient and owner:
 * a newer opt-out widens it. The record the Redis copy is rebuilt from; kept past any message
 * retention (an opt-out must outlive the messages that led to it).
 *
 * The owner decides whom an entry blocks (docs/consent.md): none (`owner` '') for the recipient's
 * own opt-outs and an admin's, which block every key on the number; a key's tenant (`tenant:<id>`),
 * or the key itself when it has no tenant (`key:<id>`), for an entry a key added, which blocks only
 * that owner's sends and is listed, read and lifted by it alone.
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
    /** The tenant of the key that added it (an `api` entry of a key with a tenant); else null. */
    tenantId: text(),
    /** The key that added it (an `api` entry); null for the recipient's own and an admin's. */
    apiKeyId: uuid(),
    /** Whom it blocks, worked out from the two above: '' everyone, `tenant:<id>`, or `key:<id>`. */
    owner: text()
      .notNull()
      .generatedAlwaysAs(
        sql`case when api_key_id is null then '' when tenant_id is not null then 'tenant:' || tenant_id else 'key:' || api_key_id::text end`,
      ),
    createdAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('suppressions_number_recipient_owner_idx').on(t.phoneNumberId, t.recipient, t.owner),
    index('suppressions_owner_created_at_idx').on(t.owner, t.createdAt),
    index('suppressions_sender_created_at_idx').on(t.senderId, t.createdAt),
  ],
)

export type SuppressionRow = typeof suppressions.$inferSelect
