import {
  CampaignCancelJob,
  ConsentConfirmationJob,
  EmailJob,
  ErasureJob,
  KeyRevocationJob,
  QueueNames,
} from '@dispatch/contracts'
import {
  type Db,
  OUTBOX_NOTIFY_CHANNEL,
  type OutboxRow,
  relayOutbox,
  type Sql,
  type WebhookTarget,
  webhookDeliveriesFor,
  webhookDeliveriesTo,
} from '@dispatch/db'
import type { ReopeningQueue } from '@dispatch/runtime/queues'
import type { Logger } from 'pino'
import Value from 'typebox/value'
import { type WebhooksQueueJob, webhookJobsFor } from '../shared/webhook-jobs.ts'

export interface OutboxRelayOptions {
  db: Db
  /** The raw driver, for LISTEN: a committed outbox row wakes the relay at once. */
  sql: Sql
  emailQueue: ReopeningQueue<EmailJob>
  /**
   * Where each webhook event becomes a delivery to each endpoint subscribed to it: a batch's events
   * of one endpoint go as bundles of up to `webhookBundleSize`.
   */
  webhookQueue: ReopeningQueue<WebhooksQueueJob>
  webhookBundleSize: number
  /** Where a keyword's confirmation waits for a messages worker to send it. */
  confirmationQueue: ReopeningQueue<ConsentConfirmationJob>
  /** Where a recipient's erasure waits for a lifecycle worker. */
  erasureQueue: ReopeningQueue<ErasureJob>
  /** How an erasure's job is added (removed once it ends: it holds the recipient). */
  erasureJobOptions: object
  /** Where a revoked key's sweep of its queued and scheduled messages waits for a lifecycle worker. */
  revocationQueue: ReopeningQueue<KeyRevocationJob>
  revocationJobOptions: object
  /** Where a canceled campaign's sweep of its queued and scheduled messages waits for a lifecycle worker. */
  campaignCancelQueue: ReopeningQueue<CampaignCancelJob>
  logger: Logger
  pollMs: number
  batchSize: number
}

/**
 * Moves committed outbox rows into their queues (e-mails, webhook events, consent confirmations,
 * erasures, the sweeps of revoked keys and canceled campaigns). Woken by NOTIFY and, as a fallback, by a timer;
 * when Redis is down a batch rolls back and is retried on the next tick, so nothing is lost.
 * Each job's id is the outbox row's own random job id, so a row relayed twice (a crash between
 * the enqueue and the commit) is still one job.
 */
export class OutboxRelay {
  readonly #options: OutboxRelayOptions
  #timer: NodeJS.Timeout | undefined
  #listener: { unlisten(): Promise<void> } | undefined
  #running: Promise<void> | undefined
  #again = false
  #failing = false
  #stopped = false

  constructor(options: OutboxRelayOptions) {
    this.#options = options
  }

  async start() {
    const { sql, pollMs, logger } = this.#options
    try {
      this.#listener = await sql.listen(OUTBOX_NOTIFY_CHANNEL, () => this.kick())
    } catch (error) {
      logger.warn({ err: error }, 'outbox LISTEN failed; relying on polling')
    }
    this.#timer = setInterval(() => this.kick(), pollMs)
    this.kick()
  }

