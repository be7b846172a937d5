import { KitList, type Order, OrderList, SingleOrder } from '@dispatch/contracts'
import Value from 'typebox/value'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildTestApp, createWorld, expectError, type TestApp, type TestWorld } from '../helpers.ts'
import { createProject, get, placeOrder, type SeededTenant, seedTenant, serials } from './fixtures.ts'

let world: TestWorld
let app: TestApp
let t: SeededTenant
/** Orders placed on three days, oldest first. */
const placed: Order[] = []
let secondProject: { id: string }

beforeAll(async () => {
  world = await createWorld()
  app = await buildTestApp(world)
  t = await seedTenant(app, 'acme')
  secondProject = await createProject(app, 'acme', t.channel.id, { name: 'Second study' })
  placed.push(await placeOrder(app, t, { order: { invoiceNo: 'INV-Alpha-7', partnerName: 'Lab North' } }))
  placed.push(
    await placeOrder(app, t, {
      order: { projectId: secondProject.id, partnerName: 'Lab South' },
      orderItems: [{ productId: t.probiotic.id, price: 900, quantity: 3, kitSerials: [] }],
    }),
  )
  placed.push(await placeOrder(app, t, { order: { notes: 'rush' } }))
  // Spread the orders over three days, as if placed on 1, 2 and 3 March.
  for (const [i, o] of placed.entries()) {
    await world.sql`update orders set ordered_at = ${`2026-03-0${i + 1}`} where id = ${o.id}`
  }
})
afterAll(async () => {
  await app?.close()
  await world?.close()
})

const orders = (query = '') => get(app, t.key, `/api/third-party/orders${query}`)
const ids = (body: { data: { id: string }[] }) => body.data.map((o) => o.id)

describe('GET /api/third-party/orders', () => {
  it('answers one envelope with data of full Orders, quirks included', async () => {
    const res = await orders('?take=10')
    expect(res.statusCode).toBe(200)
    const body = res.json()
    expect(Value.Check(OrderList, body)).toBe(true)
    expect(Array.isArray(body)).toBe(false)
    expect(body).not.toHaveProperty('datas')
    expect(body).toMatchObject({
      page: 1,
      take: 10,
      itemCount: 3,
      pageCount: 1,
      hasPreviousPage: false,
      hasNextPage: false,
    })
    const first = body.data.find((o: Order) => o.id === placed[0]?.id)
    expect(first).toHaveProperty('chanel')
    expect(first).not.toHaveProperty('channel')
    expect(first.chanel.id).toBe(t.channel.id)
    expect(first.project.id).toBe(t.project.id)
    expect(first.orderItems[0].product.id).toBe(t.kit.id)
    expect(first.orderItems[0].kitSerials).toHaveLength(2)
    expect(first.orderedAt).toBe('2026-03-01')
    expect(first.invoiceNo).toBe('INV-Alpha-7')
  })

  it('returns one order by default, the newest (take 1, DESC)', async () => {
    const body = (await orders()).json()
    expect(body.take).toBe(1)
    expect(ids(body)).toEqual([placed[2]?.id])
    expect(body).toMatchObject({ itemCount: 3, pageCount: 3, hasNextPage: true, hasPreviousPage: false })
  })

  it('orders by orderedAt both ways, and by total', async () => {
    const all = placed.map((o) => o.id)
    expect(ids((await orders('?take=10&order=ASC')).json())).toEqual(all)
    expect(ids((await orders('?take=10&order=DESC')).json())).toEqual([...all].reverse())
    const totals = (await orders('?take=10&orderField=total&order=ASC'))
      .json()
      .data.map((o: Order) => o.total)
    expect(totals).toEqual([...totals].sort((a: number, b: number) => a - b))
  })

  it('filters by date range, inclusive at both ends', async () => {
    expect(ids((await orders('?take=10&order=ASC&startDate=2026-03-02&endDate=2026-03-03')).json())).toEqual([
      placed[1]?.id,
      placed[2]?.id,
    ])
    expect(ids((await orders('?take=10&startDate=2026-03-02&endDate=2026-03-02')).json())).toEqual([
      placed[1]?.id,
    ])
    expect(ids((await orders('?take=10&startDate=2026-03-04')).json())).toEqual([])
    expect(ids((await orders('?take=10&endDate=2026-03-01')).json())).toEqual([placed[0]?.id])
  })

  it('refuses a start after the end, and malformed dates', async () => {
    expectError(
      await orders('?startDate=2026-03-03&endDate=2026-03-01'),
      400,
      'VALIDATION_ERROR',
      /startDate/,
    )
    expectError(await orders('?startDate=2026-13-01'), 400, 'VALIDATION_ERROR', /startDate/)
    // Postgres has no year 0: refused as a bad date, not a database error.
    expectError(await orders('?startDate=0000-01-01'), 400, 'VALIDATION_ERROR', /startDate/)
    expectError(await orders('?endDate=0000-12-31'), 400, 'VALIDATION_ERROR', /endDate/)
    expectError(await orders('?endDate=03/01/2026'), 400, 'VALIDATION_ERROR', /endDate/)
  })

  it('filters by projectId and by productType', async () => {
    expect(ids((await orders(`?take=10&projectId=${secondProject.id}`)).json())).toEqual([placed[1]?.id])
    expect(ids((await orders('?take=10&productType=PROBIOTIC')).json())).toEqual([placed[1]?.id])
    expect(ids((await orders('?take=10&productType=BUNDLE')).json())).toEqual([])
    expectError(await orders('?projectId=nope'), 400, 'VALIDATION_ERROR', /projectId/)
  })

  it('searches displayId, invoiceNo and partnerName with q, case-insensitively and literally', async () => {
    expect(ids((await orders('?take=10&q=inv-alpha')).json())).toEqual([placed[0]?.id])
    expect(ids((await orders('?take=10&q=SOUTH')).json())).toEqual([placed[1]?.id])
    expect(ids((await orders(`?take=10&q=${placed[2]?.displayId}`)).json())).toEqual([placed[2]?.id])
    expect(ids((await orders('?take=10&q=%25')).json())).toEqual([])
  })

  it('counts search matches right on every page, past the end included', async () => {
    expect((await orders('?take=1&q=lab')).json()).toMatchObject({
      itemCount: 2,
      pageCount: 2,
      hasNextPage: true,
    })
    expect((await orders('?take=1&page=2&q=lab')).json()).toMatchObject({ itemCount: 2, hasNextPage: false })
    const past = (await orders('?take=1&page=5&q=lab')).json()
    expect(past).toMatchObject({
      page: 5,
      itemCount: 2,
      pageCount: 2,
      hasPreviousPage: true,
      hasNextPage: false,
      data: [],
    })
    expect((await orders('?take=1&q=no-such-order')).json()).toMatchObject({
      itemCount: 0,
      pageCount: 0,
      data: [],
    })
  })

  it('lists no soft-deleted order, except with deleted=true', async () => {
    const gone = await placeOrder(app, t)
    await world.sql`update orders set deleted_at = now() where id = ${gone.id}`
    expect(ids((await orders('?take=100')).json())).not.toContain(gone.id)
    expect(ids((await orders('?take=100&deleted=true')).json())).toEqual([gone.id])
    expectError(await get(app, t.key, `/api/third-party/orders/${gone.id}`), 404, 'NOT_FOUND')
  })
})

