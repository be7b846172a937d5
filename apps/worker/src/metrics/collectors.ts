import { SENDER_STATES } from '@dispatch/contracts'
import { type Db, pendingOutboxAgeSeconds } from '@dispatch/db'
import { type KeyLayout, queuePrefix } from '@dispatch/runtime'
import { fairKeys } from '@dispatch/runtime/message-handoff'
import type { RedisClient } from '@dispatch/runtime/redis'
import { Queue } from 'bullmq'
import type { Logger } from 'pino'
import { mergeExpositions } from './exposition.ts'
import type { WorkerMetrics } from './registry.ts'
import type { ScrapeSources, WatchedSender } from './scrape-sources.ts'

export interface ScraperDeps {
  /** A fail-fast connection (no offline queue): a scrape while Redis is down skips, never waits. */
  redis: RedisClient
  db: Db
  /** Where the queues and fair-admission lists are (QUEUE_PREFIX, REDIS_CLUSTER). */
  layout: KeyLayout
  logger: Logger
  /** How long each collector may take before its figures are left out of the scrape. */
  timeoutMs?: number
}

/**
 * BullMQ's completed and failed totals count only with the workers' `metrics` option, which is off:
 * they would read 0. The service's own counters (`dispatch_messages_*`, `dispatch_emails_total`,
 * `dispatch_webhook_deliveries_total`) say what happened, per process.
 */
const UNUSED_BULLMQ_FAMILIES = new Set(['bullmq_job_completed_total', 'bullmq_job_failed_total'])

const withTimeout = <T>(work: Promise<T>, ms: number) => {
  let timer: NodeJS.Timeout | undefined
  return Promise.race([
    work,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms)
    }),
  ]).finally(() => clearTimeout(timer))
}

/**
 * Reads, at scrape time, what only Redis and Postgres know: each watched queue's job counts
 * (BullMQ's own `exportPrometheusMetrics()`), each sender's messages waiting for admission, the
 * outbox's lag. A collector that fails (Redis or Postgres down, or slow) leaves its figures out of
 * that scrape, says so in `dispatch_metrics_collector_up`, and logs at debug: a scrape never fails
 * for a dependency.
 */
export class Scraper {
  readonly #metrics: WorkerMetrics
  readonly #sources: ScrapeSources
  readonly #deps: ScraperDeps
  readonly #queues = new Map<string, Queue>()
  readonly #up
  readonly #waiting
  readonly #scheduled
  readonly #senderState
  readonly #senderRate
  readonly #outboxLag
  readonly #paused

