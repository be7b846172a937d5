import type { ChildProcess } from 'node:child_process'
import type { WebhookJob } from '@dispatch/contracts'
import { startWebhookReceiver, type WebhookReceiver, waitFor } from '@dispatch/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { WebhooksQueueJob } from '../../src/shared/webhook-jobs.ts'
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
afterAll(async () => {
  for (const child of children) child.kill('SIGKILL')
  await receiver?.close()
  await world?.close()
})

/** The event and endpoint of a one-event job (what this file queues). */
const single = (job: { data: WebhooksQueueJob }) => job.data as WebhookJob

/** The pair a request delivered: its endpoint (by path) and its event (`webhook-id`). */
const pairOf = (path: string, eventId: string) => `${path} ${eventId}`

describe('attempts recorded in batches', () => {
  it('after a burst to three endpoints, every delivery has its attempt row, once; a NUL in an answer costs no row', async () => {
    receiver.received.length = 0
    // One receiver answers with a NUL byte in its body: Postgres text cannot hold it.
    receiver.answer = (request) => (request.path === '/nul' ? { status: 200, body: 'ok\0' } : { status: 204 })
    const endpoints = await world.endpoints(['/a', '/b', '/nul'].map((path) => `${receiver.url}${path}`))
    const jobs = await world.queueEvents(
      100,
      endpoints.map((e) => e.id),
    )
    const running = startWorldWorker(world.settings)
    try {
      await waitFor(async () => (await world.attempts()).length >= jobs.length, {
        what: `${jobs.length} attempts recorded`,
        timeoutMs: 30_000,
      })
      await waitFor(async () => (await world.queue.getJobCounts('completed')).completed === jobs.length, {
        what: 'every job completed',
      })
    } finally {
      await running.close()
    }
    const attempts = await world.attempts()
    expect(receiver.received).toHaveLength(jobs.length)
    expect(attempts).toHaveLength(jobs.length)
    const recorded = new Set(attempts.map((a) => `${a.endpoint_id} ${a.event_id}`))
    expect(recorded.size).toBe(jobs.length)
    for (const job of jobs) expect(recorded.has(`${job.endpointId} ${job.eventId}`)).toBe(true)
    const nul = endpoints[2]?.id
    const answers = attempts.filter((a) => a.endpoint_id === nul)
    expect(answers).toHaveLength(100)
    for (const a of answers) expect(a).toMatchObject({ status_code: 200, response_excerpt: 'ok' })
    await world.queue.obliterate({ force: true })
  }, 60_000)
})

describe('a worker killed with SIGKILL mid-burst', () => {
  it('loses no attempt of a completed job; only deliveries in flight at the kill go out again, with their webhook-id', async () => {
    receiver.received.length = 0
    // Slow answers, so that deliveries are in flight (and attempts waiting for their batch) at the kill.
    receiver.answer = () => ({ status: 204, delayMs: 15 })
    const endpoints = await world.endpoints(['/k1', '/k2'].map((path) => `${receiver.url}${path}`))
    const paths = new Map(endpoints.map((e) => [e.id, new URL(e.url).pathname]))
    const jobs = await world.queueEvents(
      150,
      endpoints.map((e) => e.id),
    )

    await killWorkerAfter(world.settings, receiver, 80, children)

    // What the killed worker had finished: its completed jobs, and the attempts it recorded.
    const completed = await world.queue.getJobs(['completed'])
    const ours = async () => (await world.attempts()).filter((a) => paths.has(a.endpoint_id))
    const recordedAtKill = await ours()
    expect(completed.length).toBeGreaterThan(0)
    expect(completed.length).toBeLessThan(jobs.length)
    const recordedPairs = new Set(
      recordedAtKill.map((a) => pairOf(paths.get(a.endpoint_id) ?? '', a.event_id)),
    )
    for (const job of completed) {
      // A job completes only once its attempt row is written.
      expect(recordedPairs.has(pairOf(paths.get(single(job).endpointId) ?? '', single(job).eventId))).toBe(
        true,
      )
    }

    const second = startWorldWorker(world.settings)
    try {
      await waitFor(async () => (await world.queue.getJobCounts('completed')).completed === jobs.length, {
        what: 'every job completed after the kill',
        timeoutMs: 30_000,
      })
    } finally {
      await second.close()
    }

    const deliveries = new Map<string, number>()
    for (const request of receiver.received) {
      const pair = pairOf(request.path, String(request.headers['webhook-id']))
      deliveries.set(pair, (deliveries.get(pair) ?? 0) + 1)
    }
    const attempts = await ours()
    const rows = new Map<string, number>()
    for (const a of attempts) {
      const pair = pairOf(paths.get(a.endpoint_id) ?? '', a.event_id)
      rows.set(pair, (rows.get(pair) ?? 0) + 1)
    }
    // Every delivery arrived; each recorded try was a delivery.
    expect(deliveries.size).toBe(jobs.length)
    expect(rows.size).toBe(jobs.length)
    let repeated = 0
    for (const [pair, count] of deliveries) {
      const recorded = rows.get(pair) ?? 0
      expect(recorded, pair).toBeGreaterThanOrEqual(1)
      // At most the one try in flight at the kill went unrecorded.
      expect(count - recorded, pair).toBeLessThanOrEqual(1)
      if (count > 1) {
        repeated++
        // A repeat is of a job the killed worker had not completed.
        expect(
          completed.some(
            (job) => pairOf(paths.get(single(job).endpointId) ?? '', single(job).eventId) === pair,
          ),
        ).toBe(false)
      }
    }
    // Only the deliveries in flight at the kill (at most the worker's concurrency) went out twice.
    expect(repeated).toBeLessThanOrEqual(world.settings.concurrency)
  }, 90_000)
})