describe('GET /api/third-party/orders/:orderId', () => {
  it('answers an array holding the Order, addressId a string', async () => {
    await world.sql`insert into addresses (id, tenant_id, city) values (4242, 'acme', 'Oslo')`
    const created = await placeOrder(app, t, { order: { addressId: 4242 } })
    expect(created.addressId).toBe('4242')
    const res = await get(app, t.key, `/api/third-party/orders/${created.id}`)
    expect(res.statusCode).toBe(200)
    const body = res.json()
    expect(Value.Check(SingleOrder, body)).toBe(true)
    expect(body).toEqual([created])
    expect(body[0].addressId).toBe('4242')
  })

  it('is a 404 with the error body for an unknown or malformed id', async () => {
    expectError(
      await get(app, t.key, '/api/third-party/orders/9b2f2c4e-0000-4000-8000-000000000000'),
      404,
      'NOT_FOUND',
    )
    expectError(await get(app, t.key, '/api/third-party/orders/not-an-id'), 404, 'NOT_FOUND')
  })
})

describe('GET /api/third-party/kits', () => {
  it('lists the kit records, UNACTIVATED, filterable by order, project, serial and status', async () => {
    const [serial] = serials(1, 'KITLIST')
    const order = await placeOrder(app, t, {
      orderItems: [{ productId: t.kit.id, price: 1, quantity: 1, kitSerials: [serial] }],
    })
    const kits = async (q: string) => (await get(app, t.key, `/api/third-party/kits?take=100&${q}`)).json()
    const byOrder = await kits(`orderId=${order.id}`)
    expect(Value.Check(KitList, byOrder)).toBe(true)
    expect(byOrder.data).toHaveLength(1)
    expect(byOrder.data[0]).toMatchObject({
      serial,
      status: 'UNACTIVATED',
      orderItemId: order.orderItems[0]?.id,
      projectId: t.project.id,
      tenantId: 'acme',
      activated: false,
    })
    expect((await kits(`serial=${serial}`)).data).toHaveLength(1)
    expect((await kits(`serial=${serial}&status=ACTIVATED`)).data).toHaveLength(0)
    expect((await kits(`projectId=${secondProject.id}`)).data).toHaveLength(0)
    expectError(await get(app, t.key, '/api/third-party/kits?serial=a%00'), 400, 'VALIDATION_ERROR', /serial/)
    expect((await kits('')).itemCount).toBeGreaterThanOrEqual(5)
  })
})
