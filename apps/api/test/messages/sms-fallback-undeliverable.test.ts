import {
  type BatchAccepted,
  DEFAULT_SENDER_ID,
  type SmsFallbackTimerJob,
  smsFallbackHoldKey,
} from '@dispatch/contracts'
import { redactExpiredMessages } from '@dispatch/db'
import { fairKeys } from '@dispatch/runtime/message-handoff'
import { type FakeSms, statusWebhook, type WebhookReceiver, waitFor } from '@dispatch/testing'
import type { Queue } from 'bullmq'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest'
import {
  activeKey,
  asAdmin,
  messageView,
  postPlatformWebhook,
  type TestApp,
  type TestWorld,
  untilMessageStatus,
} from '../helpers.ts'
import { APP_SECRET, SMS, type SmsFallbackWorld, startSmsFallbackWorld } from './sms-fallback-world.ts'

/**
 * The channel fallback when WhatsApp reports a message undeliverable (131026) in a status webhook
 * after taking it, end to end (docs/fallback.md): the API answers the webhook, a worker sends the
 * SMS, at most once, from the timer (or hold) armed when WhatsApp took it.
 */
let fallbackWorld: SmsFallbackWorld
let world: TestWorld
let app: TestApp
let sms: FakeSms
let receiver: WebhookReceiver
let timers: Queue<SmsFallbackTimerJob>
let key: { id: string; key: string }

beforeAll(async () => {
  fallbackWorld = await startSmsFallbackWorld()
  ;({ world, app, sms, receiver, timers, key } = fallbackWorld)
})
afterAll(() => fallbackWorld?.close())

let phones = 0
const newPhone = () => `+4915114${String(600_000 + phones++)}`
const sentText: SmsFallbackWorld['sentText'] = (...args) => fallbackWorld.sentText(...args)

/**
 * WhatsApp's status webhook for the message, signed as Meta signs it; `failed` with 131026. `at`:
 * the status's time (Unix seconds), now by default.
 */
async function whatsappStatus(
  sent: { messageId: string; platformMessageId: string },
  status: string,
  at = Math.floor(Date.now() / 1000),
) {
  const res = await postPlatformWebhook(
    app,
    statusWebhook({
      id: sent.platformMessageId,
      status,
      timestamp: String(at),
      biz_opaque_callback_data: sent.messageId,
      ...(status === 'failed'
        ? { errors: [{ code: 131026, title: 'Message undeliverable', message: 'Message undeliverable' }] }
        : {}),
    }),
    APP_SECRET,
  )
  expect(res.statusCode, res.body).toBe(200)
}

const eventsOf = (messageId: string, type: string) =>
  receiver.received.filter((r) => r.json.type === type && r.json.data?.messageId === messageId)
const redisOf = () => {
  const redis = new Redis(world.redisUrl)
  onTestFinished(() => redis.disconnect())
  return redis
}
const settle = () => new Promise((resolve) => setTimeout(resolve, 500))
/** The SMS its sent record keeps, once the record is written (null: none). */
const keptSms = (messageId: string) =>
  waitFor(
    async () => {
      const [row] = await world.sql<{ status: string; text: string | null }[]>`
        select status, sms_fallback_text as text from messages where id = ${messageId}`
      return row?.status === 'sent' ? { text: row.text } : undefined
    },
    { what: 'the sent record' },
  ).then((row) => row.text)

