import { pgTable, serial, text, timestamp } from 'drizzle-orm/pg-core'

/** A minimal address record: the spec shows none of its fields, only the integer id orders carry. */
export const addresses = pgTable('addresses', {
  id: serial().primaryKey(),
  tenantId: text().notNull(),
  recipient: text(),
  line1: text(),
  line2: text(),
  city: text(),
  postalCode: text(),
  country: text(),
  createdAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
})
export type AddressRow = typeof addresses.$inferSelect
