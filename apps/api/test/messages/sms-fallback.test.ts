import {
  type FakeSms,
  type FakeWhatsApp,
  graphError,
  startFakeSms,
  startFakeWhatsApp,
  startWebhookReceiver,
  type WebhookReceiver,
  waitFor,
} from '@dispatch/testing'
import type { RunningWorker } from '@dispatch/worker'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  activeKey,
  addWebhookEndpoint,
  buildTestApp,
  createWorld,
  expectError,
  messageView,
  send,
  startTestWorker,
  type TestApp,
  type TestWorld,
  untilMessageStatus,
} from '../helpers.ts'

/**
 * The channel fallback end to end (docs/fallback.md): a text WhatsApp refuses with 131026 goes out
 * as an SMS through the fake provider, once, and its view and delivery reports say so.
 */
const PUBLIC_URL = 'https://dispatch.example.com/api/webhooks/sms/status'

let world: TestWorld
let app: TestApp
let whatsapp: FakeWhatsApp
let sms: FakeSms
let worker: RunningWorker
let receiver: WebhookReceiver
let key: { key: string }

beforeAll(async () => {
  world = await createWorld()
  whatsapp = await startFakeWhatsApp()
  sms = await startFakeSms()
  const smsEnv = sms.env(PUBLIC_URL)
  app = await buildTestApp(world, smsEnv)
  worker = await startTestWorker(world, {
    ...smsEnv,
    WHATSAPP_API_URL: whatsapp.url,
    WHATSAPP_ACCESS_TOKEN: 'default-token',
    WHATSAPP_PHONE_NUMBER_ID: '106540352242922',
    ADMISSION_INTERVAL_MS: '20',
    TEMPLATE_SYNC_INTERVAL_MS: '0',
  })
  key = await activeKey(app, {
    scopes: ['send:free-text', 'read:messages', 'send:sms-fallback', 'manage:webhooks'],
  })
  receiver = await startWebhookReceiver()
  await addWebhookEndpoint(app, key.key, {
    url: receiver.url,
    events: ['message.failed', 'message.fallback_sent'],
  })
})
afterAll(async () => {
  await worker?.close()
  await app?.close()
  await receiver?.close()
  await sms?.close()
  await whatsapp?.close()
  await world?.close()
})

let phones = 0
const newPhone = () => `+4915112${String(300_000 + phones++)}`
const fallback = { sms: { text: 'Your order has shipped: track it at example.com/t/1' } }

describe('a send with fallback.sms', () => {
  it('needs the send:sms-fallback scope', async () => {
    const plain = await activeKey(app, { scopes: ['send:free-text', 'read:messages'] })
    const res = await send(app, 'send-text', plain.key, { phone: newPhone(), text: 'hi', fallback })
    expectError(res, 403, 'INSUFFICIENT_SCOPE', /send:sms-fallback.*body\.fallback/)
    // In a batch, the item alone is refused; the others go.
    const batch = await app.inject({
      method: 'POST',
      url: '/api/third-party/messages/batch',
      headers: { 'x-api-key': plain.key },
      payload: {
        messages: [
          { type: 'text', phone: newPhone(), text: 'hi' },
          { type: 'text', phone: newPhone(), text: 'hi', fallback },
        ],
      },
    })
    expect(batch.statusCode, batch.body).toBe(202)
    const [ok, refused] = batch.json<{ results: Array<{ messageId?: string }> }>().results
    expect(ok).toMatchObject({ index: 0, status: 'queued' })
    // Sent before the next test scripts WhatsApp's answer.
    await untilMessageStatus(app, plain.key, ok?.messageId as string, 'sent')
    expect(refused).toMatchObject({
      index: 1,
      error: { statusCode: 403, errorCode: 'INSUFFICIENT_SCOPE', message: expect.stringMatching(/fallback/) },
    })
  })

  it('goes out as one SMS when WhatsApp answers 131026, and its view says so', async () => {
    const phone = newPhone()
    whatsapp.script(graphError(131026, 'Message undeliverable'))
    const res = await send(app, 'send-text', key.key, { phone, text: 'Your order has shipped', fallback })
    expect(res.statusCode, res.body).toBe(202)
    const { messageId } = res.json<{ messageId: string }>()
    await untilMessageStatus(app, key.key, messageId, 'failed')
    const [taken] = await waitFor(() => sms.sentTo(phone).length > 0 && sms.sentTo(phone), {
      what: 'the SMS',
    })
    expect(taken?.params).toMatchObject({ To: phone, Body: fallback.sms.text, StatusCallback: PUBLIC_URL })
    const view = await waitFor(
      async () => {
        const v = await messageView(app, key.key, messageId)
        return v.fallback?.state === 'sent' && v
      },
      { what: 'the fallback recorded sent' },
    )
    expect(view).toMatchObject({
      status: 'failed',
      lastError: { code: '131026' },
      channel: 'sms',
      fallback: {
        channel: 'sms',
        reason: 'whatsapp_undeliverable',
        reasonCode: '131026',
        state: 'sent',
        status: 'queued',
        error: null,
      },
    })

    // The provider's reports, one of them twice: the view follows, once.
    for (const status of ['sent', 'delivered', 'delivered']) {
      const signed = sms.statusCallback(taken?.sid as string, status)
      const report = await app.inject({
        method: 'POST',
        url: '/api/webhooks/sms/status',
        headers: signed.headers,
        payload: signed.body,
      })
      expect(report.statusCode, report.body).toBe(204)
    }
    expect((await messageView(app, key.key, messageId)).fallback?.status).toBe('delivered')
    expect(sms.sentTo(phone)).toHaveLength(1)

    // The events: WhatsApp's failure, then the SMS, once.
    const events = await waitFor(
      () => {
        const mine = receiver.received.filter((r) => r.json.data?.messageId === messageId)
        return mine.length >= 2 && mine
      },
      { what: 'the failed and fallback_sent events' },
    )
    expect(events.map((e) => e.json.type)).toEqual(['message.failed', 'message.fallback_sent'])
    expect(events[1]?.json.data).toMatchObject({
      messageId,
      phone,
      status: 'failed',
      channel: 'sms',
      fallback: { reason: 'whatsapp_undeliverable', reasonCode: '131026', state: 'sent', status: 'queued' },
      sequence: 2,
    })
  })

  it('sends no SMS for a message WhatsApp took', async () => {
    const phone = newPhone()
    const res = await send(app, 'send-text', key.key, { phone, text: 'hello', fallback })
    const { messageId } = res.json<{ messageId: string }>()
    const view = await untilMessageStatus(app, key.key, messageId, 'sent')
    // No fallback decided: the view is as every WhatsApp message's, neither field (a list's item alike).
    expect(view.channel).toBeUndefined()
    expect(view.fallback).toBeUndefined()
    expect(sms.sentTo(phone)).toHaveLength(0)
  })

  it('sends no SMS for a 131026 without a fallback', async () => {
    const phone = newPhone()
    whatsapp.script(graphError(131026, 'Message undeliverable'))
    const res = await send(app, 'send-text', key.key, { phone, text: 'hello' })
    const { messageId } = res.json<{ messageId: string }>()
    const view = await untilMessageStatus(app, key.key, messageId, 'failed')
    expect(view.fallback).toBeUndefined()
    expect(sms.sentTo(phone)).toHaveLength(0)
  })
})