describe('131026 reported in a status webhook after WhatsApp took the message', () => {
  it('sends one SMS for a duplicated failed webhook; a late delivered, twice, is recorded beside it once', async () => {
    const phone = newPhone()
    const sent = await sentText(phone, { fallback: { sms: SMS } })
    // The SMS kept with its sent record when WhatsApp took it: nothing waits in Redis, no timer
    // (never a timeout of its own).
    expect(await keptSms(sent.messageId)).toBe(SMS.text)
    expect(await redisOf().exists(smsFallbackHoldKey(world.queuePrefix, sent.messageId))).toBe(0)
    expect(await timers.getJob(sent.messageId)).toBeUndefined()
    expect(sms.sentTo(phone)).toHaveLength(0)
    // Meta delivers the failed status twice, at once.
    await Promise.all([whatsappStatus(sent, 'failed'), whatsappStatus(sent, 'failed')])
    await waitFor(() => sms.sentTo(phone).length > 0, { what: 'the sms' })
    await waitFor(async () => (await messageView(app, key.key, sent.messageId)).fallback?.state === 'sent', {
      what: 'the sms recorded',
    })
    await whatsappStatus(sent, 'failed')
    expect(sms.sentTo(phone)[0]?.params.Body).toBe(SMS.text)
    await waitFor(() => eventsOf(sent.messageId, 'message.fallback_sent').length > 0, {
      what: 'fallback_sent',
    })
    // A delivered that arrives after, twice: `failed` is final and stays, but WhatsApp's word is
    // recorded beside it, once, at the first report's time: both channels reached them.
    const deliveredAt = Math.floor(Date.now() / 1000) + 2
    await whatsappStatus(sent, 'delivered', deliveredAt)
    await whatsappStatus(sent, 'delivered', deliveredAt + 5)
    await settle()
    expect(sms.sentTo(phone)).toHaveLength(1)
    const view = await messageView(app, key.key, sent.messageId)
    expect(view).toMatchObject({
      status: 'failed',
      lastError: { code: '131026' },
      channel: 'sms',
      fallback: {
        reason: 'whatsapp_undeliverable',
        reasonCode: '131026',
        state: 'sent',
        whatsappDeliveredAt: new Date(deliveredAt * 1000).toISOString(),
      },
    })
    const timeline = await app.inject({
      method: 'GET',
      url: `/api/third-party/messages/${sent.messageId}/timeline`,
      headers: { 'x-api-key': key.key },
    })
    expect(timeline.statusCode, timeline.body).toBe(200)
    const entries = timeline.json<{ entries: Array<{ kind: string; at: string; summary: string }> }>().entries
    expect(entries.map((e) => e.kind)).toEqual(
      expect.arrayContaining(['failed', 'fallback_decided', 'fallback_sent', 'delivered']),
    )
    expect(entries.find((e) => e.kind === 'delivered')).toMatchObject({
      at: new Date(deliveredAt * 1000).toISOString(),
      summary: expect.stringMatching(/after the message failed \(its status stays failed\)/),
    })
    // One event says it, with the message still failed and its SMS sent; no `message.delivered`.
    await waitFor(() => eventsOf(sent.messageId, 'message.delivered_after_failure').length > 0, {
      what: 'delivered_after_failure',
    })
    await settle()
    expect(eventsOf(sent.messageId, 'message.fallback_sent')).toHaveLength(1)
    expect(eventsOf(sent.messageId, 'message.delivered')).toHaveLength(0)
    const late = eventsOf(sent.messageId, 'message.delivered_after_failure')
    expect(late).toHaveLength(1)
    expect(late[0]?.json).toMatchObject({
      timestamp: new Date(deliveredAt * 1000).toISOString(),
      data: {
        messageId: sent.messageId,
        status: 'failed',
        reported: 'delivered',
        deliveredAt: new Date(deliveredAt * 1000).toISOString(),
        fallbackState: 'sent',
      },
    })
    expect(await timers.getJob(sent.messageId)).toBeUndefined()
  })

  it('runs an afterSeconds timer at once, for the undeliverable rule', async () => {
    const phone = newPhone()
    const sent = await sentText(phone, { fallback: { sms: SMS, afterSeconds: 3_600 } })
    await waitFor(async () => (await timers.getJob(sent.messageId)) ?? false, { what: 'the timer' })
    await whatsappStatus(sent, 'failed')
    await waitFor(() => sms.sentTo(phone).length > 0, { what: 'the sms' })
    await waitFor(async () => (await messageView(app, key.key, sent.messageId)).fallback?.state === 'sent', {
      what: 'the sms recorded',
    })
    const view = await messageView(app, key.key, sent.messageId)
    expect(view.fallback).toMatchObject({ reason: 'whatsapp_undeliverable', reasonCode: '131026' })
    expect(sms.sentTo(phone)).toHaveLength(1)
  })

  it('sends nothing for a message without a fallback', async () => {
    const phone = newPhone()
    const sent = await sentText(phone, {})
    expect(await timers.getJob(sent.messageId)).toBeUndefined()
    expect(await redisOf().exists(smsFallbackHoldKey(world.queuePrefix, sent.messageId))).toBe(0)
    await whatsappStatus(sent, 'failed')
    await settle()
    const view = await messageView(app, key.key, sent.messageId)
    expect(view.status).toBe('failed')
    expect(view.fallback).toBeUndefined()
    expect(sms.sentTo(phone)).toHaveLength(0)
  })

  it('a send whose content is discarded keeps its SMS in Redis, never in its record; a 131026 sends it once', async () => {
    const phone = newPhone()
    const sent = await sentText(phone, { fallback: { sms: SMS }, contentRetention: 'discard' })
    expect(await keptSms(sent.messageId)).toBeNull()
    const holdKey = smsFallbackHoldKey(world.queuePrefix, sent.messageId)
    const redis = redisOf()
    expect(await redis.ttl(holdKey)).toBeGreaterThan(86_000)
    expect(JSON.parse((await redis.get(holdKey)) as string)).toMatchObject({
      messageId: sent.messageId,
      to: phone,
      text: SMS.text,
      undeliverableOnly: true,
    })
    await Promise.all([whatsappStatus(sent, 'failed'), whatsappStatus(sent, 'failed')])
    await waitFor(() => sms.sentTo(phone).length > 0, { what: 'the sms' })
    await settle()
    expect(sms.sentTo(phone).map((taken) => taken.params.Body)).toEqual([SMS.text])
    expect(await redis.exists(holdKey)).toBe(0)
  })

  it('a recipient erased before the 131026: its record keeps no SMS, and none is sent', async () => {
    const phone = newPhone()
    const sent = await sentText(phone, { fallback: { sms: SMS } })
    expect(await keptSms(sent.messageId)).toBe(SMS.text)
    const res = await app.inject({
      method: 'POST',
      url: '/api/admin/erasures',
      headers: asAdmin(),
      payload: { phone },
    })
    expect(res.statusCode, res.body).toBe(202)
    const erased = await waitFor(
      async () => {
        const [row] = await world.sql<{ phone: string | null; text: string | null }[]>`
          select phone, sms_fallback_text as text from messages where id = ${sent.messageId}`
        return row && row.phone === null ? row : undefined
      },
      { what: 'the erasure', timeoutMs: 20_000 },
    )
    expect(erased.text).toBeNull()
    await whatsappStatus(sent, 'failed')
    await settle()
    expect(sms.sentTo(phone)).toHaveLength(0)
    expect((await messageView(app, key.key, sent.messageId)).fallback).toBeUndefined()
  })

  it('content redacted before the 131026 (its key keeps it an hour): its record keeps no SMS, and none is sent', async () => {
    const hourly = await activeKey(app, { scopes: ['send:free-text', 'read:messages', 'send:sms-fallback'] })
    const patched = await app.inject({
      method: 'PATCH',
      url: `/api/admin/api-keys/${hourly.id}`,
      headers: asAdmin(),
      payload: { contentRetention: 1 },
    })
    expect(patched.statusCode, patched.body).toBe(200)
    const phone = newPhone()
    const sent = await sentText(phone, { fallback: { sms: SMS } }, hourly.key)
    expect(await keptSms(sent.messageId)).toBe(SMS.text)
    // The redaction as a worker runs it, two hours on: the message's content is due.
    await redactExpiredMessages(app.deps.db, new Date(Date.now() + 2 * 3_600_000), 1_000)
    const [row] = await world.sql<{ text: string | null; redacted: boolean }[]>`
      select sms_fallback_text as text, redacted_at is not null as redacted from messages where id = ${sent.messageId}`
    expect(row).toEqual({ text: null, redacted: true })
    await whatsappStatus(sent, 'failed')
    await settle()
    expect(sms.sentTo(phone)).toHaveLength(0)
  })

  it('a delivered first: a failed that follows sends nothing', async () => {
    const phone = newPhone()
    const sent = await sentText(phone, { fallback: { sms: SMS } })
    expect(await keptSms(sent.messageId)).toBe(SMS.text)
    await whatsappStatus(sent, 'delivered')
    await whatsappStatus(sent, 'failed')
    await settle()
    expect(sms.sentTo(phone)).toHaveLength(0)
    const view = await messageView(app, key.key, sent.messageId)
    expect(view.fallback).toBeUndefined()
  })
})

