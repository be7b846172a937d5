import { senderQueueName } from '@dispatch/contracts'
import {
  type FakeSms,
  type FakeWhatsApp,
  startFakeSms,
  startFakeWhatsApp,
  startWebhookReceiver,
  type WebhookReceiver,
  waitFor,
} from '@dispatch/testing'
import type { RunningWorker } from '@dispatch/worker'
import { Queue } from 'bullmq'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  activeKey,
  addWebhookEndpoint,
  asAdmin,
  buildTestApp,
  createWorld,
  messageView,
  SEND_SCOPES,
  send,
  startTestWorker,
  type TestApp,
  type TestWorld,
  untilMessageStatus,
} from '../helpers.ts'

/**
 * A held sender (here: an admin's switch) admits nothing; its waiting messages still expire when
 * their validity ends, with their `message.expired` event, not when the sender resumes.
 */
const NUMBER = '100000000000671'
const TOKEN = 'EAAG-held-expiry-token-0001'

let world: TestWorld
let app: TestApp
let fake: FakeWhatsApp
let receiver: WebhookReceiver
let worker: RunningWorker
let key: { id: string; key: string }
let redis: Redis
let sms: FakeSms

beforeAll(async () => {
  world = await createWorld()
  fake = await startFakeWhatsApp()
  fake.number(NUMBER, { token: TOKEN })
  receiver = await startWebhookReceiver()
  sms = await startFakeSms()
  app = await buildTestApp(world, { MESSAGE_RATE_PER_SECOND: '10000', MESSAGE_VALIDITY_MIN_SECONDS: '1' })
  worker = await startTestWorker(world, {
    WHATSAPP_API_URL: fake.url,
    WHATSAPP_ACCESS_TOKEN: TOKEN,
    WHATSAPP_PHONE_NUMBER_ID: NUMBER,
    ADMISSION_INTERVAL_MS: '20',
    SENDER_REFRESH_MS: '200',
    EXPIRY_SWEEP_MS: '200',
    ...sms.env(),
  })
  key = await activeKey(app, { scopes: [...SEND_SCOPES, 'manage:webhooks', 'send:sms-fallback'] })
  await addWebhookEndpoint(app, key.key, { url: receiver.url, events: ['message.expired', 'message.sent'] })
  redis = new Redis(world.redisUrl)
})

afterAll(async () => {
  redis?.disconnect()
  await worker?.close()
  await app?.close()
  await receiver?.close()
  await sms?.close()
  await fake?.close()
  await world?.close()
})

const sendText = async (validitySeconds: number, extra: Record<string, unknown> = {}) => {
  const res = await send(app, 'send-text', key.key, {
    phone: '+5511987654321',
    text: 'hi',
    validitySeconds,
    ...extra,
  })
  expect(res.statusCode, res.body).toBe(202)
  return res.json<{ messageId: string }>().messageId
}

const switchQueue = async (action: 'pause' | 'resume') => {
  const res = await app.inject({
    method: 'POST',
    url: `/api/admin/queues/messages.default/${action}`,
    headers: asAdmin(),
    payload: {},
  })
  expect(res.statusCode, res.body).toBe(200)
}

describe('messages of a held sender', () => {
  it('expire on time, with their event, while the sender is held; the others go once it resumes', async () => {
    await switchQueue('pause')
    const queue = new Queue(senderQueueName('default'), { connection: redis, prefix: world.queuePrefix })
    await waitFor(async () => (await queue.isPaused()) || undefined, { what: 'the sender held in BullMQ' })
    await queue.close()

    const shortLived = await sendText(1)
    const longLived = await sendText(3600)
    const expired = await untilMessageStatus(app, key.key, shortLived, 'expired')
    expect(expired.lastError).toMatchObject({ code: 'MESSAGE_EXPIRED' })
    const event = await waitFor(
      () =>
        receiver.received.find(
          (r) => r.json.type === 'message.expired' && r.json.data?.messageId === shortLived,
        ),
      { what: 'the message.expired event', timeoutMs: 15_000 },
    )
    expect(event.json.data?.messageId).toBe(shortLived)
    // Still held: the other one waits, and nothing reached the platform.
    expect((await messageView(app, key.key, longLived)).status).toBe('queued')
    expect(fake.requests).toHaveLength(0)

    await switchQueue('resume')
    await untilMessageStatus(app, key.key, longLived, 'sent')
    expect(fake.sendsOf(longLived)).toBe(1)
    expect(fake.sendsOf(shortLived)).toBe(0)
    expect((await messageView(app, key.key, shortLived)).status).toBe('expired')
  })

  it('one expired with a fallback goes out as one SMS instead, while the sender is held', async () => {
    await switchQueue('pause')
    const queue = new Queue(senderQueueName('default'), { connection: redis, prefix: world.queuePrefix })
    await waitFor(async () => (await queue.isPaused()) || undefined, { what: 'the sender held in BullMQ' })
    await queue.close()
    const phone = '+5511987650001'
    const id = await sendText(1, { phone, fallback: { sms: { text: 'Your code is 123456' } } })
    const view = await waitFor(
      async () => {
        const v = await messageView(app, key.key, id)
        return v.fallback?.state === 'sent' && v
      },
      { what: 'the SMS sent', timeoutMs: 15_000 },
    )
    expect(view).toMatchObject({
      status: 'expired',
      channel: 'sms',
      fallback: { reason: 'expired', reasonCode: null, state: 'sent' },
    })
    expect(sms.sentTo(phone)).toHaveLength(1)
    await switchQueue('resume')
    expect(fake.sendsOf(id)).toBe(0)
  })
})
