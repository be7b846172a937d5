import { bigint, integer, pgEnum, pgTable, text, timestamp } from 'drizzle-orm/pg-core'
import { outbox } from './outbox.ts'

export const emailDeliveryStatus = pgEnum('email_delivery_status', ['retrying', 'sent', 'failed'])

/** The outcome of each e-mail the outbox asked for: attempts, last error, and the server's id. */
export const emailDeliveries = pgTable('email_deliveries', {
  outboxId: bigint({ mode: 'number' })
    .primaryKey()
    .references(() => outbox.id),
  recipient: text().notNull(),
  template: text().notNull(),
  subject: text().notNull(),
  status: emailDeliveryStatus().notNull(),
  attempts: integer().notNull(),
  lastError: text(),
  providerMessageId: text(),
  sentAt: timestamp({ withTimezone: true }),
  updatedAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
})
