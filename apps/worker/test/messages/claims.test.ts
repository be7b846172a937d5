import { DEFAULT_SENDER_ID, type MessageJob } from '@dispatch/contracts'
import { createDb } from '@dispatch/db'
import { recipientHasher } from '@dispatch/runtime'
import { evalLuaScript } from '@dispatch/runtime/lua-scripts'
import {
  FAIR_ENQUEUE_SCRIPT,
  fairActiveKey,
  fairKeys,
  type MessageBundleJob,
  type MessageBundleResult,
  messageBundleJobId,
  messageClaimKey,
} from '@dispatch/runtime/message-handoff'
import { testRedisUrl, waitFor } from '@dispatch/testing'
import type { Job } from 'bullmq'
import { Redis } from 'ioredis'
import pino from 'pino'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { deliverBundle } from '../../src/messages/bundle.ts'
import { DeliveryRecorder } from '../../src/messages/delivery-recorder.ts'
import { createWhatsAppCloudPlatform } from '../../src/platforms/whatsapp-cloud.ts'
import { Permits } from '../../src/shared/permits.ts'
import { ACCESS_TOKEN, createDeliveryWorld, type DeliveryWorld, PHONE_NUMBER_ID, text } from './world.ts'

/** A short window, so the test sees the claims go (the default is a minute). */
const KEEP_MS = 300

let world: DeliveryWorld
let redis: Redis
beforeAll(async () => {
  world = await createDeliveryWorld()
  redis = new Redis(testRedisUrl())
})
afterAll(async () => {
  redis?.disconnect()
  await world?.close()
})

/**
 * What the run's prefix holds in Redis: its keys (SCAN) and their `MEMORY USAGE`, BullMQ's event
 * stream apart (BullMQ caps it, 10,000 entries, whatever the volume).
 */
async function footprint() {
  let keys = 0
  let bytes = 0
  let claims = 0
  let events = 0
  for await (const page of redis.scanStream({ match: `${world.queuePrefix}*`, count: 1000 }) as AsyncIterable<
    string[]
  >) {
    const pipeline = redis.pipeline()
    for (const key of page) pipeline.memory('USAGE', key, 'SAMPLES', '0')
    const sizes = (await pipeline.exec()) ?? []
    for (const [i, key] of page.entries()) {
      const size = Number(sizes[i]?.[1] ?? 0)
      if (key.endsWith(':events')) {
        events += size
        continue
      }
      keys++
      bytes += size
      if (key.includes(':messages:claim:')) claims++
    }
  }
  return { keys, bytes, claims, events }
}

/** Stores `count` messages for the default sender's admission, as the API does, in one pipeline. */
async function acceptMany(count: number, label: string): Promise<string[]> {
  const keys = fairKeys(world.queuePrefix, DEFAULT_SENDER_ID)
  const ids: string[] = []
  const now = Date.now()
  for (let start = 0; start < count; start += 500) {
    await Promise.all(
      Array.from({ length: Math.min(500, count - start) }, (_, i) => {
        const messageId = crypto.randomUUID()
        ids.push(messageId)
        const job: MessageJob = {
          messageId,
          apiKeyId: world.apiKeyId,
          acceptedAt: new Date().toISOString(),
          expiresAt: new Date(now + 4 * 3600_000).toISOString(),
          message: text(`${label} ${start + i}`),
        }
        return evalLuaScript(
          redis,
          FAIR_ENQUEUE_SCRIPT,
          keys.jobs,
          keys.scheduled,
          keys.base,
          0,
          now,
          messageId,
          JSON.stringify(job),
          'normal',
          world.apiKeyId,
          0,
        )
      }),
    )
  }
  await redis.sadd(fairActiveKey(world.queuePrefix), DEFAULT_SENDER_ID)
  return ids
}

const sentCount = async (ids: string[]) =>
  Number(
    (await world.sql`select count(*) from messages where id = any(${ids}) and status = 'sent'`)[0]?.count,
  )

/**
 * Drains each load through a worker of `env`, and answers what the run's prefix holds before and
 * after each: back to its size before the load within MESSAGE_CLAIM_KEEP_MS, no claim left.
 */
