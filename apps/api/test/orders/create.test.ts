import { Order } from '@dispatch/contracts'
import Value from 'typebox/value'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { asAdmin, buildTestApp, createWorld, expectError, type TestApp, type TestWorld } from '../helpers.ts'
import {
  createChannel,
  createProduct,
  createProject,
  orderBody,
  postOrder,
  type SeededTenant,
  seedTenant,
  serials,
} from './fixtures.ts'

let world: TestWorld
let app: TestApp
let t: SeededTenant
beforeAll(async () => {
  world = await createWorld()
  app = await buildTestApp(world)
  t = await seedTenant(app, 'acme')
})
afterAll(async () => {
  await app?.close()
  await world?.close()
})

const stockOf = async (id: string) => (await world.sql`select stock from products where id = ${id}`)[0]?.stock
const orderCount = async () => Number((await world.sql`select count(*) from orders`)[0]?.count)
const post = (payload: object, headers: Record<string, string> = {}) =>
  postOrder(app, t.key, payload, headers)

describe('POST /api/third-party/orders: a valid order', () => {
  it('is 201 with the full Order: PENDING, UNPAID, today, total, displayId, items with serials', async () => {
    const kitSerials = serials(2)
    const before = await stockOf(t.kit.id)
    const res = await post(
      orderBody(t, {
        order: { partnerName: 'Lab North', invoiceNo: 'INV-1', notes: 'fragile', addressId: undefined },
        orderItems: [
          {
            productId: t.kit.id,
            price: 2500,
            quantity: 2,
            kitSerials,
            metadata: { customMessage: 'hi', customMessageFee: 5 },
          },
          { productId: t.probiotic.id, price: 900, quantity: 3, kitSerials: [] },
        ],
      }),
    )
    expect(res.statusCode, res.body).toBe(201)
    const order = res.json()
    expect(Value.Check(Order, order)).toBe(true)
    expect(order).toMatchObject({
      orderStatus: 'PENDING',
      paymentStatus: 'UNPAID',
      orderedAt: new Date().toISOString().slice(0, 10),
      total: 2 * 2500 + 3 * 900,
      tenantId: 'acme',
      projectId: t.project.id,
      channelId: t.channel.id,
      addressId: null,
      partnerName: 'Lab North',
      invoiceNo: 'INV-1',
      notes: 'fragile',
      discountCodes: [],
    })
    expect(order.displayId).toMatch(/^ORD-\d{8}$/)
    expect(order.chanel.id).toBe(t.channel.id)
    expect(order.project.id).toBe(t.project.id)
    expect(order.orderItems).toHaveLength(2)
    const kitItem = order.orderItems.find((i: { productId: string }) => i.productId === t.kit.id)
    expect(kitItem.kitSerials.sort()).toEqual([...kitSerials].sort())
    expect(kitItem.metadata).toEqual({ customMessage: 'hi', customMessageFee: 5 })
    expect(kitItem.product.id).toBe(t.kit.id)
    expect(await stockOf(t.kit.id)).toBe(before - 2)
    expect(kitItem.product.stock).toBe(before - 2)
    const kits =
      await world.sql`select status, order_item_id from kits where serial in ${world.sql(kitSerials)}`
    expect(kits.map((k) => k.status)).toEqual(['UNACTIVATED', 'UNACTIVATED'])
    expect(kits.every((k) => k.order_item_id === kitItem.id)).toBe(true)
  })

  it('accepts a KIT item without serials (no kits) when the channel does not generate them', async () => {
    const res = await post(
      orderBody(t, { orderItems: [{ productId: t.kit.id, price: 1, quantity: 2, kitSerials: [] }] }),
    )
    expect(res.statusCode, res.body).toBe(201)
    expect(res.json().orderItems[0].kitSerials).toEqual([])
  })

  it('generates one serial per unit when the channel has autoGenerateKit', async () => {
    const auto = await seedTenant(app, 'auto', { channel: { autoGenerateKit: true } })
    const res = await postOrder(
      app,
      auto.key,
      orderBody(auto, { orderItems: [{ productId: auto.kit.id, price: 1, quantity: 3, kitSerials: [] }] }),
    )
    expect(res.statusCode, res.body).toBe(201)
    const generated = res.json().orderItems[0].kitSerials as string[]
    expect(generated).toHaveLength(3)
    expect(new Set(generated).size).toBe(3)
    for (const s of generated) expect(s).toMatch(/^KIT-[0-9A-Z]{10}$/)
    const rows = await world.sql`select count(*) from kits where serial in ${world.sql(generated)}`
    expect(Number(rows[0]?.count)).toBe(3)
  })
})

