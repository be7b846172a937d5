import { sql } from 'drizzle-orm'
import { boolean, check, index, integer, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core'
import { displayIdDefault, productType } from './catalog-enums.ts'
import { channels } from './channels.ts'

export const products = pgTable(
  'products',
  {
    id: uuid().primaryKey().defaultRandom(),
    displayId: text().notNull().unique().default(displayIdDefault('PRD-', 'product_display_id_seq')),
    tenantId: text().notNull(),
    channelId: uuid()
      .notNull()
      .references(() => channels.id),
    name: text().notNull(),
    description: text().notNull().default(''),
    stock: integer().notNull(),
    price: integer().notNull(),
    active: boolean().notNull().default(true),
    image: text(),
    productType: productType().notNull(),
    createdAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
    deletedAt: timestamp({ withTimezone: true }),
  },
  (t) => [
    // Stock never goes negative, whatever the code above it does.
    check('products_stock_non_negative', sql`${t.stock} >= 0`),
    check('products_price_non_negative', sql`${t.price} >= 0`),
    index('products_tenant_created_at_idx').on(t.tenantId, t.createdAt, t.id),
    index('products_channel_id_idx').on(t.channelId),
  ],
)
export type ProductRow = typeof products.$inferSelect
