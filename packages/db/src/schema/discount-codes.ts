import { bigserial, index, pgTable, text, uuid } from 'drizzle-orm/pg-core'
import { orders } from './orders.ts'

/** Discount codes applied to an order (`Order.discountCodes`). */
export const discountCodes = pgTable(
  'discount_codes',
  {
    id: bigserial({ mode: 'number' }).primaryKey(),
    orderId: uuid()
      .notNull()
      .references(() => orders.id),
    code: text().notNull(),
    amount: text().notNull(),
    type: text().notNull(),
  },
  (t) => [index('discount_codes_order_id_idx').on(t.orderId, t.id)],
)
