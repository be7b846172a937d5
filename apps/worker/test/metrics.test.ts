import { randomUUID } from 'node:crypto'
import { DEFAULT_SENDER_ID, type MessageJob } from '@dispatch/contracts'
import { createDb } from '@dispatch/db'
import { fairKeys, MESSAGE_JOB_OPTIONS } from '@dispatch/runtime/message-handoff'
import { graphError, parseExposition, samplesOf, sampleValue, testRedisUrl, waitFor } from '@dispatch/testing'
import { Redis } from 'ioredis'
import pino from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Scraper } from '../src/metrics/collectors.ts'
import { WorkerMetrics } from '../src/metrics/registry.ts'
import { startMetricsServer } from '../src/metrics/server.ts'
import { createDeliveryWorld, type DeliveryWorld, text } from './messages/world.ts'

let world: DeliveryWorld
let metricsUrl: string
beforeAll(async () => {
  world = await createDeliveryWorld()
  const worker = await world.startWorker({ METRICS_PORT: '0', LOG_LEVEL: 'silent' })
  metricsUrl = `${worker.metricsUrl}/metrics`
})
afterAll(async () => {
  await world?.close()
})

const scrape = async () => {
  const res = await fetch(metricsUrl)
  expect(res.status).toBe(200)
  return parseExposition(await res.text())
}
/** The series' value; 0 while it has no sample (a counter appears with its first count). */
const counter = async (name: string, labels: Record<string, string>) => {
  const samples = samplesOf(await scrape(), name, labels)
  return samples.length > 0 ? sampleValue(samples, name, labels) : 0
}
/**
 * A counter once it has counted: a worker records an outcome in Postgres a moment before it counts
 * it, so a scrape right after the row changed may not have it yet.
 */
const counted = (name: string, labels: Record<string, string>) =>
  waitFor(async () => (await counter(name, labels)) || undefined, { what: `${name} counted` })
const settled = (id: string) => async () => {
  const row = await world.message(id)
  return row && ['sent', 'failed', 'expired'].includes(row.status) ? row : undefined
}

describe('delivery outcomes', () => {
  it('counts a rate-limit pause once, a retry by its code, and the send that follows', async () => {
    world.fake.script(
      graphError(130429, 'Rate limit hit', 429),
      graphError(131000, 'Something went wrong', 500),
    )
    const id = await world.enqueue(text('rate limited, then retried'))
    await waitFor(settled(id), { what: 'the message sent', timeoutMs: 15_000 })
    const labels = { sender_id: DEFAULT_SENDER_ID }
    expect(await counted('dispatch_sender_rate_limit_pauses_total', labels)).toBe(1)
    expect(await counted('dispatch_message_retries_total', { ...labels, code: '131000' })).toBe(1)
    expect(await counted('dispatch_messages_sent_total', labels)).toBe(1)
  })

  it('counts an unknown error code as "other", never as itself', async () => {
    world.fake.script(graphError(987654, 'A code nobody documented'))
    const id = await world.enqueue(text('refused with an odd code'))
    const row = await waitFor(settled(id), { what: 'the message failed', timeoutMs: 15_000 })
    expect(row.status).toBe('failed')
    expect(row.last_error_code).toBe('987654')
    expect(await counted('dispatch_messages_failed_total', { code: 'other' })).toBe(1)
    expect((await scrape()).some((s) => s.labels.code === '987654')).toBe(false)
  })

  it('counts an expired message', async () => {
    const messageId = randomUUID()
    const job: MessageJob = {
      messageId,
      apiKeyId: world.apiKeyId,
      acceptedAt: new Date(Date.now() - 120_000).toISOString(),
      expiresAt: new Date(Date.now() - 60_000).toISOString(),
      message: text('too late'),
    }
    await world.queue.add('text', job, { ...MESSAGE_JOB_OPTIONS, jobId: messageId })
    await waitFor(settled(messageId), { what: 'the message expired', timeoutMs: 15_000 })
    expect(await counted('dispatch_messages_expired_total', { sender_id: DEFAULT_SENDER_ID })).toBe(1)
  })
})

it("counts a sender's messages waiting for admission apart from its scheduled ones", async () => {
  // Stored in the sender's jobs hash, as the API stores them, but on no key's list: the admitter
  // leaves them where they are.
  const redis = new Redis(testRedisUrl())
  const prefix = world.workerEnv().QUEUE_PREFIX
  const keys = fairKeys(prefix, DEFAULT_SENDER_ID)
  try {
    await redis.hset(keys.jobs, 'waiting-1', '{}', 'waiting-2', '{}', 'later-1', '{}')
    await redis.zadd(keys.scheduled, Date.now() + 3_600_000, 'later-1')
    const samples = await scrape()
    expect(sampleValue(samples, 'dispatch_sender_waiting_messages', { sender_id: DEFAULT_SENDER_ID })).toBe(2)
    expect(sampleValue(samples, 'dispatch_sender_scheduled_messages', { sender_id: DEFAULT_SENDER_ID })).toBe(
      1,
    )
    // The world's PLATFORM_RATE_PER_SECOND: waiting ÷ rate is the backlog in seconds.
    expect(sampleValue(samples, 'dispatch_sender_rate_per_second', { sender_id: DEFAULT_SENDER_ID })).toBe(
      10_000,
    )
  } finally {
    await redis.del(keys.jobs, keys.scheduled)
    redis.disconnect()
  }
})

