import type { SmsFallbackTimerJob } from '@dispatch/contracts'
import {
  type FakeSms,
  type FakeWhatsApp,
  graphError,
  statusWebhook,
  type WebhookReceiver,
  waitFor,
} from '@dispatch/testing'
import type { Queue, QueueEvents } from 'bullmq'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  activeKey,
  asAdmin,
  expectError,
  messageView,
  postPlatformWebhook,
  send,
  type TestApp,
  untilMessageStatus,
} from '../helpers.ts'
import { APP_SECRET, SMS, type SmsFallbackWorld, startSmsFallbackWorld } from './sms-fallback-world.ts'

/**
 * The channel fallback's "no delivered within afterSeconds" rule and a sender's default fallback,
 * end to end (docs/fallback.md): the API, the worker, WhatsApp's status webhooks and the fake SMS
 * provider. Timers are due minutes ahead; a test runs one now (`promote`), as its time would.
 */
let fallbackWorld: SmsFallbackWorld
let app: TestApp
let whatsapp: FakeWhatsApp
let sms: FakeSms
let receiver: WebhookReceiver
let timers: Queue<SmsFallbackTimerJob>
let timerEvents: QueueEvents
let key: { id: string; key: string }

beforeAll(async () => {
  fallbackWorld = await startSmsFallbackWorld()
  ;({ app, whatsapp, sms, receiver, timers, timerEvents, key } = fallbackWorld)
})
afterAll(() => fallbackWorld?.close())

let phones = 0
const newPhone = () => `+4915114${String(300_000 + phones++)}`
const sentText: SmsFallbackWorld['sentText'] = (...args) => fallbackWorld.sentText(...args)

/** Runs the message's timer now, and waits for its run to end. */
async function fire(messageId: string): Promise<string> {
  const job = await waitFor(async () => (await timers.getJob(messageId)) ?? false, { what: 'the timer' })
  await job.promote()
  return job.waitUntilFinished(timerEvents, 10_000)
}

/** WhatsApp's status webhook for the message, signed as Meta signs it. */
async function whatsappStatus(sent: { messageId: string; platformMessageId: string }, status: string) {
  const res = await postPlatformWebhook(
    app,
    statusWebhook({
      id: sent.platformMessageId,
      status,
      timestamp: String(Math.floor(Date.now() / 1000)),
      biz_opaque_callback_data: sent.messageId,
    }),
    APP_SECRET,
  )
  expect(res.statusCode, res.body).toBe(200)
}

const eventsOf = (messageId: string, type: string) =>
  receiver.received.filter((r) => r.json.type === type && r.json.data?.messageId === messageId)

