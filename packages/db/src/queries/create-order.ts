import { randomBytes } from 'node:crypto'
import type { CreateOrderBody, EmailOutboxPayload, Order, OrderEmailData } from '@dispatch/contracts'
import { and, eq, gte, inArray, isNull, sql } from 'drizzle-orm'
import type { Db } from '../client.ts'
import { addresses } from '../schema/addresses.ts'
import { channels } from '../schema/channels.ts'
import { kits } from '../schema/kits.ts'
import { orderIdempotencyKeys } from '../schema/order-idempotency-keys.ts'
import { orderItems } from '../schema/order-items.ts'
import { orders } from '../schema/orders.ts'
import { OUTBOX_NOTIFY_CHANNEL, outbox } from '../schema/outbox.ts'
import { type ProductRow, products } from '../schema/products.ts'
import { projects } from '../schema/projects.ts'
import { type Executor, pgError } from './executor.ts'
import { claimIdempotencyKey, type IdempotencyClaim, IdempotencyKeyInFlight } from './order-idempotency.ts'
import { assembleOrders } from './order-views.ts'
import { isUuid } from './orders.ts'

export type OrderRejectionCode =
  | 'VALIDATION_ERROR'
  | 'INVALID_REFERENCE'
  | 'OUT_OF_STOCK'
  | 'KIT_SERIAL_TAKEN'

/** A rule the order breaks: the transaction rolls back and the caller answers with `code`. */
export class OrderRejected extends Error {
  readonly code: OrderRejectionCode
  constructor(code: OrderRejectionCode, message: string) {
    super(message)
    this.code = code
  }
}

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

const serialsTaken = (serials: string[]) =>
  new OrderRejected(
    'KIT_SERIAL_TAKEN',
    `Kit serial${serials.length > 1 ? 's' : ''} ${serials.map((s) => `"${s}"`).join(', ')} already registered`,
  )

const missing = (what: string, id: string | number) =>
  new OrderRejected('INVALID_REFERENCE', `${what} ${JSON.stringify(id)} does not exist`)

/** Other tenants' records are reported exactly as missing ones: nothing about them leaks. */
async function checkReferences(tx: Executor, tenantId: string, body: CreateOrderBody) {
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
async function decrementStock(
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

async function queueOrderEmails(
  tx: Executor,
  order: Order,
  channel: { sendPartnerEmail: boolean; sendBmeEmail: boolean; name: string },
  partnerEmail: string | null,
  input: CreateOrderInput,
) {
  const data: OrderEmailData = {
    orderId: order.id,
    displayId: order.displayId,
    orderedAt: order.orderedAt,
    total: order.total,
    projectName: order.project.name,
    channelName: channel.name,
    partnerName: order.partnerName,
    tenantId: order.tenantId,
    items: order.orderItems.map((i) => ({
      productName: i.product.name,
      quantity: i.quantity,
      price: i.price,
      kitSerials: i.kitSerials,
    })),
  }
  const emails: EmailOutboxPayload[] = []
  if (channel.sendPartnerEmail && partnerEmail)
    emails.push({ to: partnerEmail, template: 'order.created.partner', data })
  if (channel.sendBmeEmail) emails.push({ to: input.bmeEmail, template: 'order.created.bme', data })
  if (emails.length === 0) return
  await tx.insert(outbox).values(emails.map((payload) => ({ topic: 'email', payload, createdAt: input.now })))
  await tx.execute(sql`select pg_notify(${OUTBOX_NOTIFY_CHANNEL}, '')`)
}