describe('POST /api/third-party/orders: refused, with nothing written', () => {
  it.each([
    ['no body order', { orderItems: [] }, /order/],
    ['no items', { order: { projectId: 'x', channelId: 'y' }, orderItems: [] }, /orderItems/],
    [
      'an unknown property',
      { order: { projectId: 'x', channelId: 'y', color: 'red' }, orderItems: [] },
      /color|orderItems/,
    ],
    [
      'addressId as a string',
      { order: { projectId: 'x', channelId: 'y', addressId: '12' }, orderItems: [] },
      /addressId|orderItems/,
    ],
  ])('%s is 400', async (_name, payload, message) => {
    expectError(await post(payload), 400, 'VALIDATION_ERROR', message)
  })

  it.each([
    ['quantity 0', { quantity: 0 }, /quantity/],
    ['a negative price', { price: -1 }, /price/],
    ['a fractional quantity', { quantity: 1.5 }, /quantity/],
    ['no kitSerials', { kitSerials: undefined }, /kitSerials/],
    ['a malformed serial', { kitSerials: ['bad serial!'] }, /kitSerials/],
  ])('an item with %s is 400', async (_name, change, message) => {
    const item = { productId: t.kit.id, price: 1, quantity: 1, kitSerials: serials(1), ...change }
    expectError(await post(orderBody(t, { orderItems: [item] })), 400, 'VALIDATION_ERROR', message)
  })

  it('refuses text Postgres cannot store (a NUL character) with a 400, not a 500', async () => {
    expectError(await post(orderBody(t, { order: { notes: 'a\u0000b' } })), 400, 'VALIDATION_ERROR', /notes/)
    const item = {
      productId: t.kit.id,
      price: 1,
      quantity: 1,
      kitSerials: [],
      metadata: { customMessage: '\u0000' },
    }
    expectError(await post(orderBody(t, { orderItems: [item] })), 400, 'VALIDATION_ERROR', /customMessage/)
  })

  it('refuses serials that do not match the quantity, serials on other products, and repeated serials', async () => {
    const before = await orderCount()
    expectError(
      await post(
        orderBody(t, {
          orderItems: [{ productId: t.kit.id, price: 1, quantity: 3, kitSerials: serials(2) }],
        }),
      ),
      400,
      'VALIDATION_ERROR',
      /exactly 3/,
    )
    expectError(
      await post(
        orderBody(t, {
          orderItems: [{ productId: t.probiotic.id, price: 1, quantity: 1, kitSerials: serials(1) }],
        }),
      ),
      400,
      'VALIDATION_ERROR',
      /only for KIT products/,
    )
    const [s] = serials(1)
    expectError(
      await post(
        orderBody(t, {
          orderItems: [
            { productId: t.kit.id, price: 1, quantity: 1, kitSerials: [s] },
            { productId: t.kit.id, price: 1, quantity: 1, kitSerials: [s] },
          ],
        }),
      ),
      400,
      'VALIDATION_ERROR',
      /given twice/,
    )
    expect(await orderCount()).toBe(before)
  })

  it('refuses references that do not hold: 422 INVALID_REFERENCE', async () => {
    const otherChannel = await createChannel(app, { name: 'Other' })
    const otherProject = await createProject(app, 'acme', otherChannel.id)
    const otherProduct = await createProduct(app, 'acme', otherChannel.id, { productType: 'BUNDLE' })
    const inactive = await createProduct(app, 'acme', t.channel.id, { active: false, productType: 'BUNDLE' })
    const deleted = await createProduct(app, 'acme', t.channel.id, { productType: 'BUNDLE' })
    await app.inject({ method: 'DELETE', url: `/api/admin/products/${deleted.id}`, headers: asAdmin() })
    const item = (productId: string) => [{ productId, price: 1, quantity: 1, kitSerials: [] }]
    const cases: [object, RegExp][] = [
      [{ order: { projectId: '00000000-0000-4000-8000-000000000000' } }, /order\.projectId/],
      [{ order: { projectId: 'not-a-uuid' } }, /order\.projectId/],
      [{ order: { channelId: '00000000-0000-4000-8000-000000000000' } }, /order\.channelId/],
      [{ order: { projectId: otherProject.id } }, /does not belong to channel/],
      [{ order: { addressId: 99999 } }, /order\.addressId/],
      [{ orderItems: item('00000000-0000-4000-8000-000000000000') }, /orderItems\[0\]\.productId/],
      [{ orderItems: item(otherProduct.id) }, /does not belong to channel/],
      [{ orderItems: item(inactive.id) }, /not active/],
      [{ orderItems: item(deleted.id) }, /does not exist/],
    ]
    const before = await orderCount()
    for (const [overrides, message] of cases) {
      expectError(await post(orderBody(t, overrides)), 422, 'INVALID_REFERENCE', message)
    }
    expect(await orderCount()).toBe(before)
  })

  it('refuses an order short of stock (409 OUT_OF_STOCK) and takes no stock at all', async () => {
    const scarce = await createProduct(app, 'acme', t.channel.id, { stock: 2, productType: 'PROBIOTIC' })
    const kitBefore = await stockOf(t.kit.id)
    const res = await post(
      orderBody(t, {
        orderItems: [
          { productId: t.kit.id, price: 1, quantity: 1, kitSerials: [] },
          { productId: scarce.id, price: 1, quantity: 2, kitSerials: [] },
          { productId: scarce.id, price: 1, quantity: 1, kitSerials: [] },
        ],
      }),
    )
    expectError(res, 409, 'OUT_OF_STOCK', new RegExp(scarce.displayId))
    expect(await stockOf(scarce.id)).toBe(2)
    expect(await stockOf(t.kit.id)).toBe(kitBefore)
  })

  it('refuses a serial already registered (409 KIT_SERIAL_TAKEN), naming it', async () => {
    const [taken] = serials(1)
    const first = await post(
      orderBody(t, { orderItems: [{ productId: t.kit.id, price: 1, quantity: 1, kitSerials: [taken] }] }),
    )
    expect(first.statusCode).toBe(201)
    const before = await stockOf(t.kit.id)
    const again = await post(
      orderBody(t, {
        orderItems: [{ productId: t.kit.id, price: 1, quantity: 2, kitSerials: [...serials(1), taken] }],
      }),
    )
    expectError(again, 409, 'KIT_SERIAL_TAKEN', new RegExp(taken as string))
    expect(await stockOf(t.kit.id)).toBe(before)
  })
})