describe('fallback.afterSeconds', () => {
  it('is refused out of its bounds', async () => {
    for (const afterSeconds of [9, 86_401, 1.5]) {
      const res = await send(app, 'send-text', key.key, {
        phone: newPhone(),
        text: 'hi',
        fallback: { sms: SMS, afterSeconds },
      })
      expectError(res, 400, 'VALIDATION_ERROR', /afterSeconds/)
    }
  })

  it('no delivered in time: one SMS; WhatsApp delivering later, twice, is recorded beside it', async () => {
    const phone = newPhone()
    const sent = await sentText(phone, { fallback: { sms: SMS, afterSeconds: 300 } })
    expect(sms.sentTo(phone)).toHaveLength(0)
    await fire(sent.messageId)
    expect(sms.sentTo(phone)).toHaveLength(1)
    // WhatsApp's delivered after the SMS was committed, its webhook posted twice.
    await whatsappStatus(sent, 'delivered')
    await whatsappStatus(sent, 'delivered')
    const view = await messageView(app, key.key, sent.messageId)
    expect(view).toMatchObject({
      status: 'delivered',
      channel: 'sms',
      fallback: { reason: 'not_delivered_in_time', reasonCode: null, state: 'sent' },
    })
    // Each event once: the SMS, and WhatsApp's delivered.
    await waitFor(() => eventsOf(sent.messageId, 'message.delivered').length > 0, { what: 'delivered' })
    await waitFor(() => eventsOf(sent.messageId, 'message.fallback_sent').length > 0, {
      what: 'fallback_sent',
    })
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect(eventsOf(sent.messageId, 'message.delivered')).toHaveLength(1)
    expect(eventsOf(sent.messageId, 'message.fallback_sent')).toHaveLength(1)
    expect(sms.sentTo(phone)).toHaveLength(1)
  })

  it('delivered first: the timer sends nothing, and the view has no fallback', async () => {
    const phone = newPhone()
    const sent = await sentText(phone, { fallback: { sms: SMS, afterSeconds: 300 } })
    await whatsappStatus(sent, 'delivered')
    expect(await fire(sent.messageId)).toBe('refused')
    const view = await messageView(app, key.key, sent.messageId)
    expect(view.status).toBe('delivered')
    expect(view.fallback).toBeUndefined()
    expect(view.channel).toBeUndefined()
    expect(sms.sentTo(phone)).toHaveLength(0)
  })

  it('a delivered webhook racing the timer: at most one SMS, and the view says which happened', async () => {
    const runs = await Promise.all(
      Array.from({ length: 12 }, async () => {
        const phone = newPhone()
        return { phone, ...(await sentText(phone, { fallback: { sms: SMS, afterSeconds: 300 } })) }
      }),
    )
    const fired = await Promise.all(
      runs.map(
        async (run) => (await Promise.all([whatsappStatus(run, 'delivered'), fire(run.messageId)]))[1],
      ),
    )
    for (const [i, run] of runs.entries()) {
      const view = await messageView(app, key.key, run.messageId)
      const texts = sms.sentTo(run.phone).length
      const seen = JSON.stringify({ texts, view, timer: fired[i] })
      expect(texts, seen).toBeLessThanOrEqual(1)
      expect(view.status, seen).toBe('delivered')
      if (texts === 1) expect(view, seen).toMatchObject({ channel: 'sms', fallback: { state: 'sent' } })
      else expect(view.fallback === undefined || view.fallback.state === 'withdrawn', seen).toBe(true)
    }
  })
})

describe("a sender's default fallback", () => {
  const setDefault = (defaultFallback: unknown) =>
    app.inject({
      method: 'PATCH',
      url: '/api/admin/senders/default',
      headers: asAdmin(),
      payload: { defaultFallback },
    })

  it('is set and cleared by an admin, and refused when malformed', async () => {
    const set = await setDefault({ sms: { text: 'Default SMS' }, afterSeconds: 600 })
    expect(set.statusCode, set.body).toBe(200)
    expect(set.json().defaultFallback).toEqual({ sms: { text: 'Default SMS' }, afterSeconds: 600 })
    expectError(await setDefault({ sms: { text: '' } }), 400, 'VALIDATION_ERROR', /defaultFallback/)
    expectError(await setDefault({ sms: { text: 'x' }, afterSeconds: 5 }), 400, 'VALIDATION_ERROR')
    const cleared = await setDefault(null)
    expect(cleared.json().defaultFallback).toBeNull()
  })

  it("goes with a send that has none, for a key holding send:sms-fallback; the send's own wins", async () => {
    expect((await setDefault({ sms: { text: 'Default SMS' } })).statusCode).toBe(200)
    try {
      const plain = await activeKey(app, { scopes: ['send:free-text', 'read:messages'] })
      const [withDefault, withOwn, withoutScope] = [newPhone(), newPhone(), newPhone()]
      for (const [phone, body, apiKey] of [
        [withDefault, {}, key.key],
        [withOwn, { fallback: { sms: { text: 'Own SMS' } } }, key.key],
        [withoutScope, {}, plain.key],
      ] as const) {
        whatsapp.script(graphError(131026, 'Message undeliverable'))
        const res = await send(app, 'send-text', apiKey, { phone, text: 'hi', ...body })
        expect(res.statusCode, res.body).toBe(202)
        await untilMessageStatus(app, apiKey, res.json().messageId, 'failed')
      }
      await waitFor(() => sms.sentTo(withDefault).length > 0 && sms.sentTo(withOwn).length > 0, {
        what: 'the two SMS',
      })
      expect(sms.sentTo(withDefault).map((s) => s.params.Body)).toEqual(['Default SMS'])
      expect(sms.sentTo(withOwn).map((s) => s.params.Body)).toEqual(['Own SMS'])
      expect(sms.sentTo(withoutScope)).toHaveLength(0)
    } finally {
      await setDefault(null)
    }
  })
})

