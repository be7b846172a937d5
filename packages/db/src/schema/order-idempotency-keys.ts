import { jsonb, pgTable, primaryKey, text, timestamp, uuid } from 'drizzle-orm/pg-core'
import { apiKeys } from './api-keys.ts'
import { orders } from './orders.ts'

/**
 * `Idempotency-Key`s of POST /orders, written in the order's own transaction: a key exists only
 * if its order committed, and a concurrent duplicate waits on (then sees) the first one's row.
 */
export const orderIdempotencyKeys = pgTable(
  'order_idempotency_keys',
  {
    apiKeyId: uuid()
      .notNull()
      .references(() => apiKeys.id),
    key: text().notNull(),
    requestHash: text().notNull(),
    orderId: uuid().references(() => orders.id),
    /** The first response's body, replayed as is. */
    response: jsonb(),
    createdAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.apiKeyId, t.key] })],
)
