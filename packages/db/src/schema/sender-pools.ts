import { sql } from 'drizzle-orm'
import {
  check,
  index,
  integer,
  pgTable,
  primaryKey,
  text,
  timestamp,
  unique,
  uuid,
} from 'drizzle-orm/pg-core'
import { senders } from './senders.ts'

/**
 * Sender pools (issue 44): an ordered set of senders of one business portfolio that a key may be
 * bound to (`api_keys.sender_pool_id`). Admin-only: no key route reads them. The portfolio is
 * judged from the members whenever they are written (`portfolioOf`), not stored.
 */
export const senderPools = pgTable('sender_pools', {
  id: uuid().primaryKey().defaultRandom(),
  name: text().notNull(),
  createdAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
  updatedAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
})

/**
 * A pool's members, in order (`position` 0…n-1), each with its share of new recipients (`weight`).
 * A sender deleted leaves every pool it was in; a sender still a bound key's own cannot be deleted,
 * so a pool a key is bound to never empties that way.
 */
export const senderPoolMembers = pgTable(
  'sender_pool_members',
  {
    poolId: uuid()
      .notNull()
      .references(() => senderPools.id, { onDelete: 'cascade' }),
    senderId: text()
      .notNull()
      .references(() => senders.id, { onDelete: 'cascade' }),
    position: integer().notNull(),
    weight: integer().notNull().default(1),
  },
  (t) => [
    primaryKey({ columns: [t.poolId, t.senderId] }),
    unique('sender_pool_members_position_key').on(t.poolId, t.position),
    // "Which pools is this sender in": a sender's deletion, its health change.
    index('sender_pool_members_sender_id_idx').on(t.senderId),
    check('sender_pool_members_weight_check', sql`${t.weight} between 1 and 1000`),
    check('sender_pool_members_position_check', sql`${t.position} >= 0`),
  ],
)

export type SenderPoolRow = typeof senderPools.$inferSelect
export type SenderPoolMemberRow = typeof senderPoolMembers.$inferSelect
