import { InboundMessageList } from '@dispatch/contracts'
import { messageWebhook, signWebhook, waitFor } from '@dispatch/testing'
import type { RunningWorker } from '@dispatch/worker'
import Value from 'typebox/value'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  ADMIN,
  activeKey,
  asAdmin,
  buildTestApp,
  createWorld,
  expectError,
  SEND_SCOPES,
  send,
  startTestWorker,
  type TestApp,
  type TestWorld,
} from '../helpers.ts'

// The admin view of replies. Messages go out through the sandbox adapter, from its business number.
const APP_SECRET = 'whatsapp-app-secret-for-tests'
const SANDBOX_NUMBER = '100000000000001'
const OTHER_NUMBER = '100000000000002'
const ANA = '+5511900000001'
const STRANGER = '+5511900000009'

let world: TestWorld
let app: TestApp
let worker: RunningWorker
let acme: { id: string; key: string }
const wamids = { routed: 'wamid.admin-routed', stranger: 'wamid.admin-stranger', other: 'wamid.admin-other' }
beforeAll(async () => {
  world = await createWorld()
  app = await buildTestApp(world, { WHATSAPP_APP_SECRET: APP_SECRET })
  worker = await startTestWorker(world, { WORKER_QUEUES: 'messages' })
  acme = await activeKey(app, { scopes: SEND_SCOPES, tenantId: 'acme' })
  const { messageId } = (await send(app, 'send-text', acme.key, { phone: ANA, text: 'Hello' })).json()
  await waitFor(async () => {
    const [row] = await world.sql`select status from messages where id = ${messageId}`
    return row?.status === 'sent'
  })
  // Three replies a minute apart, after the send, oldest first: routed, from a stranger, to
  // another number.
  const now = Math.floor(Date.now() / 1000)
  await receive(SANDBOX_NUMBER, text(ANA, wamids.routed, now))
  await receive(SANDBOX_NUMBER, text(STRANGER, wamids.stranger, now + 60))
  await receive(OTHER_NUMBER, text(ANA, wamids.other, now + 120))
})
afterAll(async () => {
  await worker?.close()
  await app?.close()
  await world?.close()
})

const text = (from: string, id: string, timestamp: number) => ({
  from: from.slice(1),
  id,
  timestamp: String(timestamp),
  type: 'text',
  text: { body: 'hi' },
})
/** A reply as Meta's webhook brings it to `number`. */
const receive = async (number: string, item: ReturnType<typeof text>) => {
  const body = JSON.stringify(messageWebhook(number, item))
  const res = await app.inject({
    method: 'POST',
    url: '/api/webhooks/whatsapp',
    headers: { 'content-type': 'application/json', 'x-hub-signature-256': signWebhook(body, APP_SECRET) },
    payload: body,
  })
  expect(res.statusCode, res.body).toBe(200)
}
const list = async (query: string) => {
  const res = await app.inject({
    method: 'GET',
    url: `/api/admin/inbound-messages?${query}`,
    headers: asAdmin(),
  })
  expect(res.statusCode, res.body).toBe(200)
  const body = res.json<InboundMessageList>()
  expect(Value.Check(InboundMessageList, body), res.body).toBe(true)
  return body
}
const wamidsOf = async (query: string) =>
  (await list(`take=100&${query}`)).data.map((m) => m.platformMessageId)

