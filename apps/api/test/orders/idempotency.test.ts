import { hashApiKey } from '@dispatch/db'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  activeKey,
  buildTestApp,
  createWorld,
  expectError,
  type TestApp,
  type TestWorld,
} from '../helpers.ts'
import { ORDER_SCOPES, orderBody, postOrder, type SeededTenant, seedTenant, serials } from './fixtures.ts'

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

const ordersWith = async (invoiceNo: string) =>
  Number((await world.sql`select count(*) from orders where invoice_no = ${invoiceNo}`)[0]?.count)
const stockOf = async (id: string) => (await world.sql`select stock from products where id = ${id}`)[0]?.stock
let n = 0
const fresh = () => {
  n += 1
  return { key: `order-key-${n}`, invoiceNo: `INV-IDEM-${n}` }
}

describe('Idempotency-Key on POST /orders', () => {
  it('replays the first response for the same body: same order, Idempotent-Replayed, nothing new', async () => {
    const { key, invoiceNo } = fresh()
    const body = orderBody(t, { order: { invoiceNo } })
    const first = await postOrder(app, t.key, body, { 'idempotency-key': key })
    expect(first.statusCode).toBe(201)
    expect(first.headers['idempotent-replayed']).toBeUndefined()
    const stock = await stockOf(t.kit.id)
    const again = await postOrder(app, t.key, body, { 'idempotency-key': key })
    expect(again.statusCode).toBe(201)
    expect(again.headers['idempotent-replayed']).toBe('true')
    expect(again.json()).toEqual(first.json())
    expect(await ordersWith(invoiceNo)).toBe(1)
    expect(await stockOf(t.kit.id)).toBe(stock)
  })

  it('takes the same body with its keys in another order as the same request', async () => {
    const { key, invoiceNo } = fresh()
    const body = orderBody(t, { order: { invoiceNo } })
    expect((await postOrder(app, t.key, body, { 'idempotency-key': key })).statusCode).toBe(201)
    const reordered = {
      orderItems: body.orderItems,
      order: Object.fromEntries(Object.entries(body.order).reverse()),
    }
    const again = await postOrder(app, t.key, reordered, { 'idempotency-key': key })
    expect(again.headers['idempotent-replayed']).toBe('true')
    expect(await ordersWith(invoiceNo)).toBe(1)
  })

  it('refuses the key with a different body: 422 IDEMPOTENCY_KEY_REUSED', async () => {
    const { key, invoiceNo } = fresh()
    expect(
      (await postOrder(app, t.key, orderBody(t, { order: { invoiceNo } }), { 'idempotency-key': key }))
        .statusCode,
    ).toBe(201)
    const other = await postOrder(app, t.key, orderBody(t, { order: { invoiceNo: `${invoiceNo}-b` } }), {
      'idempotency-key': key,
    })
    expectError(other, 422, 'IDEMPOTENCY_KEY_REUSED')
    expect(await ordersWith(`${invoiceNo}-b`)).toBe(0)
  })

  it('keeps keys per API key', async () => {
    const { key, invoiceNo } = fresh()
    const other = (await activeKey(app, { tenantId: 'acme', scopes: ORDER_SCOPES })).key
    expect(
      (await postOrder(app, t.key, orderBody(t, { order: { invoiceNo } }), { 'idempotency-key': key }))
        .statusCode,
    ).toBe(201)
    const res = await postOrder(app, other, orderBody(t, { order: { invoiceNo } }), {
      'idempotency-key': key,
    })
    expect(res.statusCode).toBe(201)
    expect(res.headers['idempotent-replayed']).toBeUndefined()
    expect(await ordersWith(invoiceNo)).toBe(2)
  })

  it('does not keep a key whose request failed: the corrected retry goes through', async () => {
    const { key, invoiceNo } = fresh()
    const bad = orderBody(t, {
      order: { invoiceNo },
      orderItems: [{ productId: t.kit.id, price: 1, quantity: 10_000, kitSerials: [] }],
    })
    expectError(await postOrder(app, t.key, bad, { 'idempotency-key': key }), 400, 'VALIDATION_ERROR')
    const noStock = orderBody(t, {
      order: { invoiceNo },
      orderItems: [{ productId: t.kit.id, price: 1, quantity: 1000, kitSerials: [] }],
    })
    expectError(await postOrder(app, t.key, noStock, { 'idempotency-key': key }), 409, 'OUT_OF_STOCK')
    const good = orderBody(t, { order: { invoiceNo } })
    expect((await postOrder(app, t.key, good, { 'idempotency-key': key })).statusCode).toBe(201)
  })

  it('forgets a key after 24 hours', async () => {
    const { key, invoiceNo } = fresh()
    expect(
      (await postOrder(app, t.key, orderBody(t, { order: { invoiceNo } }), { 'idempotency-key': key }))
        .statusCode,
    ).toBe(201)
    await world.sql`update order_idempotency_keys set created_at = now() - interval '25 hours' where key = ${key}`
    const later = await postOrder(app, t.key, orderBody(t, { order: { invoiceNo: `${invoiceNo}-b` } }), {
      'idempotency-key': key,
    })
    expect(later.statusCode).toBe(201)
    expect(later.headers['idempotent-replayed']).toBeUndefined()
  })

  it('refuses an empty or over-long key', async () => {
    expectError(
      await postOrder(app, t.key, orderBody(t), { 'idempotency-key': 'x'.repeat(256) }),
      400,
      'VALIDATION_ERROR',
      /idempotency-key/i,
    )
    expectError(
      await postOrder(app, t.key, orderBody(t), { 'idempotency-key': '' }),
      400,
      'VALIDATION_ERROR',
      /idempotency-key/i,
    )
    expect(
      (await postOrder(app, t.key, orderBody(t), { 'idempotency-key': 'k'.repeat(255) })).statusCode,
    ).toBe(201)
  })

  it('tells a duplicate whose first request is still in flight to retry: 409 with Retry-After', async () => {
    const { key, invoiceNo } = fresh()
    const [row] = await world.sql`select id from api_keys where key_hash = ${hashApiKey(t.key)}`
    // Another request holds the key: its transaction has claimed it and not committed yet.
    let release = () => {}
    const held = new Promise<void>((resolve) => {
      release = resolve
    })
    let claimed = () => {}
    const claiming = new Promise<void>((resolve) => {
      claimed = resolve
    })
    const holder = world.sql
      .begin(async (tx) => {
        await tx`insert into order_idempotency_keys (api_key_id, key, request_hash) values (${row?.id}, ${key}, 'x')`
        claimed()
        await held
        throw new Error('roll back')
      })
      .catch(() => {})
    await claiming
    const res = await postOrder(app, t.key, orderBody(t, { order: { invoiceNo } }), {
      'idempotency-key': key,
    })
    expectError(res, 409, 'IDEMPOTENCY_REQUEST_IN_PROGRESS', /still being processed/)
    expect(res.headers['retry-after']).toBe('1')
    release()
    await holder
    // Once the holder rolled back, the key is free: the retry creates the order.
    const retry = await postOrder(app, t.key, orderBody(t, { order: { invoiceNo } }), {
      'idempotency-key': key,
    })
    expect(retry.statusCode).toBe(201)
    expect(await ordersWith(invoiceNo)).toBe(1)
  })

  it('creates one order for concurrent duplicates; the others replay or are told to retry', async () => {
    const { key, invoiceNo } = fresh()
    const body = orderBody(t, {
      order: { invoiceNo },
      orderItems: [{ productId: t.kit.id, price: 1, quantity: 1, kitSerials: serials(1) }],
    })
    const results = await Promise.all(
      Array.from({ length: 4 }, () => postOrder(app, t.key, body, { 'idempotency-key': key })),
    )
    for (const r of results) {
      if (r.statusCode === 409) {
        expectError(r, 409, 'IDEMPOTENCY_REQUEST_IN_PROGRESS')
        expect(r.headers['retry-after']).toBe('1')
      } else expect(r.statusCode).toBe(201)
    }
    const created = results.filter(
      (r) => r.statusCode === 201 && r.headers['idempotent-replayed'] === undefined,
    )
    expect(created).toHaveLength(1)
    expect(await ordersWith(invoiceNo)).toBe(1)
  })
})
