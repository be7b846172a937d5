import { DEFAULT_SENDER_ID, type MessageJob } from '@dispatch/contracts'
import { evalLuaScript } from '@dispatch/runtime/lua-scripts'
import {
  FAIR_ENQUEUE_SCRIPT,
  fairActiveKey,
  fairKeys,
  messageClaimKey,
} from '@dispatch/runtime/message-handoff'
import { testRedisUrl, waitFor } from '@dispatch/testing'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { runBundle } from './bundle-run.ts'
import { createDeliveryWorld, type DeliveryWorld, text } from './world.ts'

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
  await runBundle(world, [data], { attemptsStarted: 2, claimKeepMs: KEEP_MS })
  // The claim it took again goes as the first one did.
  await claimGone(sent)
  await runBundle(world, [{ ...data, readmitted: true }], { attemptsStarted: 1, claimKeepMs: KEEP_MS })
  await claimGone(sent)
  expect(world.fake.sendsOf(sent)).toBe(1)
  expect((await world.message(sent))?.status).toBe('sent')
  // And a cancel's claim set after the release (a cancel that read the record before it was
  // written): the rerun finds the send, and the record stays `sent`.
  await redis.set(messageClaimKey(world.queuePrefix, sent), 'cancel', 'PX', 60_000)
  await runBundle(world, [data], { attemptsStarted: 2, claimKeepMs: KEEP_MS })
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
  await runBundle(world, [data], { attemptsStarted: 2, claimKeepMs: KEEP_MS })
  await claimGone(id)
  await runBundle(world, [{ ...data, readmitted: true }], { attemptsStarted: 1, claimKeepMs: KEEP_MS })
  await claimGone(id)
  expect(world.fake.sendsOf(id)).toBe(0)
  expect((await world.message(id))?.status).toBe('canceled')
}, 60_000)
