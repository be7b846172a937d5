import { graphError, testRedisUrl, waitFor } from '@dispatch/testing'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createDeliveryWorld, type DeliveryWorld, PHONE_NUMBER_ID, text } from './world.ts'

let world: DeliveryWorld
beforeAll(async () => {
  world = await createDeliveryWorld()
})
afterAll(async () => {
  await world?.close()
})

it('the platform rate holds across worker processes: two workers together send at most the limit per second', async () => {
  // Two workers, each free to send 10 at once, sharing a limit of 4 messages a second.
  const env = { PLATFORM_RATE_PER_SECOND: '4', MESSAGES_CONCURRENCY: '10' }
  await world.startWorker(env)
  await world.startWorker(env)
  const ids: string[] = []
  for (let i = 0; i < 12; i++) ids.push(await world.accept(text(`rated ${i}`)))
  await waitFor(() => ids.every((id) => world.fake.sendsOf(id) === 1), {
    what: 'all 12 sent',
    timeoutMs: 20_000,
  })

  const times = world.fake.requests.filter((r) => ids.includes(r.messageId ?? '')).map((r) => r.receivedAt)
  times.sort((a, b) => a - b)
  // 12 messages at 4 a second, after a first burst of one admission window (500 ms, so 2): the
  // last goes out 2.5 s after the first, less how late the first reached the platform (up to
  // ~150 ms on a loaded machine). With a limit per worker (8 a second together) the last would go
  // within 1.25 s; with none, at once.
  expect((times.at(-1) ?? 0) - (times[0] ?? 0)).toBeGreaterThanOrEqual(2000)
}, 30_000)

describe("a retry takes its place in the sender's pace", () => {
  // A world of its own: the workers above run at other rates for the same sender.
  let paced: DeliveryWorld
  beforeAll(async () => {
    paced = await createDeliveryWorld()
  })
  afterAll(async () => {
    await paced?.close()
  })

  it('a message retried six times holds the next one back by as many places, so the platform sees the rate', async () => {
    // One message a second. The first fails six times in quick succession (20 ms backoff, doubling):
    // seven calls in about 1.5 s where the rate allows two. The next message waits for the places
    // the retries took (about five seconds, less what the time spent retrying paid back); were only
    // admissions paced, it would go at once.
    await paced.startWorker({ PLATFORM_RATE_PER_SECOND: '1', MESSAGES_CONCURRENCY: '10' })
    const failure = { status: 500, body: { error: { message: 'Internal error', code: 1 } } }
    paced.fake.script(...Array.from({ length: 6 }, () => failure))
    const first = await paced.accept(text('retried'))
    await waitFor(() => paced.fake.sendsOf(first) === 1 || undefined, {
      what: 'the retried message sent',
      timeoutMs: 30_000,
    })
    const calls = (id: string) => paced.fake.requests.filter((r) => r.messageId === id)
    expect(calls(first)).toHaveLength(7)
    const next = await paced.accept(text('next'))
    await waitFor(() => paced.fake.sendsOf(next) === 1 || undefined, {
      what: 'the next message sent',
      timeoutMs: 30_000,
    })
    const gap = (calls(next)[0]?.receivedAt ?? 0) - (calls(first).at(-1)?.receivedAt ?? 0)
    expect(gap).toBeGreaterThanOrEqual(3000)
  }, 60_000)
})

it('a platform rate limit (130429) holds the whole sender: no worker process sends its messages until the pause ends', async () => {
  // Two worker processes (more when the tests above ran), at a generous rate.
  const env = { PLATFORM_RATE_PER_SECOND: '100', MESSAGES_CONCURRENCY: '10' }
  await world.startWorker(env)
  await world.startWorker(env)
  world.fake.number(PHONE_NUMBER_ID, {
    answer: { ...graphError(130429, '(#130429) Rate limit hit'), headers: { 'retry-after': '2' } },
  })
  try {
    const first = await world.accept(text('meets the limit'))
    await waitFor(() => world.fake.requests.some((r) => r.messageId === first) || undefined, {
      what: 'the refused send',
    })
    // The worker that met the refusal pauses the sender; a moment for that to land in Redis.
    await new Promise((resolve) => setTimeout(resolve, 200))
    const later: string[] = []
    for (let i = 0; i < 20; i++) later.push(await world.accept(text(`during the pause ${i}`)))
    await new Promise((resolve) => setTimeout(resolve, 1000))
    // Not admitted while paused, so no other process took one to the platform to be refused too.
    expect(world.fake.requests.filter((r) => later.includes(r.messageId ?? ''))).toHaveLength(0)
    world.fake.number(PHONE_NUMBER_ID, { answer: undefined })
    // Then every one goes, once, and none spent an attempt on the limit.
    await waitFor(() => [first, ...later].every((id) => world.fake.sendsOf(id) === 1), {
      what: 'every message sent once the pause ended',
      timeoutMs: 15_000,
    })
  } finally {
    world.fake.number(PHONE_NUMBER_ID, { answer: undefined })
  }
}, 30_000)

it("a sender's queue left with BullMQ's limiter (by a worker of an earlier version) is freed of it at the next refresh", async () => {
  await world.startWorker()
  const meta = `${world.queuePrefix}:messages:meta`
  const redis = new Redis(testRedisUrl())
  try {
    // Set until it stays: the worker's first refresh may still be freeing the queue as it starts.
    await waitFor(
      async () => {
        await world.queue.setGlobalRateLimit(5, 1000)
        await new Promise((resolve) => setTimeout(resolve, 100))
        return (await redis.hget(meta, 'max')) === '5'
      },
      { what: "BullMQ's limiter set" },
    )
    await world.announceSenderChange('default')
    await waitFor(async () => (await redis.hget(meta, 'max')) === null || undefined, {
      what: "the limiter's removal",
    })
  } finally {
    redis.disconnect()
  }
})
