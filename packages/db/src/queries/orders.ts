import type { KitListQuery, OrderListQuery } from '@dispatch/contracts'
import { and, count, eq, exists, getTableColumns, gte, ilike, isNull, like, lte, sql } from 'drizzle-orm'
import type { Db } from '../client.ts'
import { kits } from '../schema/kits.ts'
import { orderItems } from '../schema/order-items.ts'
import { orders } from '../schema/orders.ts'
import { products } from '../schema/products.ts'
import { deletedFilter, likePattern, offsetOf, ordering, whereAll } from './list-helpers.ts'
import { assembleOrders, toKit } from './order-views.ts'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
export const isUuid = (value: string) => UUID.test(value)

const orderColumns = {
  orderedAt: [orders.orderedAt, orders.createdAt],
  displayId: [orders.displayId],
  total: [orders.total],
} as const

/** The tenant's orders matching the filters; see docs/orders.md for `q` and the ordering. */
export async function listOrders(db: Db, tenantId: string, query: OrderListQuery) {
  const where = whereAll([
    eq(orders.tenantId, tenantId),
    deletedFilter(orders.deletedAt, query.deleted),
    query.projectId ? eq(orders.projectId, query.projectId) : undefined,
    query.startDate ? gte(orders.orderedAt, query.startDate) : undefined,
    query.endDate ? lte(orders.orderedAt, query.endDate) : undefined,
    query.q ? like(orders.searchText, likePattern(query.q.toLowerCase())) : undefined,
    query.productType
      ? exists(
          db
            .select({ one: sql`1` })
            .from(orderItems)
            .innerJoin(products, eq(products.id, orderItems.productId))
            .where(and(eq(orderItems.orderId, orders.id), eq(products.productType, query.productType))),
        )
      : undefined,
  ])
  const countAll = async () => (await db.select({ value: count() }).from(orders).where(where))[0]?.value ?? 0
  const sort = ordering(query.order, ...orderColumns[query.orderField], orders.id)
  if (query.q) {
    // A search matches few rows and costs one trigram scan: count them in the same scan.
    const rows = await db
      .select(withTotal)
      .from(orders)
      .where(where)
      .orderBy(...sort)
      .limit(query.take)
      .offset(offsetOf(query))
    const itemCount = rows[0]?.fullCount ?? (query.page > 1 ? await countAll() : 0)
    return { items: await assembleOrders(db, rows), itemCount }
  }
  // The count runs while the page and its relations load.
  const counting = countAll()
  counting.catch(() => {}) // awaited below; this only keeps an early failure from going unhandled
  const rows = await db
    .select()
    .from(orders)
    .where(where)
    .orderBy(...sort)
    .limit(query.take)
    .offset(offsetOf(query))
  const items = await assembleOrders(db, rows)
  return { items, itemCount: await counting }
}

const withTotal = {
  ...getTableColumns(orders),
  fullCount: sql<number>`(count(*) over ())::int`.as('full_count'),
}

/** One order of the tenant, or undefined: another tenant's order is as absent as a missing one. */
export async function findOrder(db: Db, tenantId: string, orderId: string) {
  if (!isUuid(orderId)) return undefined
  const rows = await db
    .select()
    .from(orders)
    .where(and(eq(orders.id, orderId), eq(orders.tenantId, tenantId), isNull(orders.deletedAt)))
  const [order] = await assembleOrders(db, rows)
  return order
}

export async function listKits(db: Db, tenantId: string, query: KitListQuery) {
  const where = whereAll([
    eq(kits.tenantId, tenantId),
    deletedFilter(kits.deletedAt, query.deleted),
    query.orderId ? eq(kits.orderId, query.orderId) : undefined,
    query.projectId ? eq(kits.projectId, query.projectId) : undefined,
    query.serial ? eq(kits.serial, query.serial) : undefined,
    query.status ? eq(kits.status, query.status) : undefined,
    query.q ? ilike(kits.serial, likePattern(query.q)) : undefined,
  ])
  const column = query.orderField === 'serial' ? kits.serial : kits.createdAt
  const [rows, [total]] = await Promise.all([
    db
      .select()
      .from(kits)
      .where(where)
      .orderBy(...ordering(query.order, column, kits.id))
      .limit(query.take)
      .offset(offsetOf(query)),
    db.select({ value: count() }).from(kits).where(where),
  ])
  return { items: rows.map(toKit), itemCount: total?.value ?? 0 }
}
