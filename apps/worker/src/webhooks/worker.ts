import { QueueNames, WEBHOOK_BUNDLE_JOB_NAME, WebhookBundleJob, WebhookJob } from '@dispatch/contracts'
import {
  type Db,
  type DeliverableEndpoint,
  markWebhookEndpointFailing,
  markWebhookEndpointHealthy,
} from '@dispatch/db'
import type { SecretBox } from '@dispatch/runtime'
import type { RedisClient } from '@dispatch/runtime/redis'
import { DelayedError, type Job, Queue, type Telemetry, UnrecoverableError, Worker } from 'bullmq'
import type { Logger } from 'pino'
import { Compile } from 'typebox/compile'
import type { WorkerMetrics } from '../metrics/registry.ts'
import { Permits } from '../shared/permits.ts'
import {
  bundleWebhookJob,
  singleWebhookJob,
  type WebhooksQueueAdd,
  type WebhooksQueueJob,
} from '../shared/webhook-jobs.ts'
import { retryDelay } from '../shared/webhook-retry-schedule.ts'
import { traced } from '../tracing.ts'
import { AttemptRecorder, DEFAULT_ATTEMPT_RECORDER_OPTIONS } from './attempt-recorder.ts'
import { DEFAULT_ENDPOINT_CACHE_MS, EndpointCache } from './endpoint-cache.ts'
import { EndpointGate } from './endpoint-gate.ts'
import { EventBodies, type EventToSend } from './event-bodies.ts'
import { postWebhook } from './post.ts'
import { signWebhook } from './sign.ts'
import { SigningSecrets } from './signing-secrets.ts'