  /** Runs a relay pass now, or right after the one in progress. */
  kick() {
    if (this.#stopped) return
    if (this.#running) {
      this.#again = true
      return
    }
    this.#running = this.#drain().finally(() => {
      this.#running = undefined
      if (this.#again) {
        this.#again = false
        this.kick()
      }
    })
  }

  async #drain() {
    const { db, batchSize, logger } = this.#options
    try {
      let moved: number
      do {
        moved = await relayOutbox(db, batchSize, (rows) => this.#publish(rows))
        if (moved > 0) logger.debug({ moved }, 'outbox rows relayed')
      } while (moved === batchSize && !this.#stopped)
      if (this.#failing) logger.info('outbox relay recovered')
      this.#failing = false
    } catch (error) {
      // Logged once per outage, not on every tick.
      if (!this.#failing) logger.warn({ err: error }, 'outbox relay failed; retrying')
      else logger.debug({ err: error }, 'outbox relay failed again')
      this.#failing = true
    }
  }

  async #publish(rows: OutboxRow[]) {
    const { emailQueue, webhookQueue, confirmationQueue, erasureQueue, revocationQueue, db, logger } =
      this.#options
    const emails = []
    const confirmations = []
    const erasures = []
    const revocations = []
    const campaignCancels = []
    const eventIds: string[] = []
    const targeted: WebhookTarget[] = []
    for (const row of rows) {
      if (row.topic === 'webhook') {
        const { eventId, endpointId } = row.payload as { eventId?: unknown; endpointId?: unknown }
        // An example names the one endpoint it is for; every other event goes to each subscriber.
        if (typeof eventId === 'string' && typeof endpointId === 'string') {
          targeted.push({ eventId, endpointId })
          continue
        }
        if (typeof eventId === 'string') {
          eventIds.push(eventId)
          continue
        }
      }
      const data = { ...(row.payload as object), outboxId: String(row.id) }
      if (row.topic === QueueNames.consentConfirmations) {
        if (Value.Check(ConsentConfirmationJob, data)) {
          confirmations.push({ name: data.intent, data, opts: { jobId: `outbox-${row.jobId}` } })
        } else logger.error({ outboxId: row.id, topic: row.topic }, 'outbox row has no valid job; skipped')
        continue
      }
      if (row.topic === QueueNames.erasures) {
        if (Value.Check(ErasureJob, data)) {
          const opts = { ...this.#options.erasureJobOptions, jobId: `outbox-${row.jobId}` }
          erasures.push({ name: 'erasure', data, opts })
        } else logger.error({ outboxId: row.id, topic: row.topic }, 'outbox row has no valid job; skipped')
        continue
      }
      if (row.topic === QueueNames.keyRevocations) {
        if (Value.Check(KeyRevocationJob, data)) {
          const opts = { ...this.#options.revocationJobOptions, jobId: `outbox-${row.jobId}` }
          revocations.push({ name: 'key-revocation', data, opts })
        } else logger.error({ outboxId: row.id, topic: row.topic }, 'outbox row has no valid job; skipped')
        continue
      }
      if (row.topic === QueueNames.campaignCancels) {
        // Added as a revocation's sweep is: retried with backoff, each step safe to run again.
        if (Value.Check(CampaignCancelJob, data)) {
          const opts = { ...this.#options.revocationJobOptions, jobId: `outbox-${row.jobId}` }
          campaignCancels.push({ name: 'campaign-cancel', data, opts })
        } else logger.error({ outboxId: row.id, topic: row.topic }, 'outbox row has no valid job; skipped')
        continue
      }
      if (row.topic !== QueueNames.email || !Value.Check(EmailJob, data)) {
        logger.error({ outboxId: row.id, topic: row.topic }, 'outbox row has no valid job; skipped')
        continue
      }
      emails.push({ name: data.template, data, opts: { jobId: `outbox-${row.jobId}` } })
    }
    // An event whose key has no endpoint subscribed to its type (any more) makes no job.
    const deliveries = [
      ...(await webhookDeliveriesFor(db, eventIds)),
      ...(await webhookDeliveriesTo(db, targeted)),
    ]
    const webhooks = webhookJobsFor(deliveries, this.#options.webhookBundleSize)
    await Promise.all([
      emails.length > 0 ? (await emailQueue.get()).addBulk(emails) : undefined,
      webhooks.length > 0 ? (await webhookQueue.get()).addBulk(webhooks) : undefined,
      confirmations.length > 0 ? (await confirmationQueue.get()).addBulk(confirmations) : undefined,
      erasures.length > 0 ? (await erasureQueue.get()).addBulk(erasures) : undefined,
      revocations.length > 0 ? (await revocationQueue.get()).addBulk(revocations) : undefined,
      campaignCancels.length > 0
        ? (await this.#options.campaignCancelQueue.get()).addBulk(campaignCancels)
        : undefined,
    ])
  }

  async stop() {
    this.#stopped = true
    clearInterval(this.#timer)
    await this.#listener?.unlisten().catch(() => {})
    await this.#running
  }
}
