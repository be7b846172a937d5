import { randomBytes } from 'node:crypto'
import type { CreateOrderBody, Order } from '@dispatch/contracts'
import { and, eq, inArray } from 'drizzle-orm'
import type { Db } from '../client.ts'
import { kits } from '../schema/kits.ts'
import { orderIdempotencyKeys } from '../schema/order-idempotency-keys.ts'
import { orderItems } from '../schema/order-items.ts'
import { orders } from '../schema/orders.ts'
import type { ProductRow } from '../schema/products.ts'
import { pgError } from './executor.ts'
import { checkReferences, decrementStock, serialsTaken } from './order-checks.ts'
import { claimIdempotencyKey, type IdempotencyClaim, IdempotencyKeyInFlight } from './order-idempotency.ts'
import { queueOrderEmails } from './order-outbox.ts'
import { OrderRejected } from './order-rejected.ts'
import { assembleOrders } from './order-views.ts'

export { OrderRejected, type OrderRejectionCode } from './order-rejected.ts'

export interface CreateOrderInput {
  tenantId: string
  apiKeyId: string
  body: CreateOrderBody
  now: Date
  /** Where the BME copy goes when the channel asks for it. */
  bmeEmail: string
  idempotency?: { key: string; requestHash: string } | undefined
}

export type CreateOrderResult =
  | { outcome: 'created'; order: Order }
  | Exclude<IdempotencyClaim, { outcome: 'claimed' }>
  | { outcome: 'in_flight' }

/** Kit serials made up for channels with `autoGenerateKit`: `KIT-` and 10 unambiguous characters. */
const SERIAL_ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ'
export const generateKitSerial = () =>
  `KIT-${[...randomBytes(10)].map((b) => SERIAL_ALPHABET[b % 32]).join('')}`

/**
 * Registers an order in one transaction: reference checks, atomic stock decrements, kit records,
 * the order, its items, the e-mail outbox rows and the idempotency record commit together or not at
 * all. Throws `OrderRejected` when a rule is broken.
 */
export async function createOrder(db: Db, input: CreateOrderInput): Promise<CreateOrderResult> {
  const given = input.body.orderItems.flatMap((i) => i.kitSerials)
  const duplicate = given.find((s, i) => given.indexOf(s) !== i)
  if (duplicate) throw new OrderRejected('VALIDATION_ERROR', `Kit serial "${duplicate}" is given twice`)

  try {
    return await insertOrder(db, input)
  } catch (error) {
    if (error instanceof IdempotencyKeyInFlight) return { outcome: 'in_flight' }
    throw error
  }
}

async function insertOrder(db: Db, input: CreateOrderInput): Promise<CreateOrderResult> {
  const { body, tenantId } = input
  return db.transaction(async (tx) => {
    if (input.idempotency) {
      const claim = await claimIdempotencyKey(tx, input.apiKeyId, input.idempotency, input.now)
      if (claim.outcome !== 'claimed') return claim
    }
    const { channel, project, productsById } = await checkReferences(tx, tenantId, body)

    const items = body.orderItems.map((item, index) => {
      const product = productsById.get(item.productId) as ProductRow
      let serials = item.kitSerials
      if (product.productType !== 'KIT' && serials.length > 0) {
        throw new OrderRejected(
          'VALIDATION_ERROR',
          `orderItems[${index}]: kit serials are only for KIT products, and ${product.displayId} is a ${product.productType}`,
        )
      }
      if (product.productType === 'KIT' && serials.length > 0 && serials.length !== item.quantity) {
        throw new OrderRejected(
          'VALIDATION_ERROR',
          `orderItems[${index}]: give either no kit serials or exactly ${item.quantity} (one per unit), not ${serials.length}`,
        )
      }
      if (product.productType === 'KIT' && serials.length === 0 && channel.autoGenerateKit) {
        serials = Array.from({ length: item.quantity }, generateKitSerial)
      }
      return { ...item, product, serials }
    })

    const allSerials = items.flatMap((i) => i.serials)
    if (allSerials.length > 0) {
      const taken = await tx
        .select({ serial: kits.serial })
        .from(kits)
        .where(inArray(kits.serial, allSerials))
      if (taken.length > 0) throw serialsTaken(taken.map((t) => t.serial))
    }

    const [order] = await tx
      .insert(orders)
      .values({
        tenantId,
        userId: input.apiKeyId,
        channelId: channel.id,
        projectId: project.id,
        addressId: body.order.addressId ?? null,
        orderedAt: input.now.toISOString().slice(0, 10),
        total: items.reduce((sum, i) => sum + i.price * i.quantity, 0),
        notes: body.order.notes ?? null,
        invoiceNo: body.order.invoiceNo ?? null,
        partnerName: body.order.partnerName ?? null,
        createdAt: input.now,
        updatedAt: input.now,
      })
      .returning()
    if (!order) throw new Error('insert into orders returned no row')
    const itemRows = await tx
      .insert(orderItems)
      .values(
        items.map((i) => ({
          orderId: order.id,
          productId: i.productId,
          quantity: i.quantity,
          price: i.price,
          metadata: i.metadata ?? null,
        })),
      )
      .returning({ id: orderItems.id })
    const kitValues = items.flatMap((item, index) =>
      item.serials.map((serial) => ({
        serial,
        tenantId,
        orderId: order.id,
        orderItemId: itemRows[index]?.id as string,
        projectId: project.id,
        createdAt: input.now,
      })),
    )
    if (kitValues.length > 0) {
      // A concurrent order that took a serial since the check above commits first: its unique index wins.
      await tx
        .insert(kits)
        .values(kitValues)
        .catch((error: unknown) => {
          if (pgError(error).code === '23505') throw serialsTaken(allSerials)
          throw error
        })
    }

    const [full] = await assembleOrders(tx, [order])
    if (!full) throw new Error('the order just inserted was not found')
    await queueOrderEmails(tx, full, channel, project.externalEmail, input)
    // Last, so the product rows every concurrent order for them waits on stay locked only briefly.
    const stock = await decrementStock(tx, items)
    for (const item of full.orderItems) item.product.stock = stock.get(item.productId) ?? item.product.stock
    if (input.idempotency) {
      await tx
        .update(orderIdempotencyKeys)
        .set({ orderId: order.id, response: full })
        .where(
          and(
            eq(orderIdempotencyKeys.apiKeyId, input.apiKeyId),
            eq(orderIdempotencyKeys.key, input.idempotency.key),
          ),
        )
    }
    return { outcome: 'created', order: full }
  })
}
