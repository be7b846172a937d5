import type { ChildProcess } from 'node:child_process'
import { webhookEventBody, webhookJobId } from '@dispatch/contracts'
import { startWebhookReceiver, type WebhookReceiver, waitFor } from '@dispatch/testing'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import {
  createWebhooksWorld,
  killWorkerAfter,
  startWorldWorker,
  type WebhooksWorld,
} from './webhooks-world.ts'

let world: WebhooksWorld
let receiver: WebhookReceiver
const children: ChildProcess[] = []
beforeAll(async () => {
  world = await createWebhooksWorld()
  receiver = await startWebhookReceiver()
})
afterEach(async () => {
  receiver.received.length = 0
  receiver.answer = () => ({ status: 204 })
  await world.queue.obliterate({ force: true })
})
afterAll(async () => {
  for (const child of children) child.kill('SIGKILL')
  await receiver?.close()
  await world?.close()
})

/** The pair a request delivered: its endpoint (by path) and its event (`webhook-id`). */
const pairOf = (path: string, eventId: string) => `${path} ${eventId}`

/** The tries recorded for these endpoints, oldest first. */
const triesOf = (endpointIds: string[]) =>
  world.sql<
    Array<{
      endpoint_id: string
      event_id: string
      attempt: number
      status_code: number
      next_retry_at: Date | null
    }>
  >`select endpoint_id, event_id, attempt, status_code, next_retry_at from webhook_attempts
    where endpoint_id = any(${endpointIds}::uuid[]) order by id`

/** Nothing waiting, running or due later in the queue. */
const drained = async () => {
  const counts = await world.queue.getJobCounts('wait', 'active', 'delayed', 'prioritized')
  return Object.values(counts).every((n) => n === 0)
}

describe('bundles: the relay queues an endpoint’s events as one job', () => {
  it('delivers each event of each bundle once, with one attempt row each, and leaves nothing queued', async () => {
    const endpoints = await world.endpoints(['/b1', '/b2'].map((path) => `${receiver.url}${path}`))
    const ids = endpoints.map((e) => e.id)
    const deliveries = await world.queueEvents(30, ids, 10)
    // 30 events for 2 endpoints: 3 bundles each, no job per event.
    expect(await world.queue.getJobCounts('wait')).toMatchObject({ wait: 6 })

    const running = startWorldWorker(world.settings)
    try {
      await waitFor(async () => (await triesOf(ids)).length >= deliveries.length && (await drained()), {
        what: `${deliveries.length} tries recorded and the queue drained`,
        timeoutMs: 30_000,
      })
    } finally {
      await running.close()
    }
    const paths = new Map(endpoints.map((e) => [e.id, new URL(e.url).pathname]))
    const expected = deliveries.map((d) => pairOf(paths.get(d.endpointId) ?? '', d.eventId))
    const arrived = receiver.received.map((r) => pairOf(r.path, String(r.headers['webhook-id'])))
    expect(arrived.sort()).toEqual([...expected].sort())
    // Each went with its own body and signature headers, as a job of its own would.
    for (const d of deliveries) {
      const [request] = receiver.deliveriesOf(d.eventId).filter((r) => r.path === paths.get(d.endpointId))
      expect(request?.body).toBe(d.body)
      expect(request?.headers['webhook-signature']).toMatch(/^v1,/)
    }
    const tries = await triesOf(ids)
    expect(tries).toHaveLength(deliveries.length)
    for (const t of tries) expect(t).toMatchObject({ attempt: 1, status_code: 204, next_retry_at: null })
    // A bundle done is gone: it holds nothing to look at.
    expect((await world.queue.getJobCounts('completed')).completed).toBe(0)
  }, 60_000)

  it('a failed try goes on alone as its event’s own job, on the schedule, counting on from the bundle', async () => {
    const [endpoint] = await world.endpoints([`${receiver.url}/flaky`])
    const id = endpoint?.id as string
    const deliveries = await world.queueEvents(10, [id], 10)
    const unlucky = deliveries[4]?.eventId as string
    receiver.answer = (request) =>
      request.headers['webhook-id'] === unlucky && receiver.deliveriesOf(unlucky).length === 1
        ? { status: 500, body: 'try later' }
        : { status: 204 }

    const running = startWorldWorker(world.settings)
    try {
      await waitFor(async () => (await triesOf([id])).length >= 11 && (await drained()), {
        what: '11 tries recorded and the queue drained',
        timeoutMs: 30_000,
      })
      // The retry was the event's own job (the id the relay gives a one-event delivery).
      const own = await world.queue.getJob(webhookJobId(unlucky, id))
      expect(own?.data).toMatchObject({ eventId: unlucky, endpointId: id, triesBefore: 1, reason: 'event' })
    } finally {
      await running.close()
    }
    const tries = await triesOf([id])
    const ofUnlucky = tries.filter((t) => t.event_id === unlucky)
    expect(ofUnlucky.map((t) => [t.attempt, t.status_code])).toEqual([
      [1, 500],
      [2, 204],
    ])
    expect(ofUnlucky[0]?.next_retry_at).not.toBeNull()
    // The others went once, at the first try.
    const others = tries.filter((t) => t.event_id !== unlucky)
    expect(others).toHaveLength(9)
    for (const t of others) expect(t).toMatchObject({ attempt: 1, status_code: 204 })
    expect(receiver.deliveriesOf(unlucky)).toHaveLength(2)
    // The same bytes under the same webhook-id, both times.
    const [first, second] = receiver.deliveriesOf(unlucky)
    expect(second?.body).toBe(first?.body)
  }, 60_000)

  it('sends each event as it is when delivered: a change made after the relay (an erasure) goes out', async () => {
    const [endpoint] = await world.endpoints([`${receiver.url}/erased`])
    const id = endpoint?.id as string
    const deliveries = await world.queueEvents(3, [id], 10)
    const erased = deliveries[1]?.eventId as string
    const now = { type: 'message.delivered', data: { messageId: 'erased', phone: null } }
    await world.sql`update webhook_events set payload = ${world.sql.json(now)} where id = ${erased}`

    const running = startWorldWorker(world.settings)
    try {
      await waitFor(async () => receiver.received.length >= 3 && (await drained()), {
        what: 'three deliveries',
        timeoutMs: 30_000,
      })
    } finally {
      await running.close()
    }
    expect(receiver.deliveriesOf(erased)[0]?.body).toBe(webhookEventBody(now))
    expect(receiver.deliveriesOf(deliveries[0]?.eventId as string)[0]?.body).toBe(deliveries[0]?.body)
  }, 60_000)

  it('keeps an endpoint’s concurrency: a bundle larger than it goes in waves', async () => {
    const [endpoint] = await world.endpoints([`${receiver.url}/narrow`])
    const id = endpoint?.id as string
    const deliveries = await world.queueEvents(20, [id], 20)
    let inFlight = 0
    let most = 0
    receiver.answer = () => {
      inFlight++
      most = Math.max(most, inFlight)
      setTimeout(() => inFlight--, 40)
      return { status: 204, delayMs: 40 }
    }
    const running = startWorldWorker({ ...world.settings, endpointConcurrency: 3 })
    try {
      await waitFor(async () => (await triesOf([id])).length >= deliveries.length && (await drained()), {
        what: `${deliveries.length} tries recorded`,
        timeoutMs: 30_000,
      })
    } finally {
      await running.close()
    }
    expect(receiver.received).toHaveLength(deliveries.length)
    expect(most).toBeGreaterThan(1)
    expect(most).toBeLessThanOrEqual(3)
  }, 60_000)
})

