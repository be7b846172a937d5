import { MessageView } from '@dispatch/contracts'
import { signWebhook, statusWebhook } from '@dispatch/testing'
import Value from 'typebox/value'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  activeKey,
  buildTestApp,
  createWorld,
  expectError,
  recordSentMessage,
  SEND_SCOPES,
  send,
  type TestApp,
  type TestWorld,
} from '../helpers.ts'

const APP_SECRET = 'whatsapp-app-secret-for-tests'
const VERIFY_TOKEN = 'verify-token-for-tests'

let world: TestWorld
let app: TestApp
let key: { id: string; key: string }
beforeAll(async () => {
  world = await createWorld()
  app = await buildTestApp(world, { WHATSAPP_APP_SECRET: APP_SECRET, WHATSAPP_VERIFY_TOKEN: VERIFY_TOKEN })
  key = await activeKey(app, { scopes: SEND_SCOPES })
})
afterAll(async () => {
  await app.close()
  await world.close()
})

const status = (messageId: string, apiKey = key.key) =>
  app.inject({
    method: 'GET',
    url: `/api/third-party/messages/${messageId}`,
    headers: { 'x-api-key': apiKey },
  })

const sentMessage = (platformMessageId: string) => recordSentMessage(app, world, key, platformMessageId)

describe('GET /api/third-party/messages/:messageId', () => {
  it('answers right after the 202, before any worker has run: queued, no attempts yet', async () => {
    const accepted = (await send(app, 'send-image', key.key)).json()
    const res = await status(accepted.messageId)
    expect(res.statusCode, res.body).toBe(200)
    expect(Value.Check(MessageView, res.json())).toBe(true)
    expect(res.json()).toEqual({
      messageId: accepted.messageId,
      type: 'image',
      phone: '+5511987654321',
      userId: null,
      status: 'queued',
      attempts: 0,
      clientReference: null,
      platformMessageId: null,
      lastError: null,
      batchId: null,
      sendAt: null,
      scheduledReason: null,
      expiresAt: new Date(Date.parse(accepted.createdAt) + 4 * 3600 * 1000).toISOString(),
      senderId: 'default',
      senderPhoneNumberId: null,
      fallbackUsed: false,
      pricing: null,
      createdAt: accepted.createdAt,
      updatedAt: expect.any(String),
    })
    // Also at the path without /api.
    const bare = await app.inject({
      method: 'GET',
      url: `/third-party/messages/${accepted.messageId}`,
      headers: { 'x-api-key': key.key },
    })
    expect(bare.json().messageId).toBe(accepted.messageId)
  })

  it('shows the recorded delivery once the worker wrote it', async () => {
    const id = await sentMessage('wamid.recorded-1')
    const res = await status(id)
    expect(res.json()).toMatchObject({
      messageId: id,
      status: 'sent',
      attempts: 1,
      platformMessageId: 'wamid.recorded-1',
    })
  })

  it("404 for another client's message, whether queued or recorded, as for an id that does not exist", async () => {
    const intruder = await activeKey(app, { scopes: SEND_SCOPES })
    const queued = (await send(app, 'send-text', key.key)).json().messageId
    const recorded = await sentMessage('wamid.recorded-2')
    expectError(await status(queued, intruder.key), 404, 'NOT_FOUND')
    expectError(await status(recorded, intruder.key), 404, 'NOT_FOUND')
    expectError(await status('00000000-0000-4000-8000-000000000000'), 404, 'NOT_FOUND')
    expectError(await status('not-a-uuid'), 404, 'NOT_FOUND')
  })

  it('needs an active key with read:messages', async () => {
    const id = (await send(app, 'send-text', key.key)).json().messageId
    const sendOnly = await activeKey(app, { scopes: ['send:free-text'] })
    expectError(await status(id, sendOnly.key), 403, 'INSUFFICIENT_SCOPE', /read:messages/)
    expectError(await status(id, ''), 401, 'API_KEY_MISSING')
  })
})

const sign = (body: string, secret = APP_SECRET) => signWebhook(body, secret)
const statusEvent = (id: string, value: string, timestamp: number, extra: object = {}) =>
  statusWebhook({ id, status: value, timestamp: String(timestamp), recipient_id: '5511987654321', ...extra })
const deliver = (payload: object, signature?: string) => {
  const body = JSON.stringify(payload)
  return app.inject({
    method: 'POST',
    url: '/api/webhooks/whatsapp',
    headers: { 'content-type': 'application/json', 'x-hub-signature-256': signature ?? sign(body) },
    payload: body,
  })
}