export interface WebhooksWorkerOptions {
  db: Db
  logger: Logger
  /** The worker's blocking connection. */
  connection: RedisClient
  /** A non-blocking connection for the per-endpoint limits. */
  gateConnection: RedisClient
  /**
   * A non-blocking connection for the jobs a bundle leaves (a BullMQ queue); the gate's when absent.
   * Apart in production: BullMQ defines its 60-odd scripts on its connection, and ioredis copies
   * each onto every pipeline made there, as the gate's release makes one a turn (35 µs against 3).
   */
  queueConnection?: RedisClient
  /** The deployment's key prefix (QUEUE_PREFIX), under which the per-endpoint limits live. */
  prefix: string
  /** The `webhooks` queue's BullMQ prefix (`queuePrefix`), when it is not `prefix` itself. */
  queuePrefix?: string
  /** Jobs taken at once, and POSTs in flight in this process (a bundle's count one each). */
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
  | { delivered: false; skipped: 'endpoint-gone' | 'endpoint-disabled' | 'key-revoked' }
  /** A bundle: how many of its events were delivered, and how many go on as jobs of their own. */
  | { bundle: true; delivered: number; goOn: number; skipped: number }

const isWebhookJob = Compile(WebhookJob)
const isWebhookBundleJob = Compile(WebhookBundleJob)
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

/** One try of one event: delivered, or failed and tried again after `delayMs` (null: never again). */
type TryOutcome =
  | { ok: true; statusCode: number }
  | { ok: false; why: string; delayMs: number | null; disabled: string | null }

/** What a delivery needs before its tries: the endpoint and its secrets, or why it cannot go now. */
type Ready =
  | { endpoint: DeliverableEndpoint; secrets: string[] }
  | { laterMs: number }
  | { skipped: 'endpoint-gone' | 'endpoint-disabled' | 'key-revoked' }

/**
 * Delivers webhook events, signed as Standard Webhooks says: a job of one event for one endpoint,
 * or a bundle of one endpoint's events, tried together (their first try). Each try is recorded for
 * the endpoint's owner; a failed one is retried on the schedule (a bundle's event as a job of its
 * own); 410 and a long failing streak disable the endpoint; 429, 502 and 504 pause the endpoint for
 * every worker.
 */
export function startWebhooksWorker(options: WebhooksWorkerOptions): Worker<WebhooksQueueJob, WebhookResult> {
  const { db, logger, schedule, metrics } = options
  const endpoints = new EndpointCache(db, DEFAULT_ENDPOINT_CACHE_MS)
  const eventBodies = new EventBodies(db)
  const signingSecrets = new SigningSecrets(options.box)
  // A batch is written at once when every job the process may hold waits on it, so a process full
  // of single-event jobs (each held until its row is written) never waits out the linger.
  const recorder = new AttemptRecorder(db, logger, {
    ...DEFAULT_ATTEMPT_RECORDER_OPTIONS,
    maxWaiters: options.concurrency,
  })
  const permits = new Permits(options.concurrency)
  const gate = new EndpointGate(options.gateConnection, {
    prefix: options.prefix,
    concurrency: options.endpointConcurrency,
    ratePerSecond: options.endpointRatePerSecond,
    // A slot outlives the longest request, so a killed worker's slot frees itself soon after.
    leaseMs: options.timeoutMs + 5000,
  })
  /** Where a bundle's events that go on alone are added, on a non-blocking connection. */
  const queue = new Queue<WebhooksQueueJob>(QueueNames.webhooks, {
    connection: options.queueConnection ?? options.gateConnection,
    prefix: options.queuePrefix ?? options.prefix,
  })
  queue.on('error', (error) => logger.warn({ err: error }, 'webhooks queue error'))
  /** A bundle's events asked for at once: at most this process's places (the endpoint grants fewer). */
  const wave = options.concurrency

  const later = async (job: Job, token: string | undefined, ms: number): Promise<never> => {
    await job.moveToDelayed(Date.now() + ms, token)
    throw new DelayedError()
  }

  /** The endpoint and its secrets, read once for every event of a job. */
  const prepare = async (endpointId: string, log: Logger): Promise<Ready> => {
    let endpoint: DeliverableEndpoint | undefined
    try {
      endpoint = await endpoints.get(endpointId)
    } catch (error) {
      // Postgres is away: no try was made, so none is spent.
      log.warn({ err: error }, 'webhook endpoint not readable; delivery postponed')
      return { laterMs: 5000 }
    }
    if (!endpoint) return { skipped: 'endpoint-gone' }
    if (!endpoint.enabled) return { skipped: 'endpoint-disabled' }
    // Its key was revoked (seen within the endpoint cache's second): dropped, never retried.
    if (endpoint.keyStatus === 'revoked') return { skipped: 'key-revoked' }
    try {
      return { endpoint, secrets: signingSecrets.of(endpoint, new Date()) }
    } catch (error) {
      // Sent unsigned or failed, it would be lost to a configuration error: it waits for the key.
      // The error names the key id, never the value.
      log.error({ err: error }, 'webhook signing secret cannot be opened (SECRETS_KEY?); delivery postponed')
      return { laterMs: UNOPENED_SECRET_DELAY_MS }
    }
  }

  /**
   * Places in this process, then the endpoint's slots, for up to `count` tries: as many as the
   * endpoint grants (places it did not grant given back), or how long to wait when it grants none.
   */
  const takeSlots = async (
    endpointId: string,
    count: number,
  ): Promise<{ ok: true; count: number; release(n?: number): void } | { ok: false; waitMs: number }> => {
    const wait = permits.take(count)
    if (wait) await wait
    let slot: Awaited<ReturnType<EndpointGate['acquire']>>
    try {
      slot = await gate.acquire(endpointId, count)
    } catch (error) {
      permits.give(count)
      throw error
    }
    if (!slot.ok) {
      permits.give(count)
      return slot
    }
    if (slot.count < count) permits.give(count - slot.count)
    let held = slot.count
    return {
      ok: true,
      count: slot.count,
      // Each try gives its place and slot back as it ends; a second call for the same gives nothing.
      release: (n = held) => {
        const given = Math.min(n, held)
        if (given === 0) return
        held -= given
        permits.give(given)
        // Not awaited: the job need not wait for Redis to hear it. A release that fails leaves the
        // slot to run out with its lease, as a worker that died would.
        slot.release(given).catch(() => {})
      },
    }
  }

  /** One try of one event (its slot already taken): POSTed, recorded, the endpoint's health kept. */
  const tryOnce = async (
    { endpoint, secrets }: { endpoint: DeliverableEndpoint; secrets: string[] },
    eventId: string,
    body: string,
    attempt: number,
    log: Logger,
    /** Gives the try's place and slot back: called as soon as the POST has its answer. */
    posted: () => void,
    /** The job the try is made for, held until its row is written. */
    jobId: string,
  ): Promise<TryOutcome> => {
    const endpointId = endpoint.id
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
      posted()
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
      await recorder.record({ ...attemptRow, nextRetryAt: null }, jobId)
      if (endpoint.failingSince) {
        endpoints.forget(endpointId)
        await markWebhookEndpointHealthy(db, endpointId).catch((error) =>
          log.warn({ err: error }, 'webhook endpoint health not recorded'),
        )
      }
      metrics?.webhook('success')
      log.debug({ eventId, statusCode: result.statusCode, attempt }, 'webhook delivered')
      return { ok: true, statusCode: result.statusCode ?? 200 }
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
    await recorder.record(
      { ...attemptRow, nextRetryAt: delayMs === null ? null : new Date(now.getTime() + delayMs) },
      jobId,
    )

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
    log.warn({ eventId, statusCode: result.statusCode, attempt, last, disabled }, 'webhook delivery failed')
    return { ok: false, why, delayMs, disabled }
  }

  const deliverOne = async (job: Job<WebhookJob, WebhookResult>, token?: string): Promise<WebhookResult> => {
    if (!isWebhookJob.Check(job.data)) {
      logger.error({ jobId: job.id }, 'webhook job does not match its contract; dropped')
      throw new UnrecoverableError('The job payload does not match the webhooks contract')
    }
    const { eventId, endpointId, body } = job.data
    const log = logger.child({ eventId, webhookEndpointId: endpointId })
    const ready = await prepare(endpointId, log)
    if ('laterMs' in ready) return later(job, token, ready.laterMs)
    if ('skipped' in ready) {
      metrics?.webhook('skipped')
      return { delivered: false, skipped: ready.skipped }
    }

    const slot = await takeSlots(endpointId, 1)
    if (!slot.ok) return later(job, token, slot.waitMs)
    // A bundle's event that goes on alone counts on from the bundle's tries.
    const attempt = (job.data.triesBefore ?? 0) + job.attemptsMade + 1
    let outcome: TryOutcome
    try {
      outcome = await tryOnce(ready, eventId, body, attempt, log, () => slot.release(), String(job.id))
    } finally {
      slot.release()
    }
    if (outcome.ok) return { delivered: true, statusCode: outcome.statusCode, attempt }
    if (outcome.disabled)
      throw new UnrecoverableError(`${outcome.why}; endpoint disabled (${outcome.disabled})`)
    if (outcome.delayMs === null) throw new UnrecoverableError(`${outcome.why}; no tries left`)
    throw new WebhookAttemptFailed(outcome.why, outcome.delayMs)
  }

  /**
   * A bundle's first tries: the events read as they now are, tried together as the endpoint's
   * limits grant slots: all at once when that many are free, else the free ones, then the next, so
   * single deliveries taking slots one by one never starve a bundle. Refused after some were tried,
   * the rest go as a bundle of their own, due when the endpoint allows; each failed try goes on as
   * its event's own job, on the schedule. The bundle completes once those are queued: killed
   * before, it is run again whole (the events sent again under the same `webhook-id`, as any
   * delivery whose worker died).
   */
  const deliverBundle = async (
    job: Job<WebhookBundleJob, WebhookResult>,
    token?: string,
  ): Promise<WebhookResult> => {
    if (!isWebhookBundleJob.Check(job.data)) {
      logger.error({ jobId: job.id }, 'webhook bundle job does not match its contract; dropped')
      throw new UnrecoverableError('The job payload does not match the webhooks bundle contract')
    }
    const { endpointId, eventIds } = job.data
    const log = logger.child({ webhookEndpointId: endpointId })
    const ready = await prepare(endpointId, log)
    if ('laterMs' in ready) return later(job, token, ready.laterMs)
    if ('skipped' in ready) {
      for (const _ of eventIds) metrics?.webhook('skipped')
      return { bundle: true, delivered: 0, goOn: 0, skipped: eventIds.length }
    }
    let found: Map<string, EventToSend>
    try {
      found = await eventBodies.of(eventIds)
    } catch (error) {
      log.warn({ err: error }, 'webhook events not readable; delivery postponed')
      return later(job, token, 5000)
    }
    // In the bundle's order; an event gone since it was relayed (its retention) has nothing to send.
    const events = eventIds.flatMap((id) => {
      const event = found.get(id)
      return event ? [{ eventId: id, eventType: event.type, body: event.body }] : []
    })
    const attempt = job.attemptsMade + 1
    const goOn: WebhooksQueueAdd[] = []
    let delivered = 0
    let skipped = eventIds.length - events.length
    for (let from = 0; from < events.length; ) {
      const slot = await takeSlots(endpointId, Math.min(wave, events.length - from))
      if (!slot.ok) {
        if (from === 0) return later(job, token, slot.waitMs)
        const rest = bundleWebhookJob(
          endpointId,
          events.slice(from).map((e) => e.eventId),
        )
        goOn.push({ ...rest, opts: { ...rest.opts, delay: slot.waitMs } })
        break
      }
      const part = events.slice(from, from + slot.count)
      from += slot.count
      let outcomes: TryOutcome[]
      try {
        outcomes = await Promise.all(
          part.map((e) =>
            tryOnce(ready, e.eventId, e.body, attempt, log, () => slot.release(1), String(job.id)),
          ),
        )
      } finally {
        slot.release()
      }
      let disabled = false
      outcomes.forEach((outcome, i) => {
        const event = part[i] as (typeof part)[number]
        if (outcome.ok) delivered++
        else if (outcome.disabled) disabled = true
        else if (outcome.delayMs !== null) {
          const next = singleWebhookJob(event.eventId, endpointId, event.eventType, event.body, attempt)
          goOn.push({ ...next, opts: { ...next.opts, delay: outcome.delayMs } })
        }
      })
      if (disabled) {
        // The endpoint is disabled now: the rest waits for an enable and a replay, as any event.
        skipped += events.length - from
        for (let i = from; i < events.length; i++) metrics?.webhook('skipped')
        break
      }
    }
    if (goOn.length > 0) await queue.addBulk(goOn)
    return { bundle: true, delivered, goOn: goOn.length, skipped }
  }

  const deliver = (job: Job<WebhooksQueueJob, WebhookResult>, token?: string): Promise<WebhookResult> =>
    job.name === WEBHOOK_BUNDLE_JOB_NAME
      ? deliverBundle(job as Job<WebhookBundleJob, WebhookResult>, token)
      : deliverOne(job as Job<WebhookJob, WebhookResult>, token)

  const worker: Worker<WebhooksQueueJob, WebhookResult> = new Worker<WebhooksQueueJob, WebhookResult>(
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
  worker.on('closed', () => {
    queue.close().catch(() => {})
  })
  return worker
}
