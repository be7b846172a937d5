import { bigserial, index, jsonb, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core'
import { apiKeys } from './api-keys.ts'
import { apiKeyStatus } from './enums.ts'

/** One row per decision on a key (who moved it from which status to which, and why) or change of its limits. */
export const apiKeyAuditLog = pgTable(
  'api_key_audit_log',
  {
    id: bigserial({ mode: 'number' }).primaryKey(),
    apiKeyId: uuid()
      .notNull()
      .references(() => apiKeys.id),
    actor: text().notNull(),
    fromStatus: apiKeyStatus().notNull(),
    toStatus: apiKeyStatus().notNull(),
    reason: text(),
    /** A limits change: `{ field: { from, to } }`, with the status unchanged; null for a decision. */
    changes: jsonb().$type<Record<string, { from: unknown; to: unknown }>>(),
    createdAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index('api_key_audit_log_api_key_id_idx').on(t.apiKeyId, t.id)],
)
