import { ChannelList, ProductList, ProjectList } from '@dispatch/contracts'
import Value from 'typebox/value'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { asAdmin, buildTestApp, createWorld, expectError, type TestApp, type TestWorld } from '../helpers.ts'
import {
  createChannel,
  createProduct,
  createProject,
  get,
  type SeededTenant,
  seedTenant,
} from '../orders/fixtures.ts'

let world: TestWorld
let app: TestApp
let acme: SeededTenant
let extraProducts: { id: string; name: string }[]
beforeAll(async () => {
  world = await createWorld()
  app = await buildTestApp(world)
  acme = await seedTenant(app, 'acme', {
    channel: { sendBMEEmail: true, defaultWorkflowValue: workflow },
    project: { workflow, vendorPIC: 'Dr. Vendor', addressId: null },
  })
  // Three more products on a second channel, to page, order and filter over.
  const other = await createChannel(app, { name: 'Clinic', timeline: 'AMD' })
  await createProject(app, 'acme', other.id, { name: 'Zeta clinic study' })
  extraProducts = []
  for (const [name, price] of [
    ['Bundle A', 100],
    ['Bundle B', 300],
    ['Bundle C', 200],
  ] as const) {
    extraProducts.push(await createProduct(app, 'acme', other.id, { name, price, productType: 'BUNDLE' }))
  }
})
afterAll(async () => {
  await app?.close()
  await world?.close()
})

const workflow = {
  sampleType: ['STOOL', 'VENDOR_MEDIUM'],
  ffq: true,
  reibursement: true,
  report: ['PDF'],
  collectionMedium: ['ETHANOL'],
}
const list = (path: string) => get(app, acme.key, `/api/third-party/${path}`)

describe('GET /api/third-party/channels', () => {
  it('answers a bare array of Channel, spec field names included', async () => {
    const res = await list('channels?take=10')
    expect(res.statusCode).toBe(200)
    const body = res.json()
    expect(Value.Check(ChannelList, body)).toBe(true)
    expect(Array.isArray(body)).toBe(true)
    const channel = body.find((c: { id: string }) => c.id === acme.channel.id)
    expect(Object.keys(channel).sort()).toEqual(
      [
        'id',
        'name',
        'autoGenerateKit',
        'autoCreateOrderFromSurveyTool',
        'sendBMEEmail',
        'sendPartnerEmail',
        'timeline',
        'showAddressSection',
        'defaultWorkflowValue',
      ].sort(),
    )
    expect(channel.sendBMEEmail).toBe(true)
    expect(channel.defaultWorkflowValue).toEqual(workflow)
    expect(channel.defaultWorkflowValue).toHaveProperty('reibursement', true)
  })

  it('returns one channel by default (take defaults to 1)', async () => {
    expect((await list('channels')).json()).toHaveLength(1)
  })

  it('filters by channelIds in both array forms', async () => {
    const all = (await list('channels?take=10')).json() as { id: string }[]
    const [a, b] = all.map((c) => c.id)
    for (const query of [`channelIds=${a}&channelIds=${b}`, `channelIds=${a},${b}`]) {
      const ids = (await list(`channels?take=10&${query}`)).json().map((c: { id: string }) => c.id)
      expect(ids.sort()).toEqual([a, b].sort())
    }
    expect((await list(`channels?take=10&channelIds=${a}`)).json()).toHaveLength(1)
    expectError(await list('channels?channelIds=not-a-uuid'), 400, 'VALIDATION_ERROR', /channelIds/)
  })

  it('orders by name both ways, and searches names with q', async () => {
    const asc = (await list('channels?take=10&orderField=name&order=ASC'))
      .json()
      .map((c: { name: string }) => c.name)
    const desc = (await list('channels?take=10&orderField=name&order=DESC'))
      .json()
      .map((c: { name: string }) => c.name)
    expect(asc).toEqual([...asc].sort())
    expect(desc).toEqual([...asc].reverse())
    expect((await list('channels?take=10&q=clin')).json().map((c: { name: string }) => c.name)).toEqual([
      'Clinic',
    ])
  })

  it('lists soft-deleted channels only with deleted=true', async () => {
    const gone = await createChannel(app, { name: 'Retired' })
    const res = await app.inject({
      method: 'DELETE',
      url: `/api/admin/channels/${gone.id}`,
      headers: asAdmin(),
    })
    expect(res.statusCode).toBe(204)
    const live = (await list('channels?take=100')).json().map((c: { id: string }) => c.id)
    const deleted = (await list('channels?take=100&deleted=true')).json().map((c: { id: string }) => c.id)
    expect(live).not.toContain(gone.id)
    expect(deleted).toEqual([gone.id])
  })
})

