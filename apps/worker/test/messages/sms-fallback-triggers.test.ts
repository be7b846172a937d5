import { QueueNames, type SmsFallbackTimerJob, smsFallbackHoldKey } from '@dispatch/contracts'
import {
  applyPlatformStatus,
  applySmsStatus,
  campaignCounts,
  createDb,
  decideFallback,
  findCampaign,
  findFallback,
} from '@dispatch/db'
import { messageIdAt } from '@dispatch/runtime'
import { type FakeSms, startFakeSms, testRedisUrl, waitFor } from '@dispatch/testing'
import { type Job, Queue, QueueEvents } from 'bullmq'
import { Redis } from 'ioredis'
import pino from 'pino'
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest'
import { fireSmsFallbackTimer } from '../../src/messages/fallback-timer.ts'
import { createTwilioSmsProvider } from '../../src/platforms/sms/twilio.ts'
import { createDeliveryWorld, type DeliveryWorld, text } from './world.ts'

/**
 * The channel fallback's other triggers, through the real worker against Postgres, Redis, the fake
 * Cloud API and the fake SMS provider (docs/fallback.md): a message expired before it went, and
 * "no `delivered` within `afterSeconds`" after WhatsApp's `sent` (a delayed job in Redis).
 */
let world: DeliveryWorld
let sms: FakeSms
let timers: Queue<SmsFallbackTimerJob>
let timerEvents: QueueEvents
let worker: Awaited<ReturnType<DeliveryWorld['startWorker']>>
let client: ReturnType<typeof createDb>

beforeAll(async () => {
  world = await createDeliveryWorld()
  sms = await startFakeSms()
  timers = new Queue(QueueNames.smsFallbackTimers, {
    connection: { url: testRedisUrl() },
    prefix: world.queuePrefix,
  })
  timerEvents = new QueueEvents(QueueNames.smsFallbackTimers, {
    connection: { url: testRedisUrl() },
    prefix: world.queuePrefix,
  })
  await timerEvents.waitUntilReady()
  worker = await world.startWorker(sms.env())
  client = createDb(world.workerEnv().DATABASE_URL as string, { max: 2 })
})
afterAll(async () => {
  await worker?.close()
  await timerEvents?.close()
  await timers?.obliterate({ force: true }).catch(() => {})
  await timers?.close()
  await client?.close()
  await sms?.close()
  await world?.close()
})

let phones = 0
const newPhone = () => `+4915113${String(100_000 + phones++)}`
const to = (phone: string) => ({ type: 'text', body: { ...text().body, phone } }) as ReturnType<typeof text>
const SMS_TEXT = 'Your order has shipped'

/** The message's timer once armed. */
const timerOf = (messageId: string) =>
  waitFor(async () => (await timers.getJob(messageId)) ?? false, { what: 'the fallback timer armed' })

/** Runs the timer now, as if its `afterSeconds` had passed; answers how its run ended. */
async function fire(messageId: string): Promise<string> {
  const job = await timerOf(messageId)
  await job.promote()
  return job.waitUntilFinished(timerEvents, 10_000)
}

/** WhatsApp's `delivered` as the webhook route applies it. */
const delivered = async (messageId: string) => {
  const row = await world.message(messageId)
  return applyPlatformStatus(client.db, {
    platformMessageId: row?.platform_message_id as string,
    status: 'delivered',
    at: new Date(),
  } as Parameters<typeof applyPlatformStatus>[1])
}

describe('an expired message', () => {
  it('is recorded expired and goes out as one SMS instead', async () => {
    const phone = newPhone()
    const messageId = await world.enqueue(to(phone), undefined, {
      expiresAt: new Date(Date.now() - 1000).toISOString(),
      fallback: { sms: { text: SMS_TEXT } },
    })
    // The record says `sent` once the provider's answer is in, a moment after the provider took it.
    const fallback = await waitFor(
      async () => {
        const found = await findFallback(client.sql, messageId)
        return found?.state === 'sent' && found
      },
      { what: 'the SMS recorded sent' },
    )
    expect(fallback).toMatchObject({ reason: 'expired', state: 'sent' })
    expect(sms.sentTo(phone).map((taken) => taken.params)).toEqual([
      expect.objectContaining({ To: phone, Body: SMS_TEXT }),
    ])
    expect((await world.message(messageId))?.status).toBe('expired')
    expect(world.fake.requests.some((r) => r.messageId === messageId)).toBe(false)
  })

  it('without a fallback, only expires', async () => {
    const phone = newPhone()
    const messageId = await world.enqueue(to(phone), undefined, {
      expiresAt: new Date(Date.now() - 1000).toISOString(),
    })
    await waitFor(async () => (await world.message(messageId))?.status === 'expired', { what: 'expired' })
    expect(await findFallback(client.sql, messageId)).toBeUndefined()
    expect(sms.sentTo(phone)).toHaveLength(0)
  })
})