async function drainsBack(env: Record<string, string>, loads: number[]) {
  const worker = await world.startWorker({ MESSAGE_CLAIM_KEEP_MS: String(KEEP_MS), ...env })
  try {
    // Warm: the sender's queue and lists exist, as on a service that has sent before.
    const warm = await acceptMany(40, 'warm')
    await waitFor(async () => (await sentCount(warm)) === warm.length || undefined, {
      what: 'the warm-up sent',
      timeoutMs: 30_000,
    })
    await waitFor(async () => ((await footprint()).claims === 0 ? true : undefined), {
      what: "the warm-up's claims gone",
      timeoutMs: 10_000,
    })
    const before = await footprint()
    const after: Array<Awaited<ReturnType<typeof footprint>>> = []
    for (const count of loads) {
      const ids = await acceptMany(count, `load ${count}`)
      let claimsSeen = 0
      await waitFor(
        async () => {
          claimsSeen = Math.max(claimsSeen, (await footprint()).claims)
          return (await sentCount(ids)) === count || undefined
        },
        { what: `the ${count} messages sent`, timeoutMs: 90_000, intervalMs: 50 },
      )
      // The claims were there while the messages were in flight.
      expect(claimsSeen).toBeGreaterThan(0)
      const settled = await waitFor(
        async () => {
          const now = await footprint()
          return now.claims === 0 && now.keys <= before.keys && now.bytes <= before.bytes * 1.05
            ? now
            : undefined
        },
        { what: 'Redis back to its size before the load', timeoutMs: KEEP_MS + 10_000, intervalMs: 100 },
      ).catch(async (error) => {
        console.error('before', before, 'now', await footprint())
        throw error
      })
      after.push(settled)
      for (const id of ids.slice(0, 50)) expect(world.fake.sendsOf(id)).toBe(1)
    }
    return { before, after }
  } finally {
    await worker.close()
  }
}

it('after a drain, Redis holds what it held before the load: no claim outlives its record by more than MESSAGE_CLAIM_KEEP_MS', async () => {
  // Two loads, the second twice the first: what stays after each is the same.
  const { before, after } = await drainsBack(
    { MESSAGES_BUNDLE_SIZE: '20', MESSAGES_CONCURRENCY: '50' },
    [1500, 3000],
  )
  // Nothing left behind: at most the keys it had (a transient one of before, a lock, may be gone).
  expect(after[1]?.keys).toBeLessThanOrEqual(before.keys)
  expect(after[1]?.claims).toBe(0)
}, 240_000)

it('with a job per message (MESSAGES_BUNDLE_SIZE=1), each job goes as it completes: Redis is back to its size too', async () => {
  const { before, after } = await drainsBack({ MESSAGES_BUNDLE_SIZE: '1', MESSAGES_CONCURRENCY: '50' }, [600])
  expect(after[0]?.keys).toBeLessThanOrEqual(before.keys)
  expect(after[0]?.claims).toBe(0)
}, 240_000)

/** A run of a bundle as BullMQ hands it out, with the deps a lane gives it (bundles.test.ts). */
async function bundleRun(
  messages: MessageJob[],
  run: { attemptsStarted: number },
): Promise<{ done: Promise<void> }> {
  const redis2 = new Redis(testRedisUrl(), { enableAutoPipelining: true })
  const { db, close } = createDb(world.workerEnv().DATABASE_URL)
  const keys = fairKeys(world.queuePrefix, 'default')
  const recorder = new DeliveryRecorder(world.sql, {
    redis: redis2,
    claims: { prefix: world.queuePrefix, keepMs: KEEP_MS },
  })
  const deps = {
    db,
    claims: redis2,
    logger: pino({ level: 'silent' }),
    prefix: world.queuePrefix,
    hash: recipientHasher({}),
    recorder,
    sentLog: { stream: keys.sentLog, redis: redis2 },
    queue: async () => world.queue,
    permits: new Permits(4),
    index: { redis: redis2, key: keys.bundled },
    backoffMs: 20,
  }
  const lane = {
    senderId: 'default',
    platform: createWhatsAppCloudPlatform({
      apiUrl: world.fake.url,
      accessToken: ACCESS_TOKEN,
      phoneNumberId: PHONE_NUMBER_ID,
      timeoutMs: 5000,
    }),
    settings: { serviceWindowPolicy: 'off' as const },
    rateLimit: async () => ({ pauseMs: 0, newPause: false }),
    limitedUntil: 0,
    holdForLimit: async () => false,
    spendPace: async () => {},
    tokenRefused: async () => {},
  }
  const job = {
    id: messageBundleJobId(crypto.randomUUID()),
    data: { messages },
    attemptsMade: 0,
    attemptsStarted: run.attemptsStarted,
    progress: 0,
    updateProgress: async () => {},
  } as unknown as Job<MessageBundleJob, MessageBundleResult>
  return {
    done: (async () => {
      try {
        await deliverBundle(job, lane, deps)
        await recorder.drain()
      } finally {
        redis2.disconnect()
        await close()
      }
    })(),
  }
}

