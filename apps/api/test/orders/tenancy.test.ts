import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  activeKey,
  buildTestApp,
  createWorld,
  expectError,
  type TestApp,
  type TestWorld,
} from '../helpers.ts'
import {
  get,
  ORDER_SCOPES,
  orderBody,
  placeOrder,
  postOrder,
  type SeededTenant,
  seedTenant,
} from './fixtures.ts'

let world: TestWorld
let app: TestApp
let a: SeededTenant
let b: SeededTenant
let bOrder: { id: string }
beforeAll(async () => {
  world = await createWorld()
  app = await buildTestApp(world)
  a = await seedTenant(app, 'tenant-a')
  b = await seedTenant(app, 'tenant-b')
  await placeOrder(app, a)
  bOrder = await placeOrder(app, b)
  await placeOrder(app, b)
})
afterAll(async () => {
  await app?.close()
  await world?.close()
})

const asA = (url: string) => get(app, a.key, `/api/third-party/${url}`)

describe("a tenant's key, from the outside", () => {
  it("never sees or counts another tenant's records", async () => {
    const [projects] = (await asA('projects?take=100')).json()
    expect(projects.itemCount).toBe(1)
    expect(projects.datas.map((p: { tenantId: string }) => p.tenantId)).toEqual(['tenant-a'])
    const [products] = (await asA('products?take=100')).json()
    expect(products.itemCount).toBe(2)
    expect(new Set(products.datas.map((p: { tenantId: string }) => p.tenantId))).toEqual(
      new Set(['tenant-a']),
    )
    const orders = (await asA('orders?take=100')).json()
    expect(orders.itemCount).toBe(1)
    expect(orders.data.map((o: { tenantId: string }) => o.tenantId)).toEqual(['tenant-a'])
    const kits = (await asA('kits?take=100')).json()
    expect(kits.itemCount).toBe(2)
    // Filtering on B's ids finds nothing either.
    expect((await asA(`orders?take=100&projectId=${b.project.id}`)).json().itemCount).toBe(0)
    expect((await asA(`kits?take=100&orderId=${bOrder.id}`)).json().itemCount).toBe(0)
    expect((await asA(`orders?take=100&q=${encodeURIComponent('ORD-')}`)).json().itemCount).toBe(1)
  })

  it.each(['projects', 'products', 'orders', 'kits', 'channels'])(
    '%s?tenantId=B is 403 TENANT_FORBIDDEN',
    async (path) => {
      expectError(await asA(`${path}?tenantId=tenant-b`), 403, 'TENANT_FORBIDDEN', /tenant-b/)
      expect((await asA(`${path}?tenantId=tenant-a`)).statusCode).toBe(200)
    },
  )

  it("gets 404 for B's order id, exactly as for an unknown one", async () => {
    const res = await asA(`orders/${bOrder.id}`)
    const body = expectError(res, 404, 'NOT_FOUND')
    const unknown = expectError(await asA('orders/00000000-0000-4000-8000-000000000000'), 404, 'NOT_FOUND')
    expect(body.message.replace(bOrder.id, 'X')).toBe(
      unknown.message.replace('00000000-0000-4000-8000-000000000000', 'X'),
    )
  })

  it("cannot order against B's project or B's products", async () => {
    const bProject = await postOrder(
      app,
      a.key,
      orderBody(a, { order: { projectId: b.project.id, channelId: b.channel.id } }),
    )
    expectError(bProject, 422, 'INVALID_REFERENCE', /order\.projectId .* does not exist/)
    const bProduct = await postOrder(
      app,
      a.key,
      orderBody(a, { orderItems: [{ productId: b.probiotic.id, price: 1, quantity: 1, kitSerials: [] }] }),
    )
    expectError(bProduct, 422, 'INVALID_REFERENCE', /productId .* does not exist/)
    await world.sql`insert into addresses (id, tenant_id) values (777, 'tenant-b')`
    expectError(
      await postOrder(app, a.key, orderBody(a, { order: { addressId: 777 } })),
      422,
      'INVALID_REFERENCE',
      /addressId/,
    )
    const [stock] = await world.sql`select stock from products where id = ${b.probiotic.id}`
    expect(stock?.stock).toBe(100)
  })

  it('channels: tenantId keeps the channels that tenant uses', async () => {
    const channels = (await asA('channels?take=100&tenantId=tenant-a')).json()
    expect(channels.map((c: { id: string }) => c.id)).toEqual([a.channel.id])
    expect((await asA('channels?take=100')).json()).toHaveLength(2)
  })
})

describe('keys that may not read or write orders', () => {
  it('a key bound to no tenant is 403 TENANT_FORBIDDEN', async () => {
    const key = (await activeKey(app, { scopes: ORDER_SCOPES })).key
    expectError(await get(app, key, '/api/third-party/orders'), 403, 'TENANT_FORBIDDEN')
    expectError(await get(app, key, '/api/third-party/projects'), 403, 'TENANT_FORBIDDEN')
    expectError(await postOrder(app, key, orderBody(a)), 403, 'TENANT_FORBIDDEN')
    expect((await get(app, key, '/api/third-party/channels')).statusCode).toBe(200)
  })

  it('each route needs its scope, and a key', async () => {
    const key = (await activeKey(app, { tenantId: 'tenant-a', scopes: ['read:orders'] })).key
    expect((await get(app, key, '/api/third-party/orders')).statusCode).toBe(200)
    for (const path of ['channels', 'projects', 'products', 'kits']) {
      expectError(await get(app, key, `/api/third-party/${path}`), 403, 'INSUFFICIENT_SCOPE')
    }
    expectError(await postOrder(app, key, orderBody(a)), 403, 'INSUFFICIENT_SCOPE', /create:orders/)
    const none = await app.inject({ method: 'GET', url: '/api/third-party/orders' })
    expectError(none, 401, 'API_KEY_MISSING')
    expectError(await get(app, 'mdk_dev_nonsense', '/api/third-party/orders'), 401, 'API_KEY_INVALID')
  })
})
