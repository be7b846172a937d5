import { ApiKeyAdminDetail } from '@dispatch/contracts'
import Value from 'typebox/value'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  asAdmin,
  buildTestApp,
  createWorld,
  decide,
  expectError,
  requestKey,
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
} from '../orders/fixtures.ts'

// A requester names the tenant it wants; only an admin's approval binds one. These tests act as
// the requester would, from the outside, and try to read the tenant it asked for.

let world: TestWorld
let app: TestApp
let ta: SeededTenant
let tb: SeededTenant
let taOrder: { id: string }
let tbOrder: { id: string }
beforeAll(async () => {
  world = await createWorld()
  app = await buildTestApp(world)
  ta = await seedTenant(app, 'ta')
  tb = await seedTenant(app, 'tb')
  taOrder = await placeOrder(app, ta)
  tbOrder = await placeOrder(app, tb)
})
afterAll(async () => {
  await app?.close()
  await world?.close()
})

/** A key that asked for tenant `requested`, approved with `approval` as the admin's body. */
async function keyApproved(requested: string, approval?: object) {
  const created = await requestKey(app, { tenantId: requested, scopes: ORDER_SCOPES })
  const res = await decide(app, created.id, 'approve', approval)
  expect(res.statusCode, res.body).toBe(200)
  return { ...created, view: res.json() }
}

const adminDetail = (id: string) =>
  app.inject({ method: 'GET', url: `/api/admin/api-keys/${id}`, headers: asAdmin() })

/** Every route that reads or writes a tenant's data, as `key` would call it. */
const tenantRoutes = (key: string, tenant: string, orderId: string) => ({
  projects: () => get(app, key, '/api/third-party/projects'),
  [`projects?tenantId=${tenant}`]: () => get(app, key, `/api/third-party/projects?tenantId=${tenant}`),
  products: () => get(app, key, '/api/third-party/products'),
  [`products?tenantId=${tenant}`]: () => get(app, key, `/api/third-party/products?tenantId=${tenant}`),
  orders: () => get(app, key, '/api/third-party/orders'),
  [`orders?tenantId=${tenant}`]: () => get(app, key, `/api/third-party/orders?tenantId=${tenant}`),
  'orders/:orderId': () => get(app, key, `/api/third-party/orders/${orderId}`),
  kits: () => get(app, key, '/api/third-party/kits'),
  [`kits?tenantId=${tenant}`]: () => get(app, key, `/api/third-party/kits?tenantId=${tenant}`),
  [`channels?tenantId=${tenant}`]: () => get(app, key, `/api/third-party/channels?tenantId=${tenant}`),
})

describe('a key that asked for tenant ta and was approved without a tenant', () => {
  it.each([
    ['an empty POST', undefined],
    ['an empty JSON body', {}],
  ])('is approved (with %s) bound to no tenant, the request still shown to admins', async (_, body) => {
    const key = await keyApproved('ta', body)
    expect(key.view).toMatchObject({ status: 'approved', tenantId: null, requestedTenantId: 'ta' })
    const res = await adminDetail(key.id)
    expect(res.statusCode).toBe(200)
    expect(Value.Check(ApiKeyAdminDetail, res.json())).toBe(true)
    expect(res.json()).toMatchObject({ status: 'approved', tenantId: null, requestedTenantId: 'ta' })
    const me = await get(app, key.key, '/api/api-keys/me')
    expect(me.json()).toMatchObject({ status: 'approved', tenantId: null })
  })

  it("reads none of ta's data: every tenant route is 403 TENANT_FORBIDDEN", async () => {
    const { key } = await keyApproved('ta')
    for (const [route, call] of Object.entries(tenantRoutes(key, 'ta', taOrder.id))) {
      const res = await call()
      expectError(res, 403, 'TENANT_FORBIDDEN', /bound to no tenant/)
      expect(res.body, route).not.toContain(taOrder.id)
    }
  })

  it("cannot write to ta either, and ta's stock is untouched", async () => {
    const { key } = await keyApproved('ta')
    const [before] = await world.sql`select stock from products where id = ${ta.kit.id}`
    expectError(await postOrder(app, key, orderBody(ta)), 403, 'TENANT_FORBIDDEN')
    const [after] = await world.sql`select stock from products where id = ${ta.kit.id}`
    expect(after?.stock).toBe(before?.stock)
    expect((await get(app, ta.key, '/api/third-party/orders?take=100')).json().itemCount).toBe(1)
  })

  it('still reads the shared channel list, which is no tenant data', async () => {
    const { key } = await keyApproved('ta')
    expect((await get(app, key, '/api/third-party/channels?take=100')).statusCode).toBe(200)
  })
})