describe('bundles on a busy endpoint', () => {
  it('a bundle starts on the one free slot while slow deliveries hold the others', async () => {
    const [endpoint] = await world.endpoints([`${receiver.url}/busy`])
    const id = endpoint?.id as string
    const slow = await world.queueEvents(2, [id], 1)
    const slowIds = new Set(slow.map((d) => d.eventId))
    receiver.answer = (request) =>
      slowIds.has(String(request.headers['webhook-id'])) ? { status: 204, delayMs: 1500 } : { status: 204 }
    const running = startWorldWorker({ ...world.settings, endpointConcurrency: 3 })
    try {
      await waitFor(() => receiver.received.length >= 2, { what: 'the two slow deliveries under way' })
      const slowStarted = Date.now()
      const bundled = await world.queueEvents(6, [id], 10)
      await waitFor(async () => (await triesOf([id])).length >= 8 && (await drained()), {
        what: 'every delivery recorded',
        timeoutMs: 30_000,
      })
      const firstOfBundle = Math.min(
        ...bundled.map((d) => receiver.deliveriesOf(d.eventId)[0]?.receivedAt ?? Number.POSITIVE_INFINITY),
      )
      // Waiting for all three slots, it would have started only once the slow ones ended.
      expect(firstOfBundle - slowStarted).toBeLessThan(1000)
      expect(receiver.received).toHaveLength(8)
    } finally {
      await running.close()
    }
  }, 60_000)
})

describe('a worker killed with SIGKILL amid bundles', () => {
  it('loses no delivery: every event arrives and is recorded; only the killed bundles’ events go again', async () => {
    receiver.answer = () => ({ status: 204, delayMs: 15 })
    const endpoints = await world.endpoints(['/kb1', '/kb2'].map((path) => `${receiver.url}${path}`))
    const ids = endpoints.map((e) => e.id)
    const paths = new Map(endpoints.map((e) => [e.id, new URL(e.url).pathname]))
    const deliveries = await world.queueEvents(150, ids, 10)

    await killWorkerAfter(world.settings, receiver, 80, children)
    expect(receiver.received.length).toBeLessThan(deliveries.length)

    const second = startWorldWorker(world.settings)
    try {
      await waitFor(async () => (await drained()) && (await triesOf(ids)).length >= deliveries.length, {
        what: 'every bundle done after the kill',
        timeoutMs: 30_000,
      })
    } finally {
      await second.close()
    }
    const arrived = new Map<string, number>()
    for (const request of receiver.received) {
      const pair = pairOf(request.path, String(request.headers['webhook-id']))
      arrived.set(pair, (arrived.get(pair) ?? 0) + 1)
    }
    const rows = new Map<string, number>()
    for (const t of await triesOf(ids)) {
      const pair = pairOf(paths.get(t.endpoint_id) ?? '', t.event_id)
      rows.set(pair, (rows.get(pair) ?? 0) + 1)
    }
    expect(arrived.size).toBe(deliveries.length)
    let repeated = 0
    for (const d of deliveries) {
      const pair = pairOf(paths.get(d.endpointId) ?? '', d.eventId)
      const count = arrived.get(pair) ?? 0
      const recorded = rows.get(pair) ?? 0
      expect(recorded, pair).toBeGreaterThanOrEqual(1)
      // At most the try in flight at the kill went unrecorded.
      expect(count - recorded, pair).toBeLessThanOrEqual(1)
      if (count > 1) repeated++
    }
    // Only events of bundles the killed worker held went again: at most its concurrency of jobs.
    expect(repeated).toBeLessThanOrEqual(world.settings.concurrency * 10)
  }, 90_000)
})
