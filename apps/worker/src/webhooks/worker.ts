import { QueueNames, type SecretBox, WebhookJob } from '@dispatch/contracts'
import type { RedisClient } from '@dispatch/contracts/redis'
import {
  type Db,
  type DeliverableEndpoint,
  findWebhookEndpointForDelivery,
  markWebhookEndpointFailing,
  markWebhookEndpointHealthy,
} from '@dispatch/db'
import { DelayedError, type Job, type Telemetry, UnrecoverableError, Worker } from 'bullmq'
import type { Logger } from 'pino'
import { Compile } from 'typebox/compile'
import type { WorkerMetrics } from '../metrics/registry.ts'
import { traced } from '../tracing.ts'
import { AttemptRecorder } from './attempt-recorder.ts'
import { EndpointGate } from './endpoint-gate.ts'
import { postWebhook } from './post.ts'
import { retryDelay } from './schedule.ts'
import { signWebhook } from './sign.ts'
import { SigningSecrets } from './signing-secrets.ts'

export interface WebhooksWorkerOptions {
  db: Db
  logger: Logger
  /** The worker's blocking connection. */
  connection: RedisClient
  /** A non-blocking connection for the per-endpoint limits. */
  gateConnection: RedisClient
  /** The deployment's key prefix (QUEUE_PREFIX), under which the per-endpoint limits live. */
  prefix: string
  /** The `webhooks` queue's BullMQ prefix (`queuePrefix`), when it is not `prefix` itself. */
  queuePrefix?: string
  concurrency: number
  timeoutMs: number
  /** The waits between tries, in ms: `length + 1` tries in all. */
  schedule: number[]
  endpointConcurrency: number
  endpointRatePerSecond: number
  slowDownMs: number
  disableAfterMs: number
  allowPrivate: boolean
  production: boolean
  /** BullMQ's OpenTelemetry integration, when tracing is on. */
  telemetry?: Telemetry | undefined
  /** Opens the endpoints' signing secrets, stored sealed under SECRETS_KEY. */
  box: SecretBox
  lockMs?: number
  /** How often jobs of a dead worker are looked for (BullMQ's stalledInterval; its default, 30 s). */
  stalledIntervalMs?: number
  /** Counts outcomes, when metrics are on. */
  metrics?: Pick<WorkerMetrics, 'webhook'> | undefined
}

export type WebhookResult =
  | { delivered: true; statusCode: number; attempt: number }
  | { delivered: false; skipped: 'endpoint-gone' | 'endpoint-disabled' }

const isWebhookJob = Compile(WebhookJob)
/** How long an endpoint read from Postgres is reused: a change (url, secret, disabled) shows within it. */
const ENDPOINT_CACHE_MS = 1000
/** Answers that mean "slow down" (Standard Webhooks): the endpoint is paused, not only this event. */
const SLOW_DOWN_STATUSES = new Set([429, 502, 504])
/** A receiver's Retry-After is honoured up to this; longer asks wait this long. */
const MAX_RETRY_AFTER_MS = 12 * 3600 * 1000
/**
 * How long a delivery waits when its endpoint's secret does not open (a worker without the key it
 * was sealed under): the key comes with a restart, and the job must neither spend its tries nor go.
 */
const UNOPENED_SECRET_DELAY_MS = 30_000

/** A failed try that will be tried again, after `delayMs` (the schedule, or the receiver's Retry-After). */
export class WebhookAttemptFailed extends Error {
  override name = 'WebhookAttemptFailed'
  readonly delayMs: number
  constructor(message: string, delayMs: number) {
    super(message)
    this.delayMs = delayMs
  }
}

class EndpointCache {
  readonly #db: Db
  readonly #entries = new Map<string, { endpoint: DeliverableEndpoint | undefined; until: number }>()

  constructor(db: Db) {
    this.#db = db
  }

