import { boolean, pgTable, text, timestamp } from 'drizzle-orm/pg-core'

/**
 * The incident switches, by name (`messages`: all delivery; `messages.<senderId>`: one sender's
 * queue; `email`; `webhooks`). A row exists once a switch was first used. The workers read them
 * with the senders, so a paused switch holds across restarts and the lanes' reconcile; `email` and
 * `webhooks` are also paused in BullMQ itself (kept in Redis), the row being their record.
 */
export const queueControls = pgTable('queue_controls', {
  name: text().primaryKey(),
  paused: boolean().notNull().default(false),
  /** The admin who last switched it. */
  actor: text().notNull(),
  reason: text(),
  updatedAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
})

export type QueueControlRow = typeof queueControls.$inferSelect