describe('where a fallback shows', () => {
  let texted: string
  let plain: string
  beforeAll(async () => {
    const phone = newPhone()
    texted = (await sentText(phone, { fallback: { sms: SMS, afterSeconds: 300 } })).messageId
    await fire(texted)
    const [taken] = sms.sentTo(phone)
    // The provider's report, posted twice: one entry, one status.
    for (const status of ['delivered', 'delivered']) {
      const signed = sms.statusCallback(taken?.sid as string, status, { price: '-0.00750', priceUnit: 'usd' })
      const report = await app.inject({
        method: 'POST',
        url: '/api/webhooks/sms/status',
        headers: signed.headers,
        payload: signed.body,
      })
      expect(report.statusCode, report.body).toBe(204)
    }
    plain = (await sentText(newPhone(), {})).messageId
  })

  const listIds = async (url: string, headers: Record<string, string>) => {
    const res = await app.inject({ method: 'GET', url, headers })
    expect(res.statusCode, res.body).toBe(200)
    return res.json<{ data: Array<{ messageId: string; channel?: string; fallback?: { state: string } }> }>()
      .data
  }

  it("filters the key's list by channel and by the fallback's state, and shows both on each item", async () => {
    const headers = { 'x-api-key': key.key }
    const sms = await listIds('/api/third-party/messages?channel=sms&take=100', headers)
    expect(sms.map((m) => m.messageId)).toContain(texted)
    expect(sms.every((m) => m.channel === 'sms' && m.fallback?.state === 'sent')).toBe(true)
    const whatsapp = await listIds('/api/third-party/messages?channel=whatsapp&take=100', headers)
    expect(whatsapp.map((m) => m.messageId)).toContain(plain)
    expect(whatsapp.map((m) => m.messageId)).not.toContain(texted)
    const none = await listIds('/api/third-party/messages?fallback=none&take=100', headers)
    expect(none.map((m) => m.messageId)).toContain(plain)
    expect(none.every((m) => m.fallback === undefined)).toBe(true)
    const settled = await listIds('/api/third-party/messages?fallback=sent,withdrawn&take=100', headers)
    expect(settled.map((m) => m.messageId)).toContain(texted)
    expect(settled.map((m) => m.messageId)).not.toContain(plain)
    const refused = await app.inject({ method: 'GET', url: '/api/third-party/messages?channel=fax', headers })
    expectError(refused, 400, 'VALIDATION_ERROR', /channel/)
    // Another key's list holds none of them, whatever it filters on.
    const other = await activeKey(app, { scopes: ['read:messages'] })
    expect(
      await listIds('/api/third-party/messages?channel=sms&take=100', { 'x-api-key': other.key }),
    ).toEqual([])
  })

  it("filters the admins' list alike", async () => {
    const sms = await listIds('/api/admin/messages?channel=sms&take=100', asAdmin())
    expect(sms.map((m) => m.messageId)).toContain(texted)
    expect(sms.map((m) => m.messageId)).not.toContain(plain)
    expect(sms.find((m) => m.messageId === texted)).toMatchObject({
      channel: 'sms',
      fallback: { state: 'sent' },
    })
  })

  it("puts the fallback's steps on the message's timeline, the key's and the admins'", async () => {
    for (const [url, headers] of [
      [`/api/third-party/messages/${texted}/timeline`, { 'x-api-key': key.key }],
      [`/api/admin/messages/${texted}/timeline`, asAdmin()],
    ] as const) {
      const res = await app.inject({ method: 'GET', url, headers })
      expect(res.statusCode, res.body).toBe(200)
      const { message, entries } = res.json<{
        message: { channel?: string; fallback?: { state: string; status: string } }
        entries: Array<{ kind: string; summary: string }>
      }>()
      expect(message).toMatchObject({
        channel: 'sms',
        fallback: { state: 'sent', status: 'delivered', price: { amount: '0.00750', currency: 'USD' } },
      })
      const kinds = entries.map((e) => e.kind)
      expect(kinds.filter((k) => k.startsWith('fallback_'))).toEqual([
        'fallback_decided',
        'fallback_sent',
        'fallback_delivery',
      ])
      expect(kinds.indexOf('sent')).toBeLessThan(kinds.indexOf('fallback_decided'))
      expect(entries.find((e) => e.kind === 'fallback_decided')?.summary).toMatch(/no delivery in time/)
      expect(entries.find((e) => e.kind === 'fallback_delivery')?.summary).toMatch(/SMS delivered/)
    }
  })
})