describe('a bundle of messages carrying a fallback', () => {
  it('keeps each its own SMS with its record, and a 131026 reported for each sends each one SMS', async () => {
    const phones = Array.from({ length: 6 }, newPhone)
    const redis = redisOf()
    // WhatsApp slow to answer: the batch's bundle is still sending while its index is read.
    fallbackWorld.whatsapp.latencyMs = 500
    onTestFinished(() => {
      fallbackWorld.whatsapp.latencyMs = 0
    })
    const res = await app.inject({
      method: 'POST',
      url: '/api/third-party/messages/batch',
      headers: { 'x-api-key': key.key },
      payload: {
        messages: phones.map((phone) => ({
          type: 'text',
          phone,
          text: 'Your order has shipped',
          fallback: { sms: SMS },
        })),
      },
    })
    expect(res.statusCode, res.body).toBe(202)
    const batch = res.json<BatchAccepted>()
    expect(batch.accepted).toBe(phones.length)
    const ids = batch.results.map((r) => ('messageId' in r ? r.messageId : ''))
    // Delivered in bundles, not a job each: the sender's bundle index names every one of them.
    await waitFor(
      async () => {
        const named = await redis.hmget(fairKeys(world.queuePrefix, DEFAULT_SENDER_ID).bundled, ...ids)
        return named.every((bundle) => bundle !== null)
      },
      { what: 'the six bundled', intervalMs: 10 },
    )
    const sent = await Promise.all(
      ids.map(async (messageId) => {
        const view = await untilMessageStatus(app, key.key, messageId, 'sent')
        await waitFor(
          async () =>
            (await world.sql`select 1 from messages where id = ${messageId} and status = 'sent'`).length > 0,
          { what: 'the sent record' },
        )
        return { messageId, platformMessageId: view.platformMessageId as string }
      }),
    )
    // Each message keeps the SMS's text with its own record and number; nothing waits in Redis.
    for (const [i, { messageId }] of sent.entries()) {
      const [row] = await world.sql<{ phone: string; text: string }[]>`
        select phone, sms_fallback_text as text from messages where id = ${messageId}`
      expect(row).toEqual({ phone: phones[i], text: SMS.text })
      expect(await redis.exists(smsFallbackHoldKey(world.queuePrefix, messageId))).toBe(0)
    }
    expect(phones.every((phone) => sms.sentTo(phone).length === 0)).toBe(true)
    await Promise.all(sent.map((message) => whatsappStatus(message, 'failed')))
    await waitFor(() => phones.every((phone) => sms.sentTo(phone).length > 0), { what: 'six SMS' })
    await settle()
    for (const [i, { messageId }] of sent.entries()) {
      expect(sms.sentTo(phones[i] as string).map((taken) => taken.params.Body)).toEqual([SMS.text])
      expect(await redis.exists(smsFallbackHoldKey(world.queuePrefix, messageId))).toBe(0)
    }
  })
})

