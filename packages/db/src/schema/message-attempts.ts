import { bigserial, index, integer, pgTable, primaryKey, text, timestamp, uuid } from 'drizzle-orm/pg-core'

/**
 * Each delivery attempt of a message that did not end in `sent`: its number, the error and when,
 * for the message's timeline (the console's, and `GET …/messages/:id/timeline`). Written with the
 * outcome that carried the error, so a message sent at its first try costs no row here. No foreign
 * key: the attempts of a message are read by its id only, and outlive nothing it does not.
 */
export const messageAttempts = pgTable(
  'message_attempts',
  {
    id: bigserial({ mode: 'number' }).notNull(),
    messageId: uuid().notNull(),
    /** The delivery attempt's number (1 for the first); 0 when the message never reached the platform. */
    attempt: integer().notNull(),
    /** What happened: `sending` for an attempt retried later, else the message's final status. */
    outcome: text().notNull(),
    errorCode: text().notNull(),
    errorMessage: text(),
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