  async get(id: string): Promise<DeliverableEndpoint | undefined> {
    const now = Date.now()
    const cached = this.#entries.get(id)
    if (cached && cached.until > now) return cached.endpoint
    const endpoint = await findWebhookEndpointForDelivery(this.#db, id)
    if (this.#entries.size > 10_000) this.#entries.clear()
    this.#entries.set(id, { endpoint, until: now + ENDPOINT_CACHE_MS })
    return endpoint
  }

  forget(id: string) {
    this.#entries.delete(id)
  }
}

/**
 * Delivers webhook events, one job per event and endpoint, signed as Standard Webhooks says.
 * Each try is recorded for the endpoint's owner; a failed one is retried on the schedule; 410 and a
 * long failing streak disable the endpoint; 429, 502 and 504 pause the endpoint for every worker.
 */
export function startWebhooksWorker(options: WebhooksWorkerOptions): Worker<WebhookJob, WebhookResult> {
  const { db, logger, schedule, metrics } = options
  const endpoints = new EndpointCache(db)
  const signingSecrets = new SigningSecrets(options.box)
  const recorder = new AttemptRecorder(db, logger)
  const gate = new EndpointGate(options.gateConnection, {
    prefix: options.prefix,
    concurrency: options.endpointConcurrency,
    ratePerSecond: options.endpointRatePerSecond,
    // A slot outlives the longest request, so a killed worker's slot frees itself soon after.
    leaseMs: options.timeoutMs + 5000,
  })

  const deliver = async (job: Job<WebhookJob, WebhookResult>, token?: string): Promise<WebhookResult> => {
    if (!isWebhookJob.Check(job.data)) {
      logger.error({ jobId: job.id }, 'webhook job does not match its contract; dropped')
      throw new UnrecoverableError('The job payload does not match the webhooks contract')
    }
    const { eventId, endpointId, body } = job.data
    const log = logger.child({ eventId, webhookEndpointId: endpointId })
    const later = async (ms: number) => {
      await job.moveToDelayed(Date.now() + ms, token)
      throw new DelayedError()
    }

    let endpoint: DeliverableEndpoint | undefined
    try {
      endpoint = await endpoints.get(endpointId)
    } catch (error) {
      // Postgres is away: no try was made, so none is spent.
      log.warn({ err: error }, 'webhook endpoint not readable; delivery postponed')
      return later(5000)
    }
    if (!endpoint?.enabled) metrics?.webhook('skipped')
    if (!endpoint) return { delivered: false, skipped: 'endpoint-gone' }
    if (!endpoint.enabled) return { delivered: false, skipped: 'endpoint-disabled' }

    let secrets: string[]
    try {
      secrets = signingSecrets.of(endpoint, new Date())
    } catch (error) {
      // Sent unsigned or failed, it would be lost to a configuration error: it waits for the key.
      // The error names the key id, never the value.
      log.error({ err: error }, 'webhook signing secret cannot be opened (SECRETS_KEY?); delivery postponed')
      return later(UNOPENED_SECRET_DELAY_MS)
    }

    const slot = await gate.acquire(endpointId)
    if (!slot.ok) return later(slot.waitMs)

    const attempt = job.attemptsMade + 1
    const now = new Date()
    let result: Awaited<ReturnType<typeof postWebhook>>
    try {
      result = await traced('webhook post', { 'dispatch.webhook_endpoint_id': endpointId }, () =>
        postWebhook({
          url: endpoint.url,
          headers: { ...signWebhook({ id: eventId, timestamp: now, body, secrets }) },
          body,
          timeoutMs: options.timeoutMs,
          allowPrivate: options.allowPrivate,
          production: options.production,
        }),
      )
    } finally {
      // Not awaited: the job need not wait for Redis to hear it. A release that fails leaves the
      // slot to run out with its lease, as a worker that died would.
      slot.release().catch(() => {})
    }

    const attemptRow = {
      endpointId,
      eventId,
      attempt,
      statusCode: result.statusCode,
      durationMs: Math.round(result.durationMs),
      responseExcerpt: result.responseExcerpt,
      error: result.error,
      createdAt: now,
    }

    if (result.outcome === 'success') {
      await recorder.record({ ...attemptRow, nextRetryAt: null })
      if (endpoint.failingSince) {
        endpoints.forget(endpointId)
        await markWebhookEndpointHealthy(db, endpointId).catch((error) =>
          log.warn({ err: error }, 'webhook endpoint health not recorded'),
        )
      }
      metrics?.webhook('success')
      log.debug({ statusCode: result.statusCode, attempt }, 'webhook delivered')
      return { delivered: true, statusCode: result.statusCode ?? 200, attempt }
    }

    const gone = result.statusCode === 410
    const retryAfterMs =
      result.retryAfterMs === null ? null : Math.min(result.retryAfterMs, MAX_RETRY_AFTER_MS)
    if (result.statusCode !== null && SLOW_DOWN_STATUSES.has(result.statusCode)) {
      await gate.slowDown(endpointId, retryAfterMs ?? options.slowDownMs).catch(() => {})
    }
    // Null once the schedule is used up: this was the last try.
    const delayMs = gone ? null : retryDelay(schedule, attempt, retryAfterMs)
    const last = delayMs === null
    await recorder.record({
      ...attemptRow,
      nextRetryAt: delayMs === null ? null : new Date(now.getTime() + delayMs),
    })

    let disabled: Awaited<ReturnType<typeof markWebhookEndpointFailing>> = null
    try {
      disabled = await markWebhookEndpointFailing(db, endpointId, {
        now,
        disableAfterMs: options.disableAfterMs,
        gone,
      })
      endpoints.forget(endpointId)
    } catch (error) {
      log.warn({ err: error }, 'webhook endpoint failure not recorded')
    }
    metrics?.webhook(disabled || last ? 'failed' : 'retry')
    const why = result.error ?? `answered ${result.statusCode}`
    log.warn({ statusCode: result.statusCode, attempt, last, disabled }, 'webhook delivery failed')
    if (disabled) throw new UnrecoverableError(`${why}; endpoint disabled (${disabled})`)
    if (last) throw new UnrecoverableError(`${why}; no tries left`)
    throw new WebhookAttemptFailed(why, delayMs ?? 0)
  }

  const worker: Worker<WebhookJob, WebhookResult> = new Worker<WebhookJob, WebhookResult>(
    QueueNames.webhooks,
    deliver,
    {
      connection: options.connection,
      prefix: options.queuePrefix ?? options.prefix,
      concurrency: options.concurrency,
      ...(options.telemetry ? { telemetry: options.telemetry } : {}),
      lockDuration: options.lockMs ?? Math.max(30_000, options.timeoutMs * 2),
      ...(options.stalledIntervalMs ? { stalledInterval: options.stalledIntervalMs } : {}),
      settings: {
        // The delay was chosen with the try (schedule or Retry-After) and recorded as nextRetryAt.
        backoffStrategy: (attemptsMade, _type, error) =>
          error instanceof WebhookAttemptFailed ? error.delayMs : (retryDelay(schedule, attemptsMade) ?? -1),
      },
    },
  )
  worker.on('error', (error) => logger.error({ err: error }, 'webhooks worker error'))
  return worker
}
