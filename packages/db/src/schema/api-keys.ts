import { CONTENT_RETENTION_MAX_HOURS, type QuietHours } from '@dispatch/contracts'
import { sql } from 'drizzle-orm'
import { boolean, check, index, integer, jsonb, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core'
import { apiKeyStatus, appEnv } from './enums.ts'
import { senderPools } from './sender-pools.ts'
import { senders } from './senders.ts'

/** API keys. The key itself is never stored: only its SHA-256 and a short prefix admins can read. */
export const apiKeys = pgTable(
  'api_keys',
  {
    id: uuid().primaryKey().defaultRandom(),
    keyHash: text().notNull().unique(),
    keyPrefix: text().notNull(),
    environment: appEnv().notNull(),
    clientName: text().notNull(),
    email: text().notNull(),
    scopes: text().array().notNull(),
    /** The tenant the requester asked for: only a request, never read for access. */
    requestedTenantId: text(),
    /** The tenant the key acts for, bound by an admin at approval; null until one is bound. */
    tenantId: text(),
    status: apiKeyStatus().notNull().default('pending'),
    statusReason: text(),
    decidedBy: text(),
    decidedAt: timestamp({ withTimezone: true }),
    /** The sender its messages go out through; null: the default sender. */
    senderId: text().references(() => senders.id),
    /**
     * The sender pool it may send through (docs/sender-pools.md); null: none. When set, `senderId` (the
     * key's home sender) is one of the pool's members.
     */
    senderPoolId: uuid().references(() => senderPools.id),
    /** Messages per second; null: MESSAGE_RATE_PER_SECOND. */
    ratePerSecond: integer(),
    /** Messages per UTC day; null: no quota. */
    dailyQuota: integer(),
    /** May send `priority: "high"`. */
    transactional: boolean().notNull().default(false),
    /** Quiet hours its messages wait out (`{start, end, timeZone?}`); null: none. */
    quietHours: jsonb().$type<QuietHours>(),
    /**
     * How many hours its messages' content is kept (`contentRetention`): null `retain`, 0 `discard`
     * (never stored), N redacted N hours after acceptance by the worker's sweeper.
     */
    contentRetentionHours: integer(),
    createdAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    index('api_keys_status_created_at_idx').on(t.status, t.createdAt),
    index('api_keys_created_at_idx').on(t.createdAt),
    // A pool's deletion and its members' updates look for the keys bound to it.
    index('api_keys_sender_pool_id_idx').on(t.senderPoolId).where(sql`${t.senderPoolId} is not null`),
    check(
      'api_keys_content_retention_hours_check',
      sql`${t.contentRetentionHours} between 0 and ${sql.raw(String(CONTENT_RETENTION_MAX_HOURS))}`,
    ),
  ],
)

export type ApiKeyRow = typeof apiKeys.$inferSelect