describe('GET /api/third-party/projects', () => {
  it('answers an array holding one envelope with datas of Project', async () => {
    const res = await list('projects?take=10&orderField=name&order=ASC')
    expect(res.statusCode).toBe(200)
    const body = res.json()
    expect(Value.Check(ProjectList, body)).toBe(true)
    expect(body).toHaveLength(1)
    const [envelope] = body
    expect(Object.keys(envelope).sort()).toEqual(
      ['page', 'take', 'itemCount', 'pageCount', 'hasPreviousPage', 'hasNextPage', 'datas'].sort(),
    )
    expect(envelope).not.toHaveProperty('data')
    expect(envelope.datas.map((p: { name: string }) => p.name)).toEqual(['Gut study', 'Zeta clinic study'])
    const project = envelope.datas[0]
    expect(project.vendorPIC).toBe('Dr. Vendor')
    expect(project.workflow.reibursement).toBe(true)
    expect(project.displayId).toMatch(/^PRJ-\d{8}$/)
    expect(project.tenantId).toBe('acme')
  })

  it('filters by channelIds', async () => {
    const [env] = (await list(`projects?take=10&channelIds=${acme.channel.id}`)).json()
    expect(env.datas.map((p: { id: string }) => p.id)).toEqual([acme.project.id])
  })
})

describe('GET /api/third-party/products', () => {
  it('answers an array holding one envelope with datas of Product', async () => {
    const body = (await list('products?take=2')).json()
    expect(Value.Check(ProductList, body)).toBe(true)
    expect(body[0]).toMatchObject({
      page: 1,
      take: 2,
      itemCount: 5,
      pageCount: 3,
      hasPreviousPage: false,
      hasNextPage: true,
    })
    expect(body[0].datas).toHaveLength(2)
  })

  it('filters by productType in both array forms and by channelId', async () => {
    const types = async (q: string) =>
      ((await list(`products?take=100&${q}`)).json()[0].datas as { productType: string }[]).map(
        (p) => p.productType,
      )
    expect(await types('productType=BUNDLE')).toEqual(['BUNDLE', 'BUNDLE', 'BUNDLE'])
    expect((await types('productType=KIT&productType=PROBIOTIC')).sort()).toEqual(['KIT', 'PROBIOTIC'])
    expect((await types('productType=KIT,PROBIOTIC')).sort()).toEqual(['KIT', 'PROBIOTIC'])
    expect((await types(`channelId=${acme.channel.id}`)).sort()).toEqual(['KIT', 'PROBIOTIC'])
    expectError(await list('products?productType=SHOE'), 400, 'VALIDATION_ERROR', /productType/)
  })

  it('orders by price both ways', async () => {
    const prices = async (order: string) =>
      (
        (await list(`products?take=100&productType=BUNDLE&orderField=price&order=${order}`)).json()[0]
          .datas as {
          price: number
        }[]
      ).map((p) => p.price)
    expect(await prices('ASC')).toEqual([100, 200, 300])
    expect(await prices('DESC')).toEqual([300, 200, 100])
  })

  it('gets the envelope right on the last page, past the end, and for an empty result', async () => {
    expect((await list('products?take=2&page=3')).json()[0]).toMatchObject({
      page: 3,
      itemCount: 5,
      pageCount: 3,
      hasPreviousPage: true,
      hasNextPage: false,
    })
    const past = (await list('products?take=2&page=9')).json()[0]
    expect(past).toMatchObject({
      page: 9,
      pageCount: 3,
      hasPreviousPage: true,
      hasNextPage: false,
      datas: [],
    })
    const empty = (await list('products?take=2&q=nothing-matches')).json()[0]
    expect(empty).toEqual({
      page: 1,
      take: 2,
      itemCount: 0,
      pageCount: 0,
      hasPreviousPage: false,
      hasNextPage: false,
      datas: [],
    })
  })

  it('searches name, displayId and description with q, case-insensitively', async () => {
    const [env] = (await list('products?take=100&q=bUNDLE%20b')).json()
    expect(env.datas.map((p: { id: string }) => p.id)).toEqual([extraProducts[1]?.id])
    const [byDisplay] = (await list(`products?take=100&q=${acme.kit.displayId}`)).json()
    expect(byDisplay.datas.map((p: { id: string }) => p.id)).toEqual([acme.kit.id])
  })
})

describe('common list parameters', () => {
  it.each([
    'take=0',
    'take=1001',
    'take=abc',
    'page=0',
    'page=-1',
    'order=UP',
    'orderField=secret',
    'deleted=maybe',
    'itemCount=-1',
    'unknown=1',
    'q=a%00b',
    'page=99999999999999999999',
  ])('%s is a 400 with the error body', async (query) => {
    for (const path of ['channels', 'projects', 'products', 'orders', 'kits']) {
      expectError(await list(`${path}?${query}`), 400, 'VALIDATION_ERROR')
    }
  })

  it('accepts take=1000, itemCount (ignored) and deleted=false', async () => {
    const [env] = (await list('products?take=1000&itemCount=3&deleted=false')).json()
    expect(env).toMatchObject({ take: 1000, itemCount: 5 })
  })
})
