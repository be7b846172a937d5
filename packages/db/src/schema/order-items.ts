import type { OrderItemMetadata } from '@dispatch/contracts'
import { index, integer, jsonb, pgTable, uuid } from 'drizzle-orm/pg-core'
import { orders } from './orders.ts'
import { products } from './products.ts'

export interface DiscountAllocationsValue {
  amount: string
  discount_application_index: number
}

export const orderItems = pgTable(
  'order_items',
  {
    id: uuid().primaryKey().defaultRandom(),
    orderId: uuid()
      .notNull()
      .references(() => orders.id),
    productId: uuid()
      .notNull()
      .references(() => products.id),
    quantity: integer().notNull(),
    price: integer().notNull(),
    metadata: jsonb().$type<OrderItemMetadata>(),
    discountAllocations: jsonb().$type<DiscountAllocationsValue>(),
  },
  (t) => [
    index('order_items_order_id_idx').on(t.orderId),
    index('order_items_product_id_idx').on(t.productId),
  ],
)
export type OrderItemRow = typeof orderItems.$inferSelect