  constructor(metrics: WorkerMetrics, sources: ScrapeSources, deps: ScraperDeps) {
    this.#metrics = metrics
    this.#sources = sources
    this.#deps = deps
    this.#up = metrics.gauge(
      'dispatch_metrics_collector_up',
      'Whether a scrape-time collector answered in this scrape (1) or its figures were left out (0)',
      ['collector'],
    )
    this.#waiting = metrics.gauge(
      'dispatch_sender_waiting_messages',
      "Messages waiting for admission into the sender's queue (due, not scheduled for later), by sender",
      ['sender_id'],
    )
    this.#scheduled = metrics.gauge(
      'dispatch_sender_scheduled_messages',
      'Scheduled messages not yet due, by sender',
      ['sender_id'],
    )
    this.#senderState = metrics.gauge(
      'dispatch_sender_state',
      'The state of each sender this process delivers for: 1 for its current state, 0 for the others',
      ['sender_id', 'state'],
    )
    this.#senderRate = metrics.gauge(
      'dispatch_sender_rate_per_second',
      "Each sender's configured rate (messages per second, across every process): waiting ÷ rate is its backlog in seconds",
      ['sender_id'],
    )
    this.#paused = metrics.gauge(
      'dispatch_queue_paused',
      "Whether a queue is paused (1) or not (0); BullMQ's bullmq_job_count counts a paused queue's jobs as waiting",
      ['queue'],
    )
    this.#outboxLag = metrics.gauge(
      'dispatch_outbox_lag_seconds',
      'Age of the oldest outbox row not yet relayed to its queue (0 when none waits)',
      [],
    )
  }

  /** The whole exposition of this process: its registry, then the queues' job counts. */
  async scrape(): Promise<string> {
    const [queues] = await Promise.all([
      this.#collect(
        'queues',
        () => this.#queueCounts(),
        () => this.#paused.reset(),
      ),
      this.#collect(
        'admission',
        () => this.#admission(),
        () => {
          this.#waiting.reset()
          this.#scheduled.reset()
        },
      ),
      this.#collect(
        'outbox',
        () => this.#outbox(),
        () => this.#outboxLag.remove(),
      ),
    ])
    this.#senderStates()
    const own = await this.#metrics.registry.metrics()
    return queues ? `${own}${queues}` : own
  }

  async close(): Promise<void> {
    await Promise.all([...this.#queues.values()].map((queue) => queue.close().catch(() => {})))
    this.#queues.clear()
  }

  /**
   * Runs one collector within the time limit. `clear` drops its figures when it is not watched by
   * this process or did not answer: a gauge left at its last value, or at 0, would lie.
   */
  async #collect<T>(
    collector: string,
    read: () => Promise<T> | undefined,
    clear: () => void = () => {},
  ): Promise<T | undefined> {
    const work = read()
    if (!work) {
      this.#up.remove({ collector })
      clear()
      return undefined
    }
    try {
      const value = await withTimeout(work, this.#deps.timeoutMs ?? 2000)
      this.#up.set({ collector }, 1)
      return value
    } catch (error) {
      this.#up.set({ collector }, 0)
      clear()
      this.#deps.logger.debug({ err: error, collector }, 'metrics collector skipped')
      return undefined
    }
  }

  #senders(): WatchedSender[] {
    return [...this.#sources.senders].flatMap((list) => [...list()])
  }

  #queueCounts(): Promise<string> | undefined {
    const names = new Set([...this.#sources.queues].flatMap((list) => [...list()]))
    if (names.size === 0) return undefined
    // Queues of senders gone since the last scrape are let go.
    for (const [name, queue] of this.#queues) {
      if (names.has(name)) continue
      this.#queues.delete(name)
      queue.close().catch(() => {})
    }
    const queues = [...names].map((name) => this.#queue(name))
    return Promise.all([
      Promise.all(queues.map((queue) => queue.exportPrometheusMetrics())),
      Promise.all(queues.map((queue) => queue.isPaused())),
    ]).then(([texts, paused]) => {
      this.#paused.reset()
      for (const [i, queue] of queues.entries()) this.#paused.set({ queue: queue.name }, paused[i] ? 1 : 0)
      return mergeExpositions(texts, UNUSED_BULLMQ_FAMILIES)
    })
  }

  #queue(name: string): Queue {
    let queue = this.#queues.get(name)
    if (!queue) {
      queue = new Queue(name, { connection: this.#deps.redis, prefix: queuePrefix(this.#deps.layout, name) })
      queue.on('error', (error) =>
        this.#deps.logger.debug({ err: error, queue: name }, 'metrics queue error'),
      )
      this.#queues.set(name, queue)
    }
    return queue
  }

  #admission(): Promise<void> | undefined {
    const senders = this.#senders()
    if (senders.length === 0) return undefined
    // Two commands per sender, sent together; not one pipeline, which on a cluster must stay on
    // one node while the senders' lists spread over the shards.
    const { redis, layout } = this.#deps
    const counts = senders.map(({ senderId }) => {
      const keys = fairKeys(layout.QUEUE_PREFIX, senderId)
      return Promise.all([redis.hlen(keys.jobs), redis.zcard(keys.scheduled)])
    })
    return Promise.all(counts).then((results) => {
      this.#waiting.reset()
      this.#scheduled.reset()
      senders.forEach(({ senderId }, i) => {
        const [jobs, scheduled] = results[i] as [number, number]
        // The jobs hash holds scheduled messages too, until they are admitted.
        this.#waiting.set({ sender_id: senderId }, Math.max(0, Number(jobs) - Number(scheduled)))
        this.#scheduled.set({ sender_id: senderId }, Number(scheduled))
      })
    })
  }

  #senderStates() {
    this.#senderState.reset()
    this.#senderRate.reset()
    for (const { senderId, settings } of this.#senders()) {
      this.#senderRate.set({ sender_id: senderId }, settings.ratePerSecond)
      for (const state of SENDER_STATES) {
        this.#senderState.set({ sender_id: senderId, state }, state === settings.state ? 1 : 0)
      }
    }
  }

  #outbox(): Promise<void> | undefined {
    if (!this.#sources.outbox) return undefined
    return pendingOutboxAgeSeconds(this.#deps.db).then((seconds) => this.#outboxLag.set(seconds))
  }
}