describe("an SMS's price, which the provider's reports do not carry", () => {
  /** The provider's signed delivery report of the SMS, without a price, as Twilio posts them. */
  async function smsReport(sid: string, status: string) {
    const signed = sms.statusCallback(sid, status)
    const res = await app.inject({
      method: 'POST',
      url: '/api/webhooks/sms/status',
      headers: signed.headers,
      payload: signed.body,
    })
    expect(res.statusCode, res.body).toBe(204)
  }

  it('is read from the provider once its delivery ended, asked again while it has none, and shown', async () => {
    // The provider's record says no price at the first read, as Twilio's does for a while.
    Object.assign(sms.pricing, { price: '-0.00830', priceUnit: 'USD', unpricedReads: 1 })
    onTestFinished(() => void Object.assign(sms.pricing, { price: '-0.00750', unpricedReads: 0 }))
    const phone = newPhone()
    const sent = await sentText(phone, { fallback: { sms: SMS } })
    await whatsappStatus(sent, 'failed')
    await waitFor(async () => (await messageView(app, key.key, sent.messageId)).fallback?.state === 'sent', {
      what: 'the sms recorded',
    })
    const sid = sms.sentTo(phone)[0]?.sid as string
    // Still on its way: nothing is asked (a price comes after the delivery).
    await smsReport(sid, 'sent')
    await settle()
    expect(sms.reads(sid)).toBe(0)
    await smsReport(sid, 'delivered')
    const priced = await waitFor(
      async () => {
        const view = await messageView(app, key.key, sent.messageId)
        return view.fallback?.price !== undefined && view
      },
      { what: 'the price read' },
    )
    expect(priced.fallback).toMatchObject({
      state: 'sent',
      status: 'delivered',
      price: { amount: '0.00830', currency: 'USD' },
    })
    // Once unpriced, then priced: never asked again.
    expect(sms.reads(sid)).toBe(2)
    await settle()
    expect(sms.reads(sid)).toBe(2)
    expect(sms.sentTo(phone)).toHaveLength(1)
  })
})
