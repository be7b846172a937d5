import { serviceWindowsLoadedKey } from '@dispatch/runtime'
import {
  type FakeWhatsApp,
  inboundMessage,
  messageWebhook,
  startFakeWhatsApp,
  startWebhookReceiver,
  statusWebhook,
  type WebhookReceiver,
  waitFor,
} from '@dispatch/testing'
import type { RunningWorker } from '@dispatch/worker'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  activeKey,
  addWebhookEndpoint,
  asAdmin,
  buildTestApp,
  createWorld,
  expectError,
  postPlatformWebhook,
  startTestWorker,
  type TestApp,
  type TestWorld,
  untilMessageStatus,
} from '../helpers.ts'
import { untilRecordedSent } from './setup.ts'

const APP_SECRET = 'app-secret-0123456789'
const NUMBER = '106540352242922'

let world: TestWorld
let app: TestApp
let fake: FakeWhatsApp
let receiver: WebhookReceiver
let worker: RunningWorker
let redis: Redis
let acme: { id: string; key: string }
let other: { id: string; key: string }

let users = 0
/** A BSUID no test here used yet, shaped as Meta's. */
const newUserId = () => `BR.${Date.now()}${users++}`

const sendText = (key: { key: string }, to: object, text = 'Hello') =>
  app.inject({
    method: 'POST',
    url: '/api/third-party/messages/send-text',
    headers: { 'x-api-key': key.key },
    payload: { ...to, text },
  })

const deliver = (...messages: unknown[]) =>
  postPlatformWebhook(app, messageWebhook(NUMBER, ...messages), APP_SECRET)

const storedReply = async (wamid: string) => {
  const [row] = await world.sql<
    { api_key_id: string | null; phone: string | null; user_id: string | null; username: string | null }[]
  >`
    select api_key_id, phone, user_id, username from inbound_messages where platform_message_id = ${wamid}`
  return row
}

beforeAll(async () => {
  world = await createWorld()
  fake = await startFakeWhatsApp()
  receiver = await startWebhookReceiver()
  app = await buildTestApp(world, { WHATSAPP_APP_SECRET: APP_SECRET })
  redis = new Redis(world.redisUrl)
  acme = await activeKey(app, { scopes: ['send:free-text', 'read:messages', 'manage:webhooks'] })
  other = await activeKey(app, { scopes: ['send:free-text', 'read:messages'] })
  await addWebhookEndpoint(app, acme.key, {
    url: receiver.url,
    events: ['message.received', 'message.sent', 'message.delivered'],
  })
  worker = await startTestWorker(world, {
    WHATSAPP_API_URL: fake.url,
    WHATSAPP_ACCESS_TOKEN: 'default-token',
    WHATSAPP_PHONE_NUMBER_ID: NUMBER,
    ADMISSION_INTERVAL_MS: '20',
    SERVICE_WINDOW_CHECK_MS: '200',
  })
})

afterAll(async () => {
  redis?.disconnect()
  await worker?.close()
  await app?.close()
  await receiver?.close()
  await fake?.close()
  await world?.close()
})

describe('a user known only by username (a BSUID, no phone)', () => {
  it('a send to userId goes out with the Cloud API recipient field, and its reply is routed back', async () => {
    const userId = newUserId()
    const res = await sendText(acme, { userId }, 'Your order shipped')
    expect(res.statusCode, res.body).toBe(202)
    expect(res.json()).toMatchObject({ phone: null, userId })
    await untilRecordedSent(world, res.json().messageId)
    const sent = await untilMessageStatus(app, acme.key, res.json().messageId, 'sent')
    expect(sent).toMatchObject({ phone: null, userId })
    const request = fake.requests.find((r) => r.messageId === sent.messageId)
    expect(request?.body).toMatchObject({ recipient: userId, type: 'text' })
    expect(request?.body).not.toHaveProperty('to')
    const event = await waitFor(() =>
      receiver.received.find(
        (r) => r.json.type === 'message.sent' && r.json.data.messageId === sent.messageId,
      ),
    )
    expect(event.json.data).toMatchObject({ phone: null, userId })

    // The user answers from their username: no `from`, only `from_user_id`.
    const reply = inboundMessage('text', { userId, username: 'ana.lima' }, { text: 'Thanks!' })
    expect(reply).not.toHaveProperty('from')
    expect((await deliver(reply)).statusCode).toBe(200)
    expect(await storedReply(reply.id)).toEqual({
      api_key_id: acme.id,
      phone: null,
      user_id: userId,
      username: 'ana.lima',
    })
    const received = await waitFor(() =>
      receiver.received.find((r) => r.json.type === 'message.received' && r.json.data.text === 'Thanks!'),
    )
    expect(received.json.data).toMatchObject({ phone: null, userId, username: 'ana.lima', type: 'text' })
    expect(app.logs.lines.some((l) => l.includes('ana.lima') || l.includes(userId))).toBe(false)
  })

  it("its window is tracked: under enforce, free text waits for the user's message", async () => {
    const policy = await app.inject({
      method: 'PATCH',
      url: '/api/admin/senders/default',
      headers: asAdmin(),
      payload: { serviceWindowPolicy: 'enforce' },
    })
    expect(policy.statusCode, policy.body).toBe(200)
    await waitFor(
      async () => (await redis.exists(serviceWindowsLoadedKey(world.queuePrefix))) === 1 || undefined,
    )
    try {
      const userId = newUserId()
      await waitFor(async () => {
        const res = await sendText(acme, { userId })
        return res.statusCode === 422 ? res : undefined
      })
      expectError(
        await sendText(acme, { userId }),
        422,
        'OUTSIDE_SERVICE_WINDOW',
        /body\.userId: .* window with BR\.\d+ is closed/,
      )
      expect((await deliver(inboundMessage('location', { userId }))).statusCode).toBe(200)
      const res = await sendText(acme, { userId }, 'Got your location')
      expect(res.statusCode, res.body).toBe(202)
      await untilMessageStatus(app, acme.key, res.json().messageId, 'sent')
    } finally {
      await app.inject({
        method: 'PATCH',
        url: '/api/admin/senders/default',
        headers: asAdmin(),
        payload: { serviceWindowPolicy: 'off' },
      })
    }
  })
})