describe('WhatsApp webhook', () => {
  it('answers the subscription handshake with the challenge, and 403 for a wrong token', async () => {
    const verify = (token: string) =>
      app.inject({
        method: 'GET',
        url: `/api/webhooks/whatsapp?hub.mode=subscribe&hub.verify_token=${token}&hub.challenge=1158201444`,
      })
    const ok = await verify(VERIFY_TOKEN)
    expect(ok.statusCode).toBe(200)
    expect(ok.body).toBe('1158201444')
    expectError(await verify('wrong-token-000'), 403, 'WEBHOOK_VERIFY_TOKEN_INVALID')
    // The token travels in the query string; it never reaches a log line.
    expect(app.logs.text()).toContain('hub.challenge=1158201444')
    expect(app.logs.text()).not.toContain(VERIFY_TOKEN)
  })

  it('a signed status update moves the message forward: delivered, then read', async () => {
    const id = await sentMessage('wamid.hook-1')
    const now = Math.floor(Date.now() / 1000)
    expect((await deliver(statusEvent('wamid.hook-1', 'delivered', now))).statusCode).toBe(200)
    expect((await status(id)).json().status).toBe('delivered')
    expect((await deliver(statusEvent('wamid.hook-1', 'read', now + 5))).statusCode).toBe(200)
    expect((await status(id)).json().status).toBe('read')
  })

  it('out of order: a late delivered or sent never overwrites read', async () => {
    const id = await sentMessage('wamid.hook-2')
    const now = Math.floor(Date.now() / 1000)
    await deliver(statusEvent('wamid.hook-2', 'read', now + 5))
    await deliver(statusEvent('wamid.hook-2', 'delivered', now))
    await deliver(statusEvent('wamid.hook-2', 'sent', now - 1))
    const view = (await status(id)).json()
    expect(view.status).toBe('read')
    const [row] = await world.sql`select delivered_at, read_at from messages where id = ${id}`
    expect(row?.read_at).toEqual(new Date((now + 5) * 1000))
    // Read implies delivered, even when the delivered event never came first.
    expect(row?.delivered_at).toEqual(new Date((now + 5) * 1000))
  })

  it('a failed status records the platform error', async () => {
    const id = await sentMessage('wamid.hook-3')
    const errors = [{ code: 131026, title: 'Message undeliverable', message: 'Message undeliverable' }]
    await deliver(statusEvent('wamid.hook-3', 'failed', Math.floor(Date.now() / 1000), { errors }))
    expect((await status(id)).json()).toMatchObject({
      status: 'failed',
      lastError: { code: '131026', message: 'Message undeliverable' },
    })
  })

  it('401 for a wrong, missing or other-secret signature, and nothing changes', async () => {
    const id = await sentMessage('wamid.hook-4')
    const payload = statusEvent('wamid.hook-4', 'read', Math.floor(Date.now() / 1000))
    expectError(await deliver(payload, 'sha256=00'), 401, 'WEBHOOK_SIGNATURE_INVALID')
    expectError(
      await deliver(payload, sign(JSON.stringify(payload), 'another-secret-123')),
      401,
      'WEBHOOK_SIGNATURE_INVALID',
    )
    const unsigned = await app.inject({
      method: 'POST',
      url: '/api/webhooks/whatsapp',
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify(payload),
    })
    expectError(unsigned, 401, 'WEBHOOK_SIGNATURE_INVALID')
    // The signature covers the exact bytes: the same JSON re-spaced does not pass.
    const body = JSON.stringify(payload)
    const respaced = await app.inject({
      method: 'POST',
      url: '/api/webhooks/whatsapp',
      headers: { 'content-type': 'application/json', 'x-hub-signature-256': sign(body) },
      payload: JSON.stringify(payload, null, 2),
    })
    expectError(respaced, 401, 'WEBHOOK_SIGNATURE_INVALID')
    expect((await status(id)).json().status).toBe('sent')
  })

  it("takes a large batch of statuses (over the send endpoints' 64 KiB) in one delivery", async () => {
    const ids = await Promise.all(Array.from({ length: 3 }, (_, i) => sentMessage(`wamid.batch-${i}`)))
    const now = Math.floor(Date.now() / 1000)
    const statuses = Array.from({ length: 600 }, (_, i) => ({
      id: `wamid.batch-${i % 3}`,
      status: 'delivered',
      timestamp: String(now),
      recipient_id: '5511987654321',
      pricing: { billable: true, pricing_model: 'CBP', category: 'utility' },
    }))
    const payload = {
      object: 'whatsapp_business_account',
      entry: [{ id: 'W', changes: [{ field: 'messages', value: { statuses } }] }],
    }
    expect(JSON.stringify(payload).length).toBeGreaterThan(65_536)
    expect((await deliver(payload)).statusCode).toBe(200)
    for (const id of ids) expect((await status(id)).json().status).toBe('delivered')
  })

  it('acknowledges unknown message ids and unknown statuses, and refuses malformed bodies with 400', async () => {
    const now = Math.floor(Date.now() / 1000)
    expect((await deliver(statusEvent('wamid.never-sent', 'delivered', now))).statusCode).toBe(200)
    expect((await deliver(statusEvent('wamid.hook-1', 'deleted', now))).statusCode).toBe(200)
    const notJson = '{"object":'
    const res = await app.inject({
      method: 'POST',
      url: '/api/webhooks/whatsapp',
      headers: { 'content-type': 'application/json', 'x-hub-signature-256': sign(notJson) },
      payload: notJson,
    })
    expectError(res, 400, 'VALIDATION_ERROR')
    expectError(await deliver({ object: 'whatsapp_business_account' }), 400, 'VALIDATION_ERROR', /entry/)
  })
})