describe('GET /api/admin/inbound-messages', () => {
  it("pages newest first by default, with the spec's envelope and take defaulting to 1", async () => {
    const first = await list('')
    expect(first).toMatchObject({
      page: 1,
      take: 1,
      itemCount: 3,
      pageCount: 3,
      hasPreviousPage: false,
      hasNextPage: true,
    })
    expect(first.data.map((m) => m.platformMessageId)).toEqual([wamids.other])
    expect(await wamidsOf('')).toEqual([wamids.other, wamids.stranger, wamids.routed])
    expect(await wamidsOf('order=ASC&orderField=createdAt')).toEqual([
      wamids.routed,
      wamids.stranger,
      wamids.other,
    ])
    const last = await list('page=3')
    expect(last).toMatchObject({ hasPreviousPage: true, hasNextPage: false })
    expect(last.data.map((m) => m.platformMessageId)).toEqual([wamids.routed])
  })

  it('filters: routed, apiKeyId, phoneNumberId, tenantId, q; nothing is ever soft-deleted', async () => {
    expect(await wamidsOf('routed=true')).toEqual([wamids.routed])
    expect(await wamidsOf('routed=false')).toEqual([wamids.other, wamids.stranger])
    expect(await wamidsOf(`apiKeyId=${acme.id}`)).toEqual([wamids.routed])
    expect(await wamidsOf(`apiKeyId=${crypto.randomUUID()}`)).toEqual([])
    expect(await wamidsOf(`phoneNumberId=${OTHER_NUMBER}`)).toEqual([wamids.other])
    expect(await wamidsOf(`phoneNumberId=${SANDBOX_NUMBER}&routed=false`)).toEqual([wamids.stranger])
    expect(await wamidsOf('tenantId=acme')).toEqual([wamids.routed])
    expect(await wamidsOf('tenantId=globex')).toEqual([])
    expect(await wamidsOf(`q=${encodeURIComponent(ANA)}`)).toEqual([wamids.other, wamids.routed])
    expect(await wamidsOf('q=admin-strang')).toEqual([wamids.stranger])
    expect(await wamidsOf('q=%25')).toEqual([])
    expect(await wamidsOf('deleted=true')).toEqual([])
    expect(await wamidsOf('deleted=false')).toHaveLength(3)
  })

  it('shows what a reply carries and where it went', async () => {
    const [routed] = (await list(`apiKeyId=${acme.id}`)).data
    expect(routed).toEqual({
      id: expect.any(String),
      platformMessageId: wamids.routed,
      phoneNumberId: SANDBOX_NUMBER,
      phone: ANA,
      userId: null,
      username: null,
      type: 'text',
      content: { text: 'hi' },
      apiKeyId: acme.id,
      inReplyTo: null,
      receivedAt: expect.any(String),
      createdAt: expect.any(String),
    })
  })

  it('refuses bad parameters with 400 VALIDATION_ERROR, naming them', async () => {
    for (const [query, name] of [
      ['routed=maybe', /routed/],
      ['apiKeyId=not-a-uuid', /apiKeyId/],
      ['orderField=phone', /orderField/],
      ['take=0', /take/],
      ['unknown=1', /unknown/],
    ] as const) {
      const res = await app.inject({
        method: 'GET',
        url: `/api/admin/inbound-messages?${query}`,
        headers: asAdmin(),
      })
      expectError(res, 400, 'VALIDATION_ERROR', name)
    }
  })

  it('orders replies Meta stamped in the same second by when they arrived', async () => {
    // Meta's timestamps have seconds only; a customer tapping twice in one second is common.
    const second = Math.floor(Date.now() / 1000) + 300
    const phone = '+5511900000077'
    const arrived: string[] = []
    for (let n = 0; n < 6; n++) {
      const wamid = `wamid.same-second-${n}`
      await receive(SANDBOX_NUMBER, text(phone, wamid, second))
      arrived.push(wamid)
    }
    const q = `q=${encodeURIComponent(phone)}`
    expect(await wamidsOf(q)).toEqual(arrived.toReversed())
    expect(await wamidsOf(`${q}&order=ASC`)).toEqual(arrived)
  })
})

describe('GET /api/admin/inbound-messages: authentication', () => {
  it('refuses a missing or wrong admin token, and any API key: 401 ADMIN_AUTH_REQUIRED', async () => {
    const attempts: Array<Record<string, string>> = [
      {},
      { authorization: 'Bearer not-a-real-token' },
      { authorization: `Bearer ${ADMIN.ana}x` },
      { authorization: `Bearer ${acme.key}` },
      { 'x-api-key': acme.key },
    ]
    for (const headers of attempts) {
      const res = await app.inject({ method: 'GET', url: '/api/admin/inbound-messages', headers })
      expectError(res, 401, 'ADMIN_AUTH_REQUIRED')
      expect(res.headers['www-authenticate']).toBe('Bearer')
      expect(res.body).not.toContain(wamids.routed)
    }
  })

  it('checks the token before the parameters', async () => {
    const res = await app.inject({ method: 'GET', url: '/api/admin/inbound-messages?routed=maybe' })
    expectError(res, 401, 'ADMIN_AUTH_REQUIRED')
  })
})
