import { QueueNames, type SmsFallbackTimerJob, smsFallbackHoldKey } from '@dispatch/contracts'
import { applyPlatformStatusTo, createDb } from '@dispatch/db'
import {
  type FakeSms,
  freePort,
  type PrivateRedis,
  privateServerMissing,
  startFakeSms,
  startPrivateRedis,
  waitFor,
} from '@dispatch/testing'
import { type Job, Queue, QueueEvents } from 'bullmq'
import { Redis } from 'ioredis'
import pino from 'pino'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { fireOrWait } from '../../src/messages/fallback-timer.ts'
import { createTwilioSmsProvider } from '../../src/platforms/sms/twilio.ts'
import { createDeliveryWorld, type DeliveryWorld, text } from './world.ts'

/**
 * The channel fallback through outages (docs/fallback.md, "Outages"): Redis away when WhatsApp has
 * just taken a message and its timer must be armed (a private redis-server, killed and started
 * again: never the run's), and Postgres away when a timer's steps must run. Never an SMS blind or
 * twice, and the SMS still goes when due.
 */
const missing = privateServerMissing('redis')
let redis: PrivateRedis
let world: DeliveryWorld
let sms: FakeSms
let worker: Awaited<ReturnType<DeliveryWorld['startWorker']>>
let client: ReturnType<typeof createDb>

beforeAll(async () => {
  if (missing) return
  redis = await startPrivateRedis()
  world = await createDeliveryWorld({ redisUrl: redis.url })
  // Its connections fail while the server is away: said, not thrown.
  world.queue.on('error', () => {})
  sms = await startFakeSms()
  // Jobs' locks (MESSAGES_LOCK_MS, 30 s) outlive the outage: a job may complete once Redis is back.
  worker = await world.startWorker(sms.env())
  client = createDb(world.workerEnv().DATABASE_URL as string, { max: 2 })
})
afterAll(async () => {
  await worker?.close()
  await client?.close()
  await sms?.close()
  await world?.close()
  await redis?.stop()
})

const SMS_TEXT = 'Your parcel is at the front desk'
const to = (phone: string) => ({ type: 'text', body: { ...text().body, phone } }) as ReturnType<typeof text>