describe('a key approved with a tenant reads that tenant only', () => {
  it('asked for ta and bound to ta: ta, never tb', async () => {
    const key = await keyApproved('ta', { tenantId: 'ta' })
    expect(key.view).toMatchObject({ tenantId: 'ta', requestedTenantId: 'ta' })
    const orders = (await get(app, key.key, '/api/third-party/orders?take=100')).json()
    expect(orders.data.map((o: { id: string }) => o.id)).toEqual([taOrder.id])
    const [projects] = (await get(app, key.key, '/api/third-party/projects?take=100')).json()
    expect(projects.datas.map((p: { tenantId: string }) => p.tenantId)).toEqual(['ta'])
    expect((await get(app, key.key, `/api/third-party/orders/${taOrder.id}`)).statusCode).toBe(200)
    expectError(await get(app, key.key, `/api/third-party/orders/${tbOrder.id}`), 404, 'NOT_FOUND')
    for (const [route, call] of Object.entries(tenantRoutes(key.key, 'tb', tbOrder.id))) {
      if (route === 'orders/:orderId' || !route.includes('?')) continue
      expectError(await call(), 403, 'TENANT_FORBIDDEN', /tb/)
    }
  })

  it('asked for ta, bound by the admin to tb: tb only', async () => {
    const key = await keyApproved('ta', { tenantId: 'tb' })
    expect((await adminDetail(key.id)).json()).toMatchObject({ tenantId: 'tb', requestedTenantId: 'ta' })
    expect((await get(app, key.key, '/api/api-keys/me')).json().tenantId).toBe('tb')

    const orders = (await get(app, key.key, '/api/third-party/orders?take=100')).json()
    expect(orders.data.map((o: { id: string }) => o.id)).toEqual([tbOrder.id])
    const kits = (await get(app, key.key, '/api/third-party/kits?take=100')).json()
    expect(new Set(kits.data.map((k: { tenantId: string }) => k.tenantId))).toEqual(new Set(['tb']))
    const [products] = (await get(app, key.key, '/api/third-party/products?take=100')).json()
    expect(new Set(products.datas.map((p: { tenantId: string }) => p.tenantId))).toEqual(new Set(['tb']))
    expectError(await get(app, key.key, `/api/third-party/orders/${taOrder.id}`), 404, 'NOT_FOUND')
    for (const [route, call] of Object.entries(tenantRoutes(key.key, 'ta', taOrder.id))) {
      if (route === 'orders/:orderId' || !route.includes('?')) continue
      expectError(await call(), 403, 'TENANT_FORBIDDEN', /"ta"/)
    }
    // It orders for tb, not for the tenant it asked for.
    expect((await postOrder(app, key.key, orderBody(tb))).statusCode).toBe(201)
    expectError(
      await postOrder(app, key.key, orderBody(ta)),
      422,
      'INVALID_REFERENCE',
      /order\.projectId .* does not exist/,
    )
  })
})

describe('the admin list', () => {
  it('filters tenantId on the bound tenant, requestedTenantId on the requested one', async () => {
    const t = `bind-${Date.now()}`
    const unbound = await keyApproved(t)
    const bound = await keyApproved(t, { tenantId: t })
    const boundElsewhere = await keyApproved('someone-else', { tenantId: t })
    const pending = await requestKey(app, { tenantId: t })
    const ids = async (query: string) => {
      const res = await app.inject({
        method: 'GET',
        url: `/api/admin/api-keys?${query}&take=100`,
        headers: asAdmin(),
      })
      expect(res.statusCode, res.body).toBe(200)
      return res
        .json()
        .data.map((k: { id: string }) => k.id)
        .sort()
    }
    expect(await ids(`tenantId=${t}`)).toEqual([bound.id, boundElsewhere.id].sort())
    expect(await ids(`requestedTenantId=${t}`)).toEqual([unbound.id, bound.id, pending.id].sort())
    expect(await ids(`requestedTenantId=${t}&status=pending`)).toEqual([pending.id])
  })
})
