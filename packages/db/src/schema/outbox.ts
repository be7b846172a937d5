import { sql } from 'drizzle-orm'
import { bigserial, index, jsonb, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core'

/**
 * The transactional outbox: side effects (e-mails) written in the same transaction as the change
 * that causes them, then moved to the queue by the worker's relay. Nothing is lost when Redis is
 * down, and nothing is sent for a change that rolled back.
 */
export const outbox = pgTable(
  'outbox',
  {
    id: bigserial({ mode: 'number' }).primaryKey(),
    /**
     * The queue's job id for this row, which makes a row relayed twice one job. Random rather than
     * the row id: ids restart with a new or restored database while Redis keeps finished jobs, and a
     * reused id would be taken for a duplicate and silently dropped. Not unique by constraint since
     * 0029 (a random UUID is unique by nature, and nothing looks a row up by it): the index cost
     * every event's row two entries, at its insert and when it is marked dispatched.
     */
    jobId: uuid().notNull().defaultRandom(),
    topic: text().notNull(),
    payload: jsonb().notNull(),
    createdAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
    dispatchedAt: timestamp({ withTimezone: true }),
  },
  (t) => [index('outbox_pending_idx').on(t.id).where(sql`${t.dispatchedAt} is null`)],
)

/** Postgres NOTIFY channel that wakes the relay as soon as a new outbox row commits. */
export const OUTBOX_NOTIFY_CHANNEL = 'dispatch_outbox'
