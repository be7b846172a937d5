import type { CreateOrderBody } from '@dispatch/contracts'
import { and, eq, gte, inArray, isNull, sql } from 'drizzle-orm'
import { addresses } from '../schema/addresses.ts'
import { channels } from '../schema/channels.ts'
import { type ProductRow, products } from '../schema/products.ts'
import { projects } from '../schema/projects.ts'
import type { Executor } from './executor.ts'
import { OrderRejected } from './order-rejected.ts'
import { isUuid } from './orders.ts'

export const serialsTaken = (serials: string[]) =>
  new OrderRejected(
    'KIT_SERIAL_TAKEN',
    `Kit serial${serials.length > 1 ? 's' : ''} ${serials.map((s) => `"${s}"`).join(', ')} already registered`,
  )

const missing = (what: string, id: string | number) =>
  new OrderRejected('INVALID_REFERENCE', `${what} ${JSON.stringify(id)} does not exist`)

/** Other tenants' records are reported exactly as missing ones: nothing about them leaks. */
export async function checkReferences(tx: Executor, tenantId: string, body: CreateOrderBody) {
  const { channelId, projectId, addressId } = body.order
  const [channel] = isUuid(channelId)
    ? await tx
        .select()
        .from(channels)
        .where(and(eq(channels.id, channelId), isNull(channels.deletedAt)))
    : []
  if (!channel) throw missing('order.channelId', channelId)
  const [project] = isUuid(projectId)
    ? await tx
        .select()
        .from(projects)
        .where(and(eq(projects.id, projectId), eq(projects.tenantId, tenantId), isNull(projects.deletedAt)))
    : []
  if (!project) throw missing('order.projectId', projectId)
  if (project.channelId !== channel.id) {
    throw new OrderRejected(
      'INVALID_REFERENCE',
      `Project ${project.displayId} does not belong to channel ${channel.name}`,
    )
  }
  if (addressId !== undefined) {
    const [address] = await tx
      .select({ id: addresses.id })
      .from(addresses)
      .where(and(eq(addresses.id, addressId), eq(addresses.tenantId, tenantId)))
    if (!address) throw missing('order.addressId', addressId)
  }
  const ids = [...new Set(body.orderItems.map((i) => i.productId))]
  const rows = ids.every(isUuid)
    ? await tx
        .select()
        .from(products)
        .where(and(inArray(products.id, ids), eq(products.tenantId, tenantId), isNull(products.deletedAt)))
    : []
  const productsById = new Map(rows.map((p) => [p.id, p]))
  body.orderItems.forEach((item, index) => {
    const product = productsById.get(item.productId)
    if (!product) throw missing(`orderItems[${index}].productId`, item.productId)
    if (!product.active) {
      throw new OrderRejected(
        'INVALID_REFERENCE',
        `orderItems[${index}]: product ${product.displayId} is not active`,
      )
    }
    if (product.channelId !== channel.id) {
      throw new OrderRejected(
        'INVALID_REFERENCE',
        `orderItems[${index}]: product ${product.displayId} does not belong to channel ${channel.name}`,
      )
    }
  })
  return { channel, project, productsById }
}

/**
 * Takes the stock of every product in one conditional UPDATE each, in id order (two orders for the
 * same products never deadlock). A product short of stock matches no row: the order is refused.
 * Returns each product's stock left.
 */
export async function decrementStock(
  tx: Executor,
  items: { productId: string; quantity: number; product: ProductRow }[],
) {
  const left = new Map<string, number>()
  const wanted = new Map<string, number>()
  for (const i of items) wanted.set(i.productId, (wanted.get(i.productId) ?? 0) + i.quantity)
  for (const [id, quantity] of [...wanted].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const [row] = await tx
      .update(products)
      .set({ stock: sql`${products.stock} - ${quantity}` })
      .where(and(eq(products.id, id), gte(products.stock, quantity)))
      .returning({ stock: products.stock })
    if (!row) {
      const product = items.find((i) => i.productId === id)?.product
      throw new OrderRejected(
        'OUT_OF_STOCK',
        `Product ${product?.displayId ?? id} has fewer than ${quantity} in stock`,
      )
    }
    left.set(id, row.stock)
  }
  return left
}
