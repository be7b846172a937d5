import { randomBytes } from 'node:crypto'
import { SERVICE_WINDOW_MS, serviceWindowKey, serviceWindowsLoadedKey } from '@dispatch/runtime'
import {
  type FakeWhatsApp,
  graphError,
  inboundMessage,
  messageWebhook,
  startFakeWhatsApp,
  startWebhookReceiver,
  type WebhookReceiver,
  waitFor,
} from '@dispatch/testing'
import type { RunningWorker } from '@dispatch/worker'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  addWebhookEndpoint,
  asAdmin,
  buildTestApp,
  createWorld,
  postPlatformWebhook,
  SEND_SCOPES,
  send,
  startTestWorker,
  type TestApp,
  type TestWorld,
  untilMessageStatus,
  validSends,
} from '../helpers.ts'
import { keyOf, newPhone, replyFrom, syncedSender } from './setup.ts'

const SECRETS_KEY = randomBytes(32).toString('base64')
const APP_SECRET = 'app-secret-0123456789'
const { phone: _phone, ...fallbackTemplate } = validSends['send-template']

let world: TestWorld
let app: TestApp
let fake: FakeWhatsApp
let receiver: WebhookReceiver
let worker: RunningWorker
let redis: Redis
let sender: { id: string; phoneNumberId: string }
let key: { id: string; key: string }

const setPolicy = async (serviceWindowPolicy: 'off' | 'enforce') => {
  const res = await app.inject({
    method: 'PATCH',
    url: `/api/admin/senders/${sender.id}`,
    headers: asAdmin(),
    payload: { serviceWindowPolicy },
  })
  expect(res.statusCode, res.body).toBe(200)
}

/** A window that closes `closesInMs` from now, as a reply almost 24 h ago leaves it. */
const windowClosingIn = (phone: string, closesInMs: number) => {
  const last = Date.now() - SERVICE_WINDOW_MS + closesInMs
  return redis.set(
    serviceWindowKey(world.queuePrefix, sender.phoneNumberId, phone),
    String(last),
    'PX',
    closesInMs,
  )
}

/** A text due in 2 s, to a recipient whose window closes in 1 s. */
async function textOutlivingItsWindow(extra: object = {}) {
  const phone = newPhone()
  await windowClosingIn(phone, 1000)
  const res = await send(app, 'send-text', key.key, {
    phone,
    text: 'Your table is ready',
    sendAt: new Date(Date.now() + 2000).toISOString(),
    ...extra,
  })
  expect(res.statusCode, res.body).toBe(202)
  return { phone, messageId: res.json().messageId as string }
}

beforeAll(async () => {
  world = await createWorld()
  fake = await startFakeWhatsApp()
  receiver = await startWebhookReceiver()
  const env = { SECRETS_KEY, WHATSAPP_API_URL: fake.url }
  app = await buildTestApp(world, {
    ...env,
    WHATSAPP_APP_SECRET: APP_SECRET,
    SCHEDULE_MIN_AHEAD_SECONDS: '1',
  })
  redis = new Redis(world.redisUrl)
  sender = await syncedSender(app, fake)
  key = await keyOf(app, sender.id, [...SEND_SCOPES, 'manage:webhooks'])
  await addWebhookEndpoint(app, key.key, { url: receiver.url, events: ['message.sent', 'message.failed'] })
  await setPolicy('enforce')
  worker = await startTestWorker(world, {
    ...env,
    WHATSAPP_ACCESS_TOKEN: 'default-token',
    WHATSAPP_PHONE_NUMBER_ID: '106540352242922',
    ADMISSION_INTERVAL_MS: '20',
    SERVICE_WINDOW_CHECK_MS: '200',
    TEMPLATE_SYNC_INTERVAL_MS: '0',
  })
  // The worker found the copy of the windows missing, rebuilt it (empty) and marked it complete.
  await waitFor(
    async () => (await redis.exists(serviceWindowsLoadedKey(world.queuePrefix))) === 1 || undefined,
    {
      what: 'the windows marked complete',
    },
  )
})

afterAll(async () => {
  redis?.disconnect()
  await worker?.close()
  await app?.close()
  await receiver?.close()
  await fake?.close()
  await world?.close()
})

