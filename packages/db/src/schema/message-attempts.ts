import { bigserial, index, integer, pgTable, primaryKey, text, timestamp, uuid } from 'drizzle-orm/pg-core'

/**
 * Each delivery attempt of a message that did not end in `sent`: its number, the error and when,
 * for the message's timeline (the console's, and `GET …/messages/:id/timeline`). Written with the
 * outcome that carried the error, so a message sent at its first try costs no row here. Also each
 * move of a pooled message off a number that left its pool's rotation (outcome `sender_changed`,
 * docs/sender-pools.md), whatever its key's webhook endpoints: the record of the move its view
 * and timeline read. No foreign key: the rows of a message are read by its id only, and outlive
 * nothing it does not (a move is written before a queued message has its record).
 */
export const messageAttempts = pgTable(
  'message_attempts',
  {
    id: bigserial({ mode: 'number' }).notNull(),
    messageId: uuid().notNull(),
    /** The delivery attempt's number (1 for the first); 0 when the message never reached the platform. */
    attempt: integer().notNull(),
    /**
     * What happened: `sending` for an attempt retried later, `sender_changed` for a move to another
     * pool member (`SENDER_CHANGED_OUTCOME`), else the message's final status.
     */
    outcome: text().notNull(),
    /** The error's code; for a move, why the number it left is out of rotation (`quality_red`…). */
    errorCode: text().notNull(),
    errorMessage: text(),
    /** A move's: the sender it waited on. Null on an attempt. */
    fromSenderId: text(),
    /** A move's: the pool member it goes through now. Null on an attempt. */
    toSenderId: text(),
    createdAt: timestamp({ withTimezone: true }).notNull(),
  },
  (t) => [
    // Partitioned by `created_at` like messages (migration 0021), and dropped with them.
    primaryKey({ columns: [t.id, t.createdAt] }),
    index('message_attempts_message_id_idx').on(t.messageId, t.createdAt),
    // The console's top error codes of the last hour.
    index('message_attempts_created_at_idx').on(t.createdAt),
  ],
)

export type MessageAttemptRow = typeof messageAttempts.$inferSelect

/** The `outcome` of a row that records a move to another pool member, not an attempt. */
export const SENDER_CHANGED_OUTCOME = 'sender_changed'