describe('no delivered within afterSeconds', () => {
  it('arms a timer afterSeconds after WhatsApp took it; fired, one SMS, and a late delivered is recorded beside it', async () => {
    const phone = newPhone()
    const before = Date.now()
    const messageId = await world.enqueue(to(phone), undefined, {
      fallback: { sms: { text: SMS_TEXT }, afterSeconds: 600 },
    })
    const timer = await timerOf(messageId)
    expect(await timer.getState()).toBe('delayed')
    // Due afterSeconds after the send, not before.
    expect(timer.timestamp + (timer.opts.delay ?? 0)).toBeGreaterThanOrEqual(before + 600_000)
    expect(timer.timestamp + (timer.opts.delay ?? 0)).toBeLessThan(Date.now() + 600_000 + 1000)
    await waitFor(async () => (await world.message(messageId))?.status === 'sent', { what: 'sent' })
    expect(sms.sentTo(phone)).toHaveLength(0)

    expect(await fire(messageId)).toBe('sent')
    expect(sms.sentTo(phone)).toHaveLength(1)
    expect(await findFallback(client.sql, messageId)).toMatchObject({
      reason: 'not_delivered_in_time',
      state: 'sent',
    })
    // WhatsApp's delivered comes after the SMS was committed: both are recorded, truthfully.
    await delivered(messageId)
    await delivered(messageId)
    expect((await world.message(messageId))?.status).toBe('delivered')
    expect((await findFallback(client.sql, messageId))?.state).toBe('sent')
    expect(sms.sentTo(phone)).toHaveLength(1)
  })

  it('delivered before the timer fires: nothing is sent', async () => {
    const phone = newPhone()
    const messageId = await world.enqueue(to(phone), undefined, {
      fallback: { sms: { text: SMS_TEXT }, afterSeconds: 600 },
    })
    await waitFor(async () => (await world.message(messageId))?.status === 'sent', { what: 'sent' })
    await delivered(messageId)
    expect(await fire(messageId)).toBe('refused')
    expect(sms.sentTo(phone)).toHaveLength(0)
    expect(await findFallback(client.sql, messageId)).toBeUndefined()
  })

  it('a late delivered racing the timer: never two SMS, and the record says what happened', async () => {
    const runs = await Promise.all(
      Array.from({ length: 8 }, async () => {
        const phone = newPhone()
        const messageId = await world.enqueue(to(phone), undefined, {
          fallback: { sms: { text: SMS_TEXT }, afterSeconds: 600 },
        })
        await waitFor(async () => (await world.message(messageId))?.status === 'sent', { what: 'sent' })
        await timerOf(messageId)
        return { phone, messageId }
      }),
    )
    await Promise.all(runs.map(({ messageId }) => Promise.all([delivered(messageId), fire(messageId)])))
    for (const { phone, messageId } of runs) {
      const fallback = await findFallback(client.sql, messageId)
      const texts = sms.sentTo(phone).length
      expect(texts).toBeLessThanOrEqual(1)
      expect((await world.message(messageId))?.status).toBe('delivered')
      // Texted only when the decision committed before the delivered: the record then keeps both.
      if (texts === 1) expect(fallback?.state).toBe('sent')
      else expect(fallback === undefined || fallback.state === 'withdrawn').toBe(true)
    }
  })

  it('a run killed between its decision and the call: the timer run again sends the SMS once', async () => {
    const phone = newPhone()
    const messageId = await world.enqueue(to(phone), undefined, {
      fallback: { sms: { text: SMS_TEXT }, afterSeconds: 600 },
    })
    await waitFor(async () => (await world.message(messageId))?.status === 'sent', { what: 'sent' })
    const row = await world.message(messageId)
    // What a run leaves when its process dies right after the decision committed.
    await decideFallback(client.sql, {
      messageId,
      acceptedAt: new Date(row?.accepted_at as string),
      reason: 'not_delivered_in_time',
      fromStatuses: ['sent'],
      at: new Date(),
    })
    expect(await fire(messageId)).toBe('sent')
    expect(sms.sentTo(phone)).toHaveLength(1)
    expect((await findFallback(client.sql, messageId))?.state).toBe('sent')
  })

  it('a message without afterSeconds arms no timer and writes no hold: its sent record keeps the SMS; none is sent', async () => {
    const phone = newPhone()
    const messageId = await world.enqueue(to(phone), undefined, { fallback: { sms: { text: SMS_TEXT } } })
    await waitFor(async () => (await world.message(messageId))?.status === 'sent', { what: 'sent' })
    const [row] = await client.sql<{ phone: string; text: string }[]>`
      select phone, sms_fallback_text as text from messages where id = ${messageId}`
    expect(row).toEqual({ phone, text: SMS_TEXT })
    const redis = new Redis(testRedisUrl())
    onTestFinished(() => redis.disconnect())
    expect(await redis.exists(smsFallbackHoldKey(world.queuePrefix, messageId))).toBe(0)
    expect(await timers.getJob(messageId)).toBeUndefined()
    await new Promise((resolve) => setTimeout(resolve, 200))
    expect(sms.sentTo(phone)).toHaveLength(0)
  })

  it('a message whose content is discarded: its sent record keeps no SMS, a hold of a day does', async () => {
    const phone = newPhone()
    const messageId = await world.enqueue(to(phone), undefined, {
      fallback: { sms: { text: SMS_TEXT } },
      discardContent: true,
    })
    await waitFor(async () => (await world.message(messageId))?.status === 'sent', { what: 'sent' })
    const [row] = await client.sql<{ text: string | null }[]>`
      select sms_fallback_text as text from messages where id = ${messageId}`
    expect(row?.text).toBeNull()
    const redis = new Redis(testRedisUrl())
    onTestFinished(() => redis.disconnect())
    const hold = JSON.parse((await redis.get(smsFallbackHoldKey(world.queuePrefix, messageId))) as string)
    expect(hold).toMatchObject({ messageId, to: phone, text: SMS_TEXT, undeliverableOnly: true })
    expect(await redis.ttl(smsFallbackHoldKey(world.queuePrefix, messageId))).toBeGreaterThan(86_000)
    expect(sms.sentTo(phone)).toHaveLength(0)
  })
})