describe('a free-form message under enforce, when a worker takes it', () => {
  it('goes out as text while the window is open', async () => {
    const phone = newPhone()
    const reply = await replyFrom(app, APP_SECRET, sender.phoneNumberId, phone)
    expect(reply.statusCode).toBe(200)
    const res = await send(app, 'send-text', key.key, { phone, text: 'Yes!', fallbackTemplate })
    const sent = await untilMessageStatus(app, key.key, res.json().messageId, 'sent')
    expect(sent.fallbackUsed).toBe(false)
    expect(fake.requests.find((r) => r.messageId === sent.messageId)?.body).toMatchObject({ type: 'text' })
  })

  it('goes out as its fallback template when the window closed before it was due, and says so', async () => {
    const { phone, messageId } = await textOutlivingItsWindow({ fallbackTemplate })
    const sent = await untilMessageStatus(app, key.key, messageId, 'sent')
    expect(sent).toMatchObject({ type: 'text', fallbackUsed: true })
    const requests = fake.requests.filter((r) => r.messageId === messageId)
    expect(requests).toHaveLength(1)
    expect(requests[0]?.body).toMatchObject({
      to: phone.slice(1),
      type: 'template',
      template: {
        name: 'order_shipped',
        language: { code: 'pt_BR' },
        components: [
          { type: 'header', parameters: [{ type: 'image', image: { id: 'media-123' } }] },
          {
            type: 'body',
            parameters: [
              { type: 'text', text: 'Ana' },
              { type: 'text', text: 'BR-1042' },
            ],
          },
          {
            type: 'button',
            sub_type: 'url',
            index: '0',
            parameters: [{ type: 'text', text: 'track/BR-1042' }],
          },
        ],
      },
    })
    const event = await waitFor(
      () =>
        receiver.received.find((r) => r.json.type === 'message.sent' && r.json.data.messageId === messageId),
      { what: 'the message.sent event', timeoutMs: 15_000 },
    )
    expect(event.json.data).toMatchObject({ fallbackUsed: true, type: 'text' })
  })

  it('is judged again once a window the worker found open has ended (it remembers one open only until then)', async () => {
    const phone = newPhone()
    await windowClosingIn(phone, 1500)
    const first = await send(app, 'send-text', key.key, { phone, text: 'While it is open', fallbackTemplate })
    expect(first.statusCode, first.body).toBe(202)
    const sentFirst = await untilMessageStatus(app, key.key, first.json().messageId, 'sent')
    expect(sentFirst.fallbackUsed).toBe(false)
    const later = await send(app, 'send-text', key.key, {
      phone,
      text: 'After it closed',
      sendAt: new Date(Date.now() + 2500).toISOString(),
      fallbackTemplate,
    })
    expect(later.statusCode, later.body).toBe(202)
    const sentLater = await untilMessageStatus(app, key.key, later.json().messageId, 'sent')
    expect(sentLater.fallbackUsed).toBe(true)
  })

  it('ends canceled, unsent, when its recipient wrote STOP after it was accepted, whatever the window', async () => {
    const phone = newPhone()
    expect((await replyFrom(app, APP_SECRET, sender.phoneNumberId, phone)).statusCode).toBe(200)
    const res = await send(app, 'send-text', key.key, {
      phone,
      text: 'Your table is ready',
      sendAt: new Date(Date.now() + 2000).toISOString(),
      fallbackTemplate,
    })
    expect(res.statusCode, res.body).toBe(202)
    const stop = messageWebhook(sender.phoneNumberId, inboundMessage('text', { phone }, { text: 'STOP' }))
    expect((await postPlatformWebhook(app, stop, APP_SECRET)).statusCode).toBe(200)
    const view = await untilMessageStatus(app, key.key, res.json().messageId, ['canceled', 'sent', 'failed'])
    expect(view).toMatchObject({ status: 'canceled', lastError: { code: 'RECIPIENT_OPTED_OUT' } })
    expect(fake.requests.filter((r) => r.messageId === view.messageId)).toHaveLength(0)
  })

  it('fails with the window’s code, unsent, when it has no fallback', async () => {
    const { messageId } = await textOutlivingItsWindow()
    const failed = await untilMessageStatus(app, key.key, messageId, 'failed')
    expect(failed.lastError).toMatchObject({ code: '131047', message: expect.stringContaining('24-hour') })
    expect(fake.requests.filter((r) => r.messageId === messageId)).toEqual([])
  })

  it('is sent as its fallback when the platform itself answers 131047, whatever the policy', async () => {
    await setPolicy('off')
    const phone = newPhone()
    fake.script(graphError(131047, 'Re-engagement message'))
    const res = await send(app, 'send-text', key.key, { phone, text: 'Hello again', fallbackTemplate })
    const sent = await untilMessageStatus(app, key.key, res.json().messageId, 'sent')
    expect(sent.fallbackUsed).toBe(true)
    expect(fake.requests.filter((r) => r.messageId === sent.messageId).map((r) => r.body.type)).toEqual([
      'text',
      'template',
    ])
    await setPolicy('enforce')
  })
})

describe('the Redis copy of the windows', () => {
  it('is rebuilt from Postgres when it was lost, and marked complete again', async () => {
    const phone = newPhone()
    const at = Date.now() - 3_600_000
    const reply = await replyFrom(app, APP_SECRET, sender.phoneNumberId, phone, at)
    expect(reply.statusCode).toBe(200)
    const windowKey = serviceWindowKey(world.queuePrefix, sender.phoneNumberId, phone)
    expect(await redis.get(windowKey)).toBe(String(Math.floor(at / 1000) * 1000))
    // Redis loses its data.
    await redis.del(windowKey, serviceWindowsLoadedKey(world.queuePrefix))
    await waitFor(
      async () => (await redis.exists(serviceWindowsLoadedKey(world.queuePrefix))) === 1 || undefined,
      {
        what: 'the copy rebuilt',
      },
    )
    expect(await redis.get(windowKey)).toBe(String(Math.floor(at / 1000) * 1000))
    const ttl = await redis.pttl(windowKey)
    expect(ttl).toBeGreaterThan(SERVICE_WINDOW_MS - 3_600_000 - 60_000)
    expect(ttl).toBeLessThanOrEqual(SERVICE_WINDOW_MS - 3_600_000)
    // And the closed windows are known closed again.
    await waitFor(
      async () =>
        (await send(app, 'send-text', key.key, { phone: newPhone(), text: 'x' })).statusCode === 422 ||
        undefined,
      { what: 'closed windows known closed again', timeoutMs: 3000 },
    )
    expect((await send(app, 'send-text', key.key, { phone, text: 'x' })).statusCode).toBe(202)
  })
})
