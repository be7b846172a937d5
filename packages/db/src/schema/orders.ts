import { sql } from 'drizzle-orm'
import { bigint, boolean, date, index, integer, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core'
import { addresses } from './addresses.ts'
import { displayIdDefault, orderStatus, paymentStatus } from './catalog-enums.ts'
import { channels } from './channels.ts'
import { projects } from './projects.ts'

export const orders = pgTable(
  'orders',
  {
    id: uuid().primaryKey().defaultRandom(),
    displayId: text().notNull().unique().default(displayIdDefault('ORD-', 'order_display_id_seq')),
    tenantId: text().notNull(),
    /** The API key that registered the order. */
    userId: text().notNull(),
    channelId: uuid()
      .notNull()
      .references(() => channels.id),
    projectId: uuid()
      .notNull()
      .references(() => projects.id),
    addressId: integer().references(() => addresses.id),
    orderedAt: date({ mode: 'string' }).notNull(),
    orderStatus: orderStatus().notNull().default('PENDING'),
    paymentStatus: paymentStatus().notNull().default('UNPAID'),
    total: bigint({ mode: 'number' }).notNull(),
    trackingNumber: text(),
    notPrintOut: boolean().notNull().default(false),
    unregisterOrder: boolean().notNull().default(false),
    unregisterEmailAddress: text(),
    actualBiomeOrderId: text(),
    totalDiscounts: integer().notNull().default(0),
    notes: text(),
    isSolvedNotes: boolean().notNull().default(false),
    idTrackingSpecialOrder: text(),
    invoiceNo: text(),
    partnerName: text(),
    createdAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
    deletedAt: timestamp({ withTimezone: true }),
    /** What `q` searches (case-insensitive substring), kept in one column for one trigram index. */
    searchText: text()
      .notNull()
      .generatedAlwaysAs(
        sql`lower(display_id || ' ' || coalesce(invoice_no, '') || ' ' || coalesce(partner_name, '') || ' ' || coalesce(tracking_number, ''))`,
      ),
  },
  (t) => [
    // Lists order by (ordered_at, created_at, id), within a tenant, optionally within a project.
    index('orders_tenant_ordered_idx')
      .on(t.tenantId, t.orderedAt, t.createdAt, t.id)
      .where(sql`deleted_at is null`),
    index('orders_tenant_project_ordered_idx')
      .on(t.tenantId, t.projectId, t.orderedAt, t.createdAt, t.id)
      .where(sql`deleted_at is null`),
    index('orders_search_trgm_idx').using('gin', t.searchText.op('gin_trgm_ops')),
  ],
)
export type OrderRow = typeof orders.$inferSelect
