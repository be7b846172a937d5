import { boolean, index, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core'
import { apiKeys } from './api-keys.ts'

/**
 * Where a key's delivery reports go. The signing secrets must sign later, so they cannot be
 * hashed: they are sealed with the secret box under `SECRETS_KEY` (`v1.…`, see
 * `packages/runtime/src/secrets.ts`). Rows written before that hold them clear (`whsec_…`) until
 * `pnpm secrets:rotate` seals them; the worker accepts both.
 */
export const webhookEndpoints = pgTable(
  'webhook_endpoints',
  {
    id: uuid().primaryKey().defaultRandom(),
    apiKeyId: uuid()
      .notNull()
      .references(() => apiKeys.id, { onDelete: 'cascade' }),
    url: text().notNull(),
    events: text().array().notNull(),
    description: text(),
    enabled: boolean().notNull().default(true),
    /** Sealed (`v1.…`), or clear (`whsec_…`) in a row from before sealing. */
    secret: text().notNull(),
    /** After a rotation, the old secret keeps signing beside the new one until it expires. */
    previousSecret: text(),
    previousSecretExpiresAt: timestamp({ withTimezone: true }),
    /** Since when deliveries have failed without a success in between; null while healthy. */
    failingSince: timestamp({ withTimezone: true }),
    /** Why the service disabled it (`gone`: it answered 410; `failing`: it failed for too long). */
    disabledReason: text(),
    createdAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index('webhook_endpoints_api_key_id_created_at_idx').on(t.apiKeyId, t.createdAt)],
)

export type WebhookEndpointRow = typeof webhookEndpoints.$inferSelect