describe('concurrent orders', () => {
  it('for the last unit of stock: exactly one succeeds', async () => {
    const last = await createProduct(app, 'acme', t.channel.id, { stock: 1, productType: 'PROBIOTIC' })
    const body = orderBody(t, { orderItems: [{ productId: last.id, price: 1, quantity: 1, kitSerials: [] }] })
    const results = await Promise.all(Array.from({ length: 4 }, () => post(body)))
    const codes = results.map((r) => r.statusCode).sort()
    expect(codes).toEqual([201, 409, 409, 409])
    for (const r of results.filter((r) => r.statusCode === 409)) expectError(r, 409, 'OUT_OF_STOCK')
    expect(await stockOf(last.id)).toBe(0)
  })

  it('for the same kit serial: exactly one succeeds', async () => {
    const [serial] = serials(1)
    const body = orderBody(t, {
      orderItems: [{ productId: t.kit.id, price: 1, quantity: 1, kitSerials: [serial] }],
    })
    const results = await Promise.all(Array.from({ length: 4 }, () => post(body)))
    expect(results.map((r) => r.statusCode).sort()).toEqual([201, 409, 409, 409])
    for (const r of results.filter((r) => r.statusCode === 409)) expectError(r, 409, 'KIT_SERIAL_TAKEN')
    const rows = await world.sql`select count(*) from kits where serial = ${serial as string}`
    expect(Number(rows[0]?.count)).toBe(1)
  })
})
