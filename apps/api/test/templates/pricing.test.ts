import type { MessageView } from '@dispatch/contracts'
import { parseExposition, sampleValue, statusWebhook } from '@dispatch/testing'
import { afterAll, beforeAll, expect, it } from 'vitest'
import {
  activeKey,
  buildTestApp,
  createWorld,
  messageView,
  postPlatformWebhook,
  recordSentMessage,
  SEND_SCOPES,
  type TestApp,
  type TestWorld,
} from '../helpers.ts'

const APP_SECRET = 'app-secret-0123456789'
const TOKEN = 'metrics-token-0123456789'

let world: TestWorld
let app: TestApp
let key: { id: string; key: string }

beforeAll(async () => {
  world = await createWorld()
  app = await buildTestApp(world, { WHATSAPP_APP_SECRET: APP_SECRET, METRICS_TOKEN: TOKEN })
  key = await activeKey(app, { scopes: SEND_SCOPES })
})
afterAll(async () => {
  await app?.close()
  await world?.close()
})

const pricing = { billable: true, pricing_model: 'PMP', category: 'marketing', type: 'regular' }
const report = (wamid: string, status: string, extra: object = {}) =>
  postPlatformWebhook(
    app,
    statusWebhook({ id: wamid, status, timestamp: String(Math.floor(Date.now() / 1000)), ...extra }),
    APP_SECRET,
  )
const priced = async () => {
  const res = await app.inject({
    method: 'GET',
    url: '/metrics',
    headers: { authorization: `Bearer ${TOKEN}` },
  })
  const labels = { sender_id: 'default', category: 'marketing', billable: 'true' }
  const samples = parseExposition(res.body)
  return samples.some((s) => s.name === 'dispatch_messages_priced_total')
    ? sampleValue(samples, 'dispatch_messages_priced_total', labels)
    : 0
}

it('stores the pricing a status webhook carries, shows it, and counts each message once', async () => {
  const wamid = 'wamid.priced-1'
  const id = await recordSentMessage(app, world, key, wamid)
  await world.sql`update messages set sender_id = 'default' where id = ${id}`
  expect((await messageView(app, key.key, id)).pricing).toBeNull()
  const before = await priced()

  expect((await report(wamid, 'delivered', { pricing })).statusCode).toBe(200)
  const view = await messageView(app, key.key, id)
  expect(view).toMatchObject({
    status: 'delivered',
    pricing: { billable: true, pricingModel: 'PMP', category: 'marketing', type: 'regular' },
  })
  // `read` repeats the pricing (and a late duplicate too): counted once all the same.
  await report(wamid, 'read', { pricing })
  await report(wamid, 'delivered', { pricing })
  expect(await priced()).toBe(before + 1)

  const list = await app.inject({
    method: 'GET',
    url: '/api/third-party/messages?take=10',
    headers: { 'x-api-key': key.key },
  })
  const listed = list.json<{ data: MessageView[] }>().data.find((m) => m.messageId === id)
  expect(listed?.pricing).toEqual(view.pricing)
})

it('ignores a malformed pricing and still applies the status', async () => {
  const wamid = 'wamid.priced-2'
  const id = await recordSentMessage(app, world, key, wamid)
  expect((await report(wamid, 'delivered', { pricing: 'free?' })).statusCode).toBe(200)
  expect(await messageView(app, key.key, id)).toMatchObject({ status: 'delivered', pricing: null })
  expect(
    (await report(wamid, 'read', { pricing: { billable: 'yes', category: 'utility' } })).statusCode,
  ).toBe(200)
  expect((await messageView(app, key.key, id)).pricing).toEqual({
    billable: null,
    pricingModel: null,
    category: 'utility',
    type: null,
  })
})