const claimGone = (id: string) =>
  waitFor(
    async () => ((await redis.exists(messageClaimKey(world.queuePrefix, id))) === 0 ? true : undefined),
    {
      what: `the claim of ${id} released`,
      timeoutMs: KEEP_MS + 10_000,
    },
  )

it('a job run again, or handed out again, after the claim is gone finds the record and does not send again', async () => {
  const worker = await world.startWorker({ MESSAGE_CLAIM_KEEP_MS: String(KEEP_MS) })
  const sent = await world.enqueue(text('sent once'))
  await waitFor(async () => (await world.message(sent))?.status === 'sent' || undefined, { what: 'sent' })
  await worker.close()
  await claimGone(sent)
  expect(world.fake.sendsOf(sent)).toBe(1)
  const row = await world.message(sent)
  const data: MessageJob = {
    messageId: sent,
    apiKeyId: world.apiKeyId,
    acceptedAt: new Date(row?.accepted_at as Date).toISOString(),
    message: text('sent once'),
  }
  // A stalled bundle retaken (its second start) and a bundle of an admission handed out again.
  await (await bundleRun([data], { attemptsStarted: 2 })).done
  // The claim it took again goes as the first one did.
  await claimGone(sent)
  await (await bundleRun([{ ...data, readmitted: true }], { attemptsStarted: 1 })).done
  await claimGone(sent)
  expect(world.fake.sendsOf(sent)).toBe(1)
  expect((await world.message(sent))?.status).toBe('sent')
  // And a cancel's claim set after the release (a cancel that read the record before it was
  // written): the rerun finds the send, and the record stays `sent`.
  await redis.set(messageClaimKey(world.queuePrefix, sent), 'cancel', 'PX', 60_000)
  await (await bundleRun([data], { attemptsStarted: 2 })).done
  expect(world.fake.sendsOf(sent)).toBe(1)
  expect((await world.message(sent))?.status).toBe('sent')
  await redis.del(messageClaimKey(world.queuePrefix, sent))
}, 60_000)

it('a canceled message run again after its claim is gone stays canceled and is never sent', async () => {
  const id = crypto.randomUUID()
  await redis.set(messageClaimKey(world.queuePrefix, id), 'cancel', 'PX', 60_000)
  const worker = await world.startWorker({ MESSAGE_CLAIM_KEEP_MS: String(KEEP_MS) })
  await world.enqueue(text('canceled'), id)
  await waitFor(async () => (await world.message(id))?.status === 'canceled' || undefined, {
    what: 'canceled',
  })
  await worker.close()
  await claimGone(id)
  const row = await world.message(id)
  const data: MessageJob = {
    messageId: id,
    apiKeyId: world.apiKeyId,
    acceptedAt: new Date(row?.accepted_at as Date).toISOString(),
    message: text('canceled'),
  }
  await (await bundleRun([data], { attemptsStarted: 2 })).done
  await claimGone(id)
  await (await bundleRun([{ ...data, readmitted: true }], { attemptsStarted: 1 })).done
  await claimGone(id)
  expect(world.fake.sendsOf(id)).toBe(0)
  expect((await world.message(id))?.status).toBe('canceled')
}, 60_000)
