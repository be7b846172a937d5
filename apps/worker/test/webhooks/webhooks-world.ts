import { type ChildProcess, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import { QueueNames, webhookEventBody } from '@dispatch/contracts'
import { createDb, generateApiKey, insertApiKey, insertWebhookEndpoint } from '@dispatch/db'
import { createSecretBox } from '@dispatch/runtime'
import {
  createTestDatabase,
  startTcpProxy,
  testQueuePrefix,
  testRedisUrl,
  type WebhookReceiver,
  waitFor,
} from '@dispatch/testing'
import { Queue } from 'bullmq'
import { Redis } from 'ioredis'
import pino from 'pino'
import { type WebhooksQueueJob, webhookJobsFor } from '../../src/shared/webhook-jobs.ts'
import { parseRetrySchedule } from '../../src/shared/webhook-retry-schedule.ts'
import { startWebhooksWorker, type WebhooksWorkerOptions } from '../../src/webhooks/worker.ts'

/** What a webhooks worker of a world needs, as plain values: also handed to a child process. */
export interface WorldSettings {
  databaseUrl: string
  redisUrl: string
  queuePrefix: string
  concurrency: number
  /** Short locks and stall checks, so a killed worker's jobs are taken over within a second or two. */
  lockMs: number
  stalledIntervalMs: number
  /** Per endpoint, across workers: raised by default so the limits do not shape a test's timing. */
  endpointConcurrency?: number
}

/** A webhooks worker on a world's database and queue, as the `webhooks` role wires it. */
export function startWorldWorker(settings: WorldSettings, logger = pino({ level: 'silent' })) {
  const { db, close } = createDb(settings.databaseUrl, { max: 4 })
  const redis = [0, 1].map(() => new Redis(settings.redisUrl, { maxRetriesPerRequest: null }))
  const options: WebhooksWorkerOptions = {
    db,
    logger,
    connection: redis[0] as Redis,
    gateConnection: redis[1] as Redis,
    prefix: settings.queuePrefix,
    concurrency: settings.concurrency,
    timeoutMs: 5000,
    schedule: parseRetrySchedule('100ms,200ms'),
    endpointConcurrency: settings.endpointConcurrency ?? 100,
    endpointRatePerSecond: 100_000,
    slowDownMs: 500,
    disableAfterMs: 3600_000,
    allowPrivate: true,
    production: false,
    box: createSecretBox({ APP_ENV: 'development' }),
    lockMs: settings.lockMs,
    stalledIntervalMs: settings.stalledIntervalMs,
  }
  const worker = startWebhooksWorker(options)
  return {
    worker,
    async close() {
      await worker.close()
      for (const client of redis) client.disconnect()
      await close()
    },
  }
}

/** A database with one key and its events, a `webhooks` queue, and endpoints to deliver them to. */
export async function createWebhooksWorld() {
  const database = await createTestDatabase()
  const settings: WorldSettings = {
    databaseUrl: database.url,
    redisUrl: testRedisUrl(),
    queuePrefix: testQueuePrefix(),
    concurrency: 20,
    lockMs: 1000,
    stalledIntervalMs: 500,
  }
  const { db, close } = createDb(database.url, { max: 2 })
  const { keyHash, keyPrefix } = generateApiKey('development')
  const key = await insertApiKey(db, {
    keyHash,
    keyPrefix,
    environment: 'development',
    clientName: 'Acme',
    email: 'ops@acme.test',
    scopes: ['manage:webhooks'],
    requestedTenantId: null,
    createdAt: new Date(),
  })
  const queue = new Queue<WebhooksQueueJob>(QueueNames.webhooks, {
    connection: { url: settings.redisUrl },
    prefix: settings.queuePrefix,
  })

  return {
    settings,
    sql: database.sql,
    queue,
    /** Endpoints of the key, one per URL. */
    endpoints: (urls: string[]) =>
      Promise.all(
        urls.map((url) =>
          insertWebhookEndpoint(db, {
            apiKeyId: key.id,
            url,
            events: ['message.delivered'],
            description: null,
            secret: `whsec_${randomBytes(32).toString('base64')}`,
            now: new Date(),
          }),
        ),
      ),
    /**
     * `count` events, each queued for every endpoint, as the relay fans them out: an endpoint's
     * events in bundles of `bundleSize` (1: a job per event). Answers the deliveries, in order.
     */
    async queueEvents(count: number, endpointIds: string[], bundleSize = 1) {
      const events = await database.sql<Array<{ id: string; type: string; payload: unknown }>>`
        insert into webhook_events (id, api_key_id, type, message_id, sequence, payload)
        select 'msg_' || replace(gen_random_uuid()::text, '-', ''), ${key.id}, 'message.delivered', m, 2,
          jsonb_build_object('type', 'message.delivered', 'data', jsonb_build_object('messageId', m))
        from generate_series(1, ${count}) g, gen_random_uuid() m
        returning id, type, payload`
      const deliveries = events.flatMap((event) =>
        endpointIds.map((endpointId) => ({
          eventId: event.id,
          endpointId,
          eventType: event.type,
          payload: event.payload,
        })),
      )
      await queue.addBulk(webhookJobsFor(deliveries, bundleSize))
      return deliveries.map((d) => ({ ...d, body: webhookEventBody(d.payload) }))
    },
    /** Every attempt recorded, oldest first. */
    attempts: () =>
      database.sql<
        Array<{
          endpoint_id: string
          event_id: string
          status_code: number | null
          response_excerpt: string | null
        }>
      >`select endpoint_id, event_id, status_code, response_excerpt from webhook_attempts order by id`,
    async close() {
      await queue.obliterate({ force: true }).catch(() => {})
      await queue.close()
      await close()
      await database.drop()
    },
  }
}
export type WebhooksWorld = Awaited<ReturnType<typeof createWebhooksWorld>>

const CHILD = fileURLToPath(new URL('./webhooks-worker-child.ts', import.meta.url))

/**
 * Starts a webhooks worker in a process of its own, waits until the receiver has `deliveries`
 * requests, and kills it with SIGKILL. The child is pushed on `children` first, for an afterAll to
 * kill should the wait fail.
 */
export async function killWorkerAfter(
  settings: WorldSettings,
  receiver: WebhookReceiver,
  deliveries: number,
  children: ChildProcess[],
): Promise<void> {
  const child = spawn(process.execPath, [CHILD], {
    env: { ...process.env, WEBHOOKS_WORLD: JSON.stringify(settings) },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  children.push(child)
  const exited = new Promise((resolve) => child.once('exit', resolve))
  await waitFor(() => receiver.received.length >= deliveries, {
    what: `${deliveries} deliveries by the first worker`,
    timeoutMs: 30_000,
  })
  child.kill('SIGKILL')
  await exited
}

/**
 * A client of the world's database reached through a TCP proxy, so a test can cut Postgres away
 * and back; `onStatement` is told each statement it sends.
 */
export async function proxiedDb(world: WebhooksWorld, onStatement: (query: string) => void) {
  const url = new URL(world.settings.databaseUrl)
  const proxy = await startTcpProxy({ host: url.hostname, port: Number(url.port || 5432) })
  url.host = new URL(proxy.url('postgres')).host
  const client = createDb(url.toString(), { max: 2, onStatement })
  return {
    db: client.db,
    proxy,
    async close() {
      await client.close()
      await proxy.close()
    },
  }
}