describe("an SMS's price", () => {
  it('is kept as its report says, and summed by currency with its campaign', async () => {
    const sql = client.sql
    const [campaign] = await sql<{ id: string }[]>`
      insert into campaigns (api_key_id, sender_id, name, template, status, fed_rows, audience)
      values (${world.apiKeyId}, 'default', 'Spring', ${JSON.stringify({ name: 'promo', language: 'en' })}::jsonb,
        'running', 3, ${JSON.stringify({ taken: 3, skipped: 0 })}::jsonb)
      returning id`
    const sids: string[] = []
    for (const n of [0, 1, 2]) {
      const phone = newPhone()
      const messageId = await world.enqueue(to(phone), undefined, {
        batchId: campaign?.id,
        expiresAt: new Date(Date.now() - 1000).toISOString(),
        fallback: { sms: { text: SMS_TEXT } },
      })
      await waitFor(async () => (await findFallback(client.sql, messageId))?.state === 'sent', {
        what: `SMS ${n}`,
      })
      sids.push((await findFallback(client.sql, messageId))?.providerMessageId as string)
    }
    // Twilio's sign: a charge is negative. The third is not priced yet.
    await applySmsStatus(sql, {
      providerMessageId: sids[0] as string,
      status: 'delivered',
      price: { amount: '0.00750', currency: 'USD' },
      at: new Date(),
    })
    await applySmsStatus(sql, {
      providerMessageId: sids[1] as string,
      status: 'delivered',
      price: { amount: '0.01250', currency: 'USD' },
      at: new Date(),
    })
    const row = await findCampaign(client.db, campaign?.id as string)
    const counted = await campaignCounts(client.db, row as NonNullable<typeof row>)
    expect(counted.pricing.sms).toEqual({ sent: 3, priceByCurrency: { USD: '0.02000' } })
    expect(counted.pricing).toMatchObject({ billable: 0, byCategory: {} })
  })
})

describe('a timer due before its message is recorded sent', () => {
  it('is tried again later, never sent blind; once recorded, it sends', async () => {
    const phone = newPhone()
    const acceptedAt = new Date(Date.now() - 60_000)
    const messageId = messageIdAt(acceptedAt.getTime())
    // WhatsApp took it, but its sent record is still on its way (the sent log behind).
    await client.sql`
      insert into messages (id, api_key_id, type, phone, payload, status, accepted_at)
      values (${messageId}, ${world.apiKeyId}, 'text', ${phone}, ${JSON.stringify({ text: 'hi' })}::jsonb,
        'sending', ${acceptedAt.toISOString()})`
    const job = {
      data: {
        messageId,
        acceptedAt: acceptedAt.toISOString(),
        to: phone,
        text: SMS_TEXT,
        sentAt: new Date().toISOString(),
      },
    } as Job<SmsFallbackTimerJob>
    const deps = {
      sql: client.sql,
      db: client.db,
      sms: createTwilioSmsProvider({
        apiUrl: sms.url,
        accountSid: sms.accountSid,
        authToken: sms.authToken,
        from: '+15005550006',
        timeoutMs: 2000,
      }),
      log: pino({ level: 'silent' }),
    }
    await expect(fireSmsFallbackTimer(deps, job)).rejects.toThrow(/not yet sent/)
    expect(sms.sentTo(phone)).toHaveLength(0)
    await client.sql`update messages set status = 'sent' where id = ${messageId}`
    expect(await fireSmsFallbackTimer(deps, job)).toBe('sent')
    expect(sms.sentTo(phone)).toHaveLength(1)
  })
})
