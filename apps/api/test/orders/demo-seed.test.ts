import { createDb, DEMO_IDS, seedDemoCatalog } from '@dispatch/db'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { activeKey, buildTestApp, createWorld, type TestApp, type TestWorld } from '../helpers.ts'
import { get, ORDER_SCOPES, postOrder } from './fixtures.ts'

let world: TestWorld
let app: TestApp
beforeAll(async () => {
  world = await createWorld()
  app = await buildTestApp(world)
})
afterAll(async () => {
  await app?.close()
  await world?.close()
})

it('seeds the demo catalog once, and the walkthrough in docs/orders.md works against it', async () => {
  const { db, close } = createDb(world.databaseUrl, { max: 1 })
  try {
    expect(await seedDemoCatalog(db, 'demo')).toBe(7)
    expect(await seedDemoCatalog(db, 'demo')).toBe(0)
  } finally {
    await close()
  }
  const key = (await activeKey(app, { tenantId: 'demo', scopes: ORDER_SCOPES })).key
  const [projects] = (await get(app, key, '/api/third-party/projects?take=10')).json()
  expect(projects.itemCount).toBe(2)
  const res = await postOrder(
    app,
    key,
    {
      order: { projectId: DEMO_IDS.gutProject, channelId: DEMO_IDS.researchChannel, partnerName: 'Demo lab' },
      orderItems: [
        { productId: DEMO_IDS.stoolKit, price: 4900, quantity: 2, kitSerials: ['DEMO-0001', 'DEMO-0002'] },
      ],
    },
    { 'idempotency-key': 'demo-order-1' },
  )
  expect(res.statusCode, res.body).toBe(201)
  expect(res.json()).toMatchObject({
    total: 9800,
    partnerName: 'Demo lab',
    chanel: { name: 'Demo research' },
  })
  const rows =
    await world.sql`select payload->>'to' as "to" from outbox where payload->'data'->>'orderId' = ${res.json().id}`
  expect(rows.map((r) => r.to).sort()).toEqual(['bme@dispatch.local', 'partner@demo.dispatch.local'])
})
