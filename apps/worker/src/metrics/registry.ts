import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client'
import type { ScrapeSources, WatchedSender } from './scrape-sources.ts'

/**
 * The error codes a failed message is counted under: the platform codes the classifier knows
 * (apps/worker/src/platforms/classify.ts), a few more the Cloud API documents, and ours. Any other
 * code is counted as `other`, so a platform inventing codes cannot grow the number of series.
 */
const FAILURE_CODES = new Set([
  // Graph API: temporary, throughput, rate limits, token
  '1',
  '2',
  '4',
  '80007',
  '130429',
  '131000',
  '131048',
  '131056',
  '131057',
  '190',
  // Graph API: permanent (parameters, recipient, template, media)
  '100',
  '131008',
  '131009',
  '131021',
  '131026',
  '131031',
  '131042',
  '131045',
  '131047',
  '131049',
  '131051',
  '131052',
  '131053',
  '132000',
  '132001',
  '132005',
  '132007',
  '132012',
  '132015',
  '132016',
  '133010',
  '135000',
  '368',
  '470',
  // Ours: no answer, an answer without an id, an unexpected error, the sandbox's simulated failure
  'NETWORK',
  'TIMEOUT',
  'INVALID_ANSWER',
  'INTERNAL',
  'SANDBOX_FAILURE',
  // Answers without a Graph code (the code is HTTP_<status>)
  'HTTP_400',
  'HTTP_401',
  'HTTP_403',
  'HTTP_404',
  'HTTP_429',
  'HTTP_500',
  'HTTP_502',
  'HTTP_503',
  'HTTP_504',
])

/** A failure code as a label value: itself when known, else `other`. */
export const failureCodeLabel = (code: string) => (FAILURE_CODES.has(code) ? code : 'other')

/** Seconds from acceptance (or `sendAt`) to sent: from the admission window's 0.1 s to hours of backlog. */
const LATENCY_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300, 900, 3600, 14_400]

export type EmailOutcome = 'sent' | 'retry' | 'failed'
export type WebhookOutcome = 'success' | 'retry' | 'failed' | 'skipped'

/** What a delivery records, counted by the sender it went through (senders are few: admins add them). */
export interface DeliveryMetrics {
  /** Recorded `sent`; `since` is when it could first go (its `sendAt`, else its acceptance). */
  sent(senderId: string, since: string): void
  /** Recorded `failed`: permanent, or out of attempts. */
  failed(senderId: string, code: string): void
  /** An attempt failed and will be retried. */
  retried(senderId: string, code: string): void
  expired(senderId: string): void
  canceled(senderId: string): void
  /** The platform's rate limit paused the sender (once per pause, not per job that met it). */
  rateLimitPaused(senderId: string): void
}

/**
 * The counters of one worker process, in a registry of its own (never prom-client's global one, so
 * several workers and APIs in one test process do not clash). The gauges read at scrape time are
 * in `collectors.ts`.
 */
export class WorkerMetrics implements DeliveryMetrics {
  readonly registry = new Registry()
  /** What the units of this process asked to be read at scrape time. */
  readonly sources: ScrapeSources = { queues: new Set(), senders: new Set(), outbox: false }
  readonly #sent: Counter<'sender_id'>
  readonly #failed: Counter<'sender_id' | 'code'>
  readonly #retried: Counter<'sender_id' | 'code'>
  readonly #expired: Counter<'sender_id'>
  readonly #canceled: Counter<'sender_id'>
  readonly #latency: Histogram
  readonly #pauses: Counter<'sender_id'>
  readonly #emails: Counter<'outcome'>
  readonly #webhooks: Counter<'outcome'>

  constructor() {
    const registers = [this.registry]
    collectDefaultMetrics({ register: this.registry })
    const bySender = (name: string, help: string) =>
      new Counter({ name, help, labelNames: ['sender_id'] as const, registers })
    this.#sent = bySender('dispatch_messages_sent_total', 'Messages recorded sent, by sender')
    this.#failed = new Counter({
      name: 'dispatch_messages_failed_total',
      help: 'Messages recorded failed (permanent error, or out of attempts), by sender and error code (known codes, else "other")',
      labelNames: ['sender_id', 'code'] as const,
      registers,
    })
    this.#retried = new Counter({
      name: 'dispatch_message_retries_total',
      help: 'Delivery attempts that failed and will be retried, by sender and error code (known codes, else "other")',
      labelNames: ['sender_id', 'code'] as const,
      registers,
    })
    this.#expired = bySender(
      'dispatch_messages_expired_total',
      'Messages recorded expired (their validity ended before they could be sent), by sender',
    )
    this.#canceled = bySender(
      'dispatch_messages_canceled_total',
      'Messages recorded canceled (a cancel won the race with delivery), by sender',
    )
    this.#latency = new Histogram({
      name: 'dispatch_message_accept_to_sent_seconds',
      help: 'Seconds from acceptance (from sendAt for a scheduled message) to the sent record',
      buckets: LATENCY_BUCKETS,
      registers,
    })
    this.#pauses = bySender(
      'dispatch_sender_rate_limit_pauses_total',
      "Pauses of a sender's queue for the platform's rate limit (130429, HTTP 429), by sender",
    )
    this.#emails = new Counter({
      name: 'dispatch_emails_total',
      help: 'E-mail send attempts by outcome: sent, retry (failed, will be retried), failed (permanent or out of attempts)',
      labelNames: ['outcome'] as const,
      registers,
    })
    this.#webhooks = new Counter({
      name: 'dispatch_webhook_deliveries_total',
      help: 'Webhook delivery tries by outcome: success, retry (failed, will be retried), failed (no tries left, or the endpoint disabled), skipped (endpoint deleted or disabled)',
      labelNames: ['outcome'] as const,
      registers,
    })
  }

  sent(senderId: string, since: string): void {
    this.#sent.inc({ sender_id: senderId })
    this.#latency.observe(Math.max(0, (Date.now() - Date.parse(since)) / 1000))
  }

  failed(senderId: string, code: string): void {
    this.#failed.inc({ sender_id: senderId, code: failureCodeLabel(code) })
  }

  retried(senderId: string, code: string): void {
    this.#retried.inc({ sender_id: senderId, code: failureCodeLabel(code) })
  }

  expired(senderId: string): void {
    this.#expired.inc({ sender_id: senderId })
  }

  canceled(senderId: string): void {
    this.#canceled.inc({ sender_id: senderId })
  }

  rateLimitPaused(senderId: string): void {
    this.#pauses.inc({ sender_id: senderId })
  }

  email(outcome: EmailOutcome): void {
    this.#emails.inc({ outcome })
  }

  webhook(outcome: WebhookOutcome): void {
    this.#webhooks.inc({ outcome })
  }

  /** Report these BullMQ queues' job counts by state (the units that consume them call this). */
  watchQueues(names: () => Iterable<string>): void {
    this.sources.queues.add(names)
  }

  /** Report these senders' state and messages waiting for admission. */
  watchSenders(senders: () => Iterable<WatchedSender>): void {
    this.sources.senders.add(senders)
  }

  /** Report the outbox's lag (the process that runs the relay). */
  watchOutbox(): void {
    this.sources.outbox = true
  }

  /** A gauge in this registry, for the scrape-time collectors. */
  gauge<L extends string>(name: string, help: string, labelNames: readonly L[]): Gauge<L> {
    return new Gauge({ name, help, labelNames, registers: [this.registry] })
  }
}