describe('a user known by both', () => {
  it('remembers the pair, so a reply naming only the BSUID finds the conversation begun by phone', async () => {
    const phone = `+55119${String(Date.now()).slice(-8)}`
    const userId = newUserId()
    // `other` wrote first, to the phone; `acme` wrote last, to the phone too.
    for (const key of [other, acme]) {
      const res = await sendText(key, { phone })
      await untilRecordedSent(world, res.json().messageId)
    }
    // The user answers with both (Meta names the phone while it is in its contact book)…
    const both = inboundMessage('text', { phone, userId })
    expect((await deliver(both)).statusCode).toBe(200)
    expect(await storedReply(both.id)).toMatchObject({ api_key_id: acme.id, phone, user_id: userId })
    // …then from the username alone: the pair routes it, and fills in the phone.
    const bsuidOnly = inboundMessage('button_reply', { userId }, { id: 'yes', text: 'Yes' })
    expect((await deliver(bsuidOnly)).statusCode).toBe(200)
    expect(await storedReply(bsuidOnly.id)).toMatchObject({ api_key_id: acme.id, phone, user_id: userId })
    const event = await waitFor(() =>
      receiver.received.find(
        (r) =>
          r.json.type === 'message.received' &&
          r.json.data.button !== undefined &&
          r.json.data.userId === userId,
      ),
    )
    expect(event.json.data).toMatchObject({ phone, userId, button: { id: 'yes', title: 'Yes' } })
  })

  it("learns the BSUID from a status of a message sent to the phone: the message, its event and the user's replies carry both", async () => {
    const phone = `+55119${String(Date.now()).slice(-8)}`
    const userId = newUserId()
    const res = await sendText(acme, { phone }, 'Your parcel is out for delivery')
    await untilRecordedSent(world, res.json().messageId)
    const sent = await untilMessageStatus(app, acme.key, res.json().messageId, 'sent')
    expect(sent).toMatchObject({ phone, userId: null })
    // Meta names the user both ways in the status (`recipient_user_id` beside `recipient_id`).
    const status = statusWebhook({
      id: sent.platformMessageId,
      status: 'delivered',
      timestamp: String(Math.floor(Date.now() / 1000)),
      recipient_id: phone.slice(1),
      recipient_user_id: userId,
    })
    expect((await postPlatformWebhook(app, status, APP_SECRET)).statusCode).toBe(200)
    expect(await untilMessageStatus(app, acme.key, sent.messageId, 'delivered')).toMatchObject({
      phone,
      userId,
    })
    const delivered = await waitFor(() =>
      receiver.received.find(
        (r) => r.json.type === 'message.delivered' && r.json.data.messageId === sent.messageId,
      ),
    )
    expect(delivered.json.data).toMatchObject({ phone, userId, status: 'delivered' })
    // The pair is remembered: a reply naming only the BSUID is routed here, its phone filled in.
    const reply = inboundMessage('text', { userId }, { text: 'Thank you' })
    expect((await deliver(reply)).statusCode).toBe(200)
    expect(await storedReply(reply.id)).toMatchObject({ api_key_id: acme.id, phone, user_id: userId })
    // A malformed BSUID in a status is ignored, never the status it came with.
    const other = await sendText(acme, { phone: `+55119${String(Date.now() + 1).slice(-8)}` })
    await untilRecordedSent(world, other.json().messageId)
    const otherSent = await untilMessageStatus(app, acme.key, other.json().messageId, 'sent')
    const malformed = statusWebhook({
      id: otherSent.platformMessageId,
      status: 'delivered',
      timestamp: String(Math.floor(Date.now() / 1000)),
      recipient_user_id: 'not a bsuid',
    })
    expect((await postPlatformWebhook(app, malformed, APP_SECRET)).statusCode).toBe(200)
    expect(await untilMessageStatus(app, acme.key, otherSent.messageId, 'delivered')).toMatchObject({
      userId: null,
    })
  })

  it('lists messages by userId', async () => {
    const userId = newUserId()
    const res = await sendText(acme, { userId })
    expect(res.statusCode, res.body).toBe(202)
    const listed = (id: string) =>
      app.inject({
        method: 'GET',
        url: `/api/third-party/messages?take=10&userId=${encodeURIComponent(id)}`,
        headers: { 'x-api-key': acme.key },
      })
    const page = await waitFor(async () => {
      const found = await listed(userId)
      return found.json().data.length > 0 ? found : undefined
    })
    expect(
      page.json().data.map((m: { messageId: string; userId: string }) => [m.messageId, m.userId]),
    ).toEqual([[res.json().messageId, userId]])
    expect((await listed(newUserId())).json().data).toEqual([])
  })
})
