import { ERASURE_STATUSES, type ErasureReport } from '@dispatch/contracts'
import { index, jsonb, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core'
import { apiKeys } from './api-keys.ts'

/**
 * One row per erasure of a recipient's data (issue 25): by an admin, across every key
 * (`api_key_id` null), or by a key, of its own data. The recipient is named by its keyed hash only
 * (`subject_hash`): the phone or BSUID travels in the erasure's job, and is gone with it.
 */
export const erasures = pgTable(
  'erasures',
  {
    id: uuid().primaryKey().defaultRandom(),
    /** The key whose data is erased; null: every key's (an admin's erasure). */
    apiKeyId: uuid().references(() => apiKeys.id),
    /** `hmac:…`, as `recipientHasher` gives it: the same value the suppression list keeps. */
    subjectHash: text().notNull(),
    /** `admin:<name>` or `key:<id>`. */
    requestedBy: text().notNull(),
    status: text({ enum: ERASURE_STATUSES }).notNull().default('pending'),
    /** Per table and Redis structure, how many rows or entries were erased; set when completed. */
    report: jsonb().$type<ErasureReport>(),
    error: text(),
    createdAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
    startedAt: timestamp({ withTimezone: true }),
    completedAt: timestamp({ withTimezone: true }),
  },
  (t) => [index('erasures_api_key_id_created_at_idx').on(t.apiKeyId, t.createdAt)],
)

export type ErasureRow = typeof erasures.$inferSelect