describe.skipIf(missing)('Redis away when the timer must be armed', () => {
  it('the jobs do not complete unarmed: once Redis is back their timers are armed, each message sent once, each SMS goes when due', async () => {
    const [timed, held] = ['+4915117100001', '+4915117100003']
    // WhatsApp takes its time answering: Redis goes away meanwhile.
    world.fake.latencyMs = 1500
    // One with a timer (afterSeconds), one with a 131026 hold (its content discarded: the hold, not
    // its record, keeps its SMS).
    const timedId = await world.enqueue(to(timed), undefined, {
      fallback: { sms: { text: SMS_TEXT }, afterSeconds: 600 },
    })
    const heldId = await world.enqueue(to(held), undefined, {
      fallback: { sms: { text: SMS_TEXT } },
      discardContent: true,
    })
    await waitFor(
      () => [timedId, heldId].every((id) => world.fake.requests.some((r) => r.messageId === id)),
      { what: 'both sends under way' },
    )
    await redis.kill()
    // WhatsApp took them; their timers could not be written.
    await waitFor(
      () => worker.logs.lines.filter((l) => l.includes('sms fallback timer not armed')).length >= 2,
      {
        what: 'the arms refused',
        timeoutMs: 10_000,
      },
    )
    world.fake.latencyMs = 0
    await redis.start()
    // Their sends are recorded once their sent log can be written.
    for (const id of [timedId, heldId]) {
      await waitFor(async () => (await world.message(id))?.status === 'sent', {
        what: 'recorded sent',
        timeoutMs: 20_000,
      })
    }
    // WhatsApp reports the held one undeliverable, most likely before its job ran again: the status
    // webhook applies the failed, then runs the hold if there is one (its job, run again, arms it
    // after, reads the 131026 and runs it itself).
    const heldRow = await world.message(heldId)
    await applyPlatformStatusTo(client.db, {
      platformMessageId: heldRow?.platform_message_id as string,
      messageId: heldId,
      status: 'failed',
      at: new Date(),
      error: { code: '131026', message: 'Message undeliverable' },
    })
    const holds = new Redis(redis.url)
    const holdKey = smsFallbackHoldKey(world.queuePrefix, heldId)
    const hold = await holds.get(holdKey)
    const ranByWebhook = hold !== null
    if (hold !== null) {
      const webhookTimers = new Queue(QueueNames.smsFallbackTimers, {
        connection: { url: redis.url },
        prefix: world.queuePrefix,
      })
      await webhookTimers.add('undeliverable', JSON.parse(hold), { jobId: heldId })
      await holds.del(holdKey)
      await webhookTimers.close()
    }
    holds.disconnect()

    const connection = { connection: { url: redis.url }, prefix: world.queuePrefix }
    const timers = new Queue<SmsFallbackTimerJob>(QueueNames.smsFallbackTimers, connection)
    const timerEvents = new QueueEvents(QueueNames.smsFallbackTimers, connection)
    try {
      await timerEvents.waitUntilReady()
      const timer = await waitFor(async () => (await timers.getJob(timedId)) ?? false, {
        what: 'the timer armed once Redis is back',
        timeoutMs: 30_000,
      })
      expect(timer.data).toMatchObject({ messageId: timedId, to: timed, text: SMS_TEXT })
      expect(await timer.getState()).toBe('delayed')
      // The held one's job, run again, armed its hold, read the 131026 and ran it: one SMS.
      await waitFor(() => sms.sentTo(held).length > 0, { what: 'the held one texted', timeoutMs: 30_000 })
      console.info(`the held one's 131026 ran by ${ranByWebhook ? 'the webhook' : 'its job, armed late'}`)
      // Their jobs completed (each held the SMS's text until its timer did), WhatsApp got each once.
      for (const id of [timedId, heldId]) {
        await waitFor(async () => (await world.queue.getJob(id)) === undefined, { what: 'the job completed' })
        expect(world.fake.requests.filter((r) => r.messageId === id)).toHaveLength(1)
      }
      expect(sms.sentTo(timed)).toHaveLength(0)
      // Due (as if afterSeconds had passed): one SMS.
      await timer.promote()
      expect(await timer.waitUntilFinished(timerEvents, 10_000)).toBe('sent')
      await new Promise((resolve) => setTimeout(resolve, 500))
      expect(sms.sentTo(timed)).toHaveLength(1)
      expect(sms.sentTo(held)).toHaveLength(1)
    } finally {
      await timerEvents.close()
      await timers.close()
    }
  }, 90_000)
})

describe.skipIf(missing)('Postgres away when a timer runs', () => {
  it('sends nothing and waits, unspent; once Postgres answers, one SMS', async () => {
    const phone = '+4915117100002'
    const messageId = await world.enqueue(to(phone), undefined, {
      fallback: { sms: { text: SMS_TEXT }, afterSeconds: 600 },
    })
    await waitFor(async () => (await world.message(messageId))?.status === 'sent', { what: 'sent' })
    const row = await world.message(messageId)
    const data: SmsFallbackTimerJob = {
      messageId,
      acceptedAt: new Date(row?.accepted_at as string).toISOString(),
      to: phone,
      text: SMS_TEXT,
      sentAt: new Date().toISOString(),
    }
    const moveToDelayed = vi.fn(async () => {})
    const job = { data, moveToDelayed } as unknown as Job<SmsFallbackTimerJob>
    const provider = createTwilioSmsProvider({
      apiUrl: sms.url,
      accountSid: sms.accountSid,
      authToken: sms.authToken,
      from: '+15005550006',
      timeoutMs: 2000,
    })
    const log = pino({ level: 'silent' })
    // Nothing listens where this Postgres should be: every read is refused.
    const away = createDb(`postgres://postgres@127.0.0.1:${await freePort()}/postgres`, { max: 1 })
    try {
      const down = { sql: away.sql, db: away.db, sms: provider, log }
      for (let run = 0; run < 3; run++) {
        await expect(fireOrWait(down, job, 'token', 50)).rejects.toThrow(/delayed/i)
      }
      expect(moveToDelayed).toHaveBeenCalledTimes(3)
      expect(sms.sentTo(phone)).toHaveLength(0)
    } finally {
      await away.close()
    }
    const up = { sql: client.sql, db: client.db, sms: provider, log }
    expect(await fireOrWait(up, job, 'token')).toBe('sent')
    // The same timer retaken again (its run killed after the call): the record lets none call.
    expect(await fireOrWait(up, job, 'token')).toBe('elsewhere')
    expect(sms.sentTo(phone)).toHaveLength(1)
  })
})