it('a process reports only what its roles run: no outbox lag or senders without those roles', async () => {
  const worker = await world.startWorker({ WORKER_QUEUES: 'email', METRICS_PORT: '0', LOG_LEVEL: 'silent' })
  const samples = parseExposition(await (await fetch(`${worker.metricsUrl}/metrics`)).text())
  expect(sampleValue(samples, 'bullmq_job_count', { queue: 'email', state: 'waiting' })).toBe(0)
  expect(samples.filter((s) => s.name === 'bullmq_job_count' && s.labels.queue !== 'email')).toEqual([])
  for (const name of [
    'dispatch_outbox_lag_seconds',
    'dispatch_sender_waiting_messages',
    'dispatch_sender_state',
  ]) {
    expect(samples.filter((s) => s.name === name)).toEqual([])
  }
  await worker.close()
})

it('a scrape while Redis and Postgres are unreachable answers, leaving their figures out', async () => {
  const metrics = new WorkerMetrics()
  metrics.watchQueues(() => ['messages'])
  metrics.watchSenders(() => [
    { senderId: DEFAULT_SENDER_ID, settings: { state: 'active', ratePerSecond: 80 } },
  ])
  metrics.watchOutbox()
  // Nothing listens on port 1.
  const redis = new Redis('redis://127.0.0.1:1', {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    retryStrategy: () => null,
  })
  redis.on('error', () => {})
  const { db, close } = createDb('postgres://postgres@127.0.0.1:1/nothing')
  const scraper = new Scraper(metrics, metrics.sources, {
    redis,
    db,
    layout: { QUEUE_PREFIX: 'nowhere', REDIS_CLUSTER: false },
    logger: pino({ level: 'silent' }),
    timeoutMs: 1000,
  })
  try {
    const began = Date.now()
    const samples = parseExposition(await scraper.scrape())
    expect(Date.now() - began).toBeLessThan(3000)
    for (const collector of ['queues', 'admission', 'outbox']) {
      expect(sampleValue(samples, 'dispatch_metrics_collector_up', { collector })).toBe(0)
    }
    for (const name of [
      'bullmq_job_count',
      'dispatch_outbox_lag_seconds',
      'dispatch_sender_waiting_messages',
    ]) {
      expect(samples.filter((s) => s.name === name)).toEqual([])
    }
    // What needs neither is still there.
    expect(sampleValue(samples, 'dispatch_sender_state', { state: 'active' })).toBe(1)
    expect(samples.some((s) => s.name === 'process_resident_memory_bytes')).toBe(true)
  } finally {
    await scraper.close()
    redis.disconnect()
    await close()
  }
})

it('on shutdown, /metrics stays up for METRICS_SHUTDOWN_LINGER_MS after the work has stopped, then closes', async () => {
  const worker = await world.startWorker({
    METRICS_PORT: '0',
    METRICS_SHUTDOWN_LINGER_MS: '3000',
    LOG_LEVEL: 'info',
  })
  const url = `${worker.metricsUrl}/metrics`
  const closed = worker.close()
  // Logged once every unit has closed: what a scrape reads from now on is this process's last word.
  await waitFor(() => worker.logs.text().includes('metrics stay up for a last scrape'), {
    what: 'the linger to begin',
  })
  const res = await fetch(url)
  expect(res.status).toBe(200)
  expect(parseExposition(await res.text()).some((s) => s.name === 'process_resident_memory_bytes')).toBe(true)
  await closed
  await expect(fetch(url)).rejects.toThrow()
})

it('an address that sends wrong tokens is refused with 429 for the rest of the window, even with the right one', async () => {
  const token = 'metrics-brute-force-token-0123456789'
  const server = await startMetricsServer({
    host: '127.0.0.1',
    port: 0,
    token,
    scrape: async () => '# nothing\n',
    logger: pino({ level: 'silent' }),
    failureLimit: { max: 3, windowMs: 1500 },
  })
  const get = (bearer: string) =>
    fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${bearer}` } })
  try {
    expect((await get(token)).status).toBe(200)
    for (let i = 0; i < 3; i++) expect((await get(`guess-${i}`)).status).toBe(401)
    const refused = await get(token)
    expect(refused.status).toBe(429)
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
    expect((await get('guess-4')).status).toBe(429)
    // Once the window is over, the right token is answered again.
    await waitFor(async () => (await get(token)).status === 200, {
      what: 'the window to end',
      timeoutMs: 5_000,
      intervalMs: 250,
    })
  } finally {
    await server.close()
  }
})
