import {
  type MessageJob,
  QueueNames,
  SENDER_CHANGES_CHANNEL,
  SENDER_RATE_LIMITS_CHANNEL,
  type SenderState,
  senderQueueName,
} from '@dispatch/contracts'
import { type DeliveryOutcome, markSenderNeedsAttention } from '@dispatch/db'
import { queuePrefix, recipientHasher } from '@dispatch/runtime'
import {
  fairKeys,
  MESSAGE_BUNDLE_JOB_NAME,
  type MessageBundleJob,
  type MessageBundleResult,
} from '@dispatch/runtime/message-handoff'
import { ReopeningQueue } from '@dispatch/runtime/queues'
import type { RedisClient } from '@dispatch/runtime/redis'
import { type Job, Queue, Worker } from 'bullmq'
import { createSandboxPlatform } from '../platforms/sandbox.ts'
import { createSmsProvider } from '../platforms/sms/provider.ts'
import type { SmsProvider } from '../platforms/sms/types.ts'
import type { MessagingPlatform, PlatformError } from '../platforms/types.ts'
import { createWhatsAppCloudPlatform } from '../platforms/whatsapp-cloud.ts'
import type { WorkerContext } from '../runtime.ts'
import { Permits, withPermit } from '../shared/permits.ts'
import { deliverBundle } from './bundle.ts'
import { CanceledCampaigns } from './canceled-campaigns.ts'
import { OptOutWatch } from './consent/watch.ts'
import { deliverMessage, platformBackoff } from './deliver.ts'
import { handOnStalled } from './delivery/fallback-triggers.ts'
import type { DeliveryLane, DeliveryResult, RotationWatch } from './delivery/types.ts'
import { DeliveryRecorder } from './delivery-recorder.ts'
import { SmsFallbackTimers } from './fallback-timer.ts'
import type { SenderSettings } from './registry.ts'
import { RevokedKeys } from './revoked-keys.ts'
import { batchedLogSent } from './sent-log.ts'

/** The longest a rate-limited sender is paused at once, however long its streak. */
const RATE_LIMIT_MAX_PAUSE_MS = 60_000
/** A number not rate limited for this long after its last pause starts a new streak. */
const RATE_LIMIT_QUIET_MS = 10_000

/** The platform adapter for one sender: the Cloud API with its token, or the sandbox as its number. */
export function createSenderPlatform(
  config: WorkerContext['config'],
  sender: SenderSettings,
): MessagingPlatform {
  if (config.platform === 'whatsapp-cloud') {
    return createWhatsAppCloudPlatform({
      apiUrl: config.WHATSAPP_API_URL,
      accessToken: sender.accessToken ?? '',
      phoneNumberId: sender.phoneNumberId,
      timeoutMs: config.PLATFORM_TIMEOUT_MS,
    })
  }
  return createSandboxPlatform({
    latencyMs: config.SANDBOX_LATENCY_MS,
    failureRate: config.SANDBOX_FAILURE_RATE,
    phoneNumberId: sender.phoneNumberId,
  })
}

/**
 * One sender's delivery in this process: its queue (pause), a BullMQ worker on it, and its platform
 * adapter. Its rate is kept where its messages are admitted (the admit script's pace), its pause in
 * Redis by BullMQ (`pause`), so both hold for every process; each process applies the sender's
 * settings as it learns them, and the same settings applied twice change nothing. The queue has no
 * BullMQ limiter: a platform rate limit (130429) is a pause of the limiter key, which stops
 * admission in every process and this process' worker, and which the workers of other processes
 * meet at their own first refusal.
 */
export class SenderLane implements DeliveryLane {
  readonly senderId: string
  /** The sender's BullMQ queue, opened again if opening it failed (see ReopeningQueue). */
  readonly queue: ReopeningQueue<MessageJob>
  readonly queueName: string
  /** The sender's sent log (sent-log.ts). */
  readonly sentLog: string
  platform: MessagingPlatform
  settings: SenderSettings
  #worker: Worker<MessageJob | MessageBundleJob, DeliveryResult | MessageBundleResult> | undefined
  #pausedUntil = 0
  /** When this process last paused the sender for a refused token (ms). */
  #refusedAt = 0
  #limitStreak = 0
  /** When the current streak of rate-limit pauses began (ms). */
  #limitedSince = 0
  #appliedPaused: boolean | undefined
  readonly #context: WorkerContext
  readonly #publisher: RedisClient
  readonly #pace: string
  readonly #rotation: RotationWatch

  constructor(
    context: WorkerContext,
    settings: SenderSettings,
    connections: { producer: RedisClient; worker: RedisClient; claims: RedisClient },
    recorder: DeliveryRecorder,
    optOuts: OptOutWatch,
    appendSent: ReturnType<typeof batchedLogSent>,
    revokedKeys: RevokedKeys,
    canceledCampaigns: CanceledCampaigns,
    fallback: LaneFallback,
    rotation: RotationWatch,
  ) {
    const { config, logger } = context
    this.#context = context
    this.#publisher = connections.producer
    this.#rotation = rotation
    this.senderId = settings.id
    this.settings = settings
    this.platform = createSenderPlatform(config, settings)
    const name = senderQueueName(settings.id)
    const prefix = queuePrefix(config, name)
    this.queueName = name
    const fair = fairKeys(config.QUEUE_PREFIX, settings.id)
    this.sentLog = fair.sentLog
    this.#pace = fair.pace
    this.queue = new ReopeningQueue(() => {
      const queue = new Queue<MessageJob>(name, { connection: connections.producer, prefix })
      queue.on('error', (error) => logger.warn({ err: error, senderId: this.senderId }, 'sender queue error'))
      return queue
    })
    const deps = {
      db: context.db,
      claims: connections.claims,
      logger,
      prefix: config.QUEUE_PREFIX,
      hash: recipientHasher(config),
      recorder,
      // On the connection the lane's worker completes jobs on (sent-log.ts).
      sentLog: { stream: this.sentLog, redis: connections.worker },
      metrics: context.metrics,
      optOuts,
      revokedKeys,
      canceledCampaigns,
      sms: fallback.sms,
      fallbackTimers: fallback.timers,
      rotation,
    }
    // The platform calls in flight for this sender in this process, bundled or not.
    const permits = new Permits(config.MESSAGES_CONCURRENCY)
    const bundleDeps = {
      ...deps,
      // A bundle's sent outcomes, with those of every lane's bundles of the turn, in one write.
      sentLog: { ...deps.sentLog, append: (outcome: DeliveryOutcome) => appendSent(this.sentLog, outcome) },
      queue: () => this.queue.get(),
      permits,
      index: { redis: connections.claims, key: fair.bundled },
      backoffMs: config.MESSAGES_BACKOFF_MS,
    }
    this.#worker = new Worker<MessageJob | MessageBundleJob, DeliveryResult | MessageBundleResult>(
      name,
      (job, token) =>
        job.name === MESSAGE_BUNDLE_JOB_NAME
          ? deliverBundle(job as Job<MessageBundleJob, MessageBundleResult>, this, bundleDeps, token)
          : withPermit(permits, () =>
              deliverMessage(job as Job<MessageJob, DeliveryResult>, token, this, deps),
            ),
      {
        connection: connections.worker,
        prefix,
        // Started once the sender's rate is in place (`apply`): never a burst past it.
        autorun: false,
        // Each job's span continues the trace of the request that accepted the message.
        ...(context.telemetry ? { telemetry: context.telemetry } : {}),
        concurrency: config.MESSAGES_CONCURRENCY,
        lockDuration: config.MESSAGES_LOCK_MS,
        stalledInterval: config.MESSAGES_STALLED_INTERVAL_MS,
        settings: {
          backoffStrategy: (attemptsMade, _type, error) =>
            platformBackoff(attemptsMade, config.MESSAGES_BACKOFF_MS, error),
        },
      },
    )
    this.#worker.on('error', (error) =>
      logger.error({ err: error, senderId: this.senderId }, 'messages worker error'),
    )
    // A job failed as stalled too often runs no step again: its undecided fallback goes to a timer.
    this.#worker.on(
      'failed',
      (job, error) =>
        void handOnStalled({ timers: fallback.timers, db: context.db, log: logger }, job, error),
    )
  }

  /** Whether this process holds the sender's queue (paused, needing attention, or switched off). */
  get held(): boolean {
    return this.#appliedPaused === true
  }

  /**
   * Applies a sender's settings: its pause (in Redis, for every process) and its token; its rate is
   * read by the admitter from `settings`. A queue limited by BullMQ (as every sender's was before
   * admission kept the rate) is freed of it, so its jobs no longer pay for it: at every refresh, as
   * a worker of the earlier version may set it again during a rolling upgrade (one HDEL).
   */
  async apply(next: SenderSettings, readAt = Date.now()): Promise<void> {
    const changedCredentials =
      next.accessToken !== this.settings.accessToken || next.phoneNumberId !== this.settings.phoneNumberId
    this.settings = next
    if (changedCredentials) this.platform = createSenderPlatform(this.#context.config, next)
    await this.#applyPause(next, readAt)
    await (await this.queue.get()).removeGlobalRateLimit()
    if (this.#worker && !this.#worker.isRunning()) {
      this.#worker
        .run()
        .catch((error) =>
          this.#context.logger.error({ err: error, senderId: this.senderId }, 'messages worker stopped'),
        )
    }
  }

  /**
   * Holds the sender's queue (BullMQ's pause, in Redis: every process) while the sender is not
   * `active` or an admin's switch holds it (`messages`, `messages.<id>`), and resumes it once
   * neither does. A held queue is checked on every refresh, so a pause lost meanwhile (a Redis
   * failover, a resume from elsewhere) is put back; a switch never known (Postgres unreachable at
   * start) leaves the queue as it is.
   */
  async #applyPause(next: SenderSettings, readAt: number): Promise<void> {
    if (next.holds === undefined) return
    const paused = next.state !== 'active' || next.holds.length > 0
    // Read before this process paused the sender for a refused token: not a reason to resume it (the
    // refresh the refusal announces reads the new state).
    if (!paused && this.#refusedAt >= readAt) return
    const queue = await this.queue.get()
    const lost = paused && this.#appliedPaused === true && !(await queue.isPaused())
    if (this.#appliedPaused === paused && !lost) return
    if (paused) await queue.pause()
    else await queue.resume()
    this.#appliedPaused = paused
    this.#context.logger.info(
      { senderId: this.senderId, state: next.state, holds: next.holds },
      paused ? 'sender paused' : 'sender active',
    )
  }

  /** Until when this process knows the sender to be rate limited by the platform (ms). */
  get limitedUntil(): number {
    return this.#pausedUntil
  }

  /** While the pause this process knows lasts, the limiter key lives as long (every process' admission waits). */
  async holdForLimit(): Promise<boolean> {
    const left = this.#pausedUntil - Date.now()
    if (left <= 0) return false
    await (await this.queue.get()).rateLimit(left)
    return true
  }

  /**
   * Takes one message's place from the sender's pace (the admit script's token bucket): a retry is
   * one platform call more than admission let through. Not awaited by the caller's outcome.
   */
  async spendPace(): Promise<void> {
    await this.#publisher.hincrbyfloat(this.#pace, 'tokens', -1)
  }

  /**
   * Pauses this sender for the platform's rate limit: admission in every process, and this
   * process' worker (others at their own first refusal). A number that is
   * still limited when a pause ends is paused twice as long the next time (up to a minute), so a
   * long limit costs a few refused requests, not a burst of every worker slot each second; the
   * jobs of one burst share its pause. The streak ends once the number has gone quiet for a while.
   */
  async rateLimit(ms: number): Promise<{ pauseMs: number; newPause: boolean }> {
    if (await this.holdForLimit())
      return { pauseMs: Math.max(0, this.#pausedUntil - Date.now()), newPause: false }
    const now = Date.now()
    this.#limitStreak = now - this.#pausedUntil > RATE_LIMIT_QUIET_MS ? 1 : this.#limitStreak + 1
    if (this.#limitStreak === 1) this.#limitedSince = now
    const pauseMs = Math.min(RATE_LIMIT_MAX_PAUSE_MS, Math.max(ms, ms * 2 ** (this.#limitStreak - 1)))
    this.#pausedUntil = now + pauseMs
    await (await this.queue.get()).rateLimit(pauseMs)
    // The API's sender pools take a number limited longer than POOL_RATE_LIMIT_TOLERANCE_SECONDS
    // out of rotation (docs/sender-pools.md): told the streak's start and this pause's end. This
    // process' pool mover first, so the bundle that met it hands its messages over at once.
    this.#rotation.rateLimited(this.senderId, this.#limitedSince, this.#pausedUntil)
    void this.#publisher
      .publish(
        `${this.#context.config.QUEUE_PREFIX}:${SENDER_RATE_LIMITS_CHANNEL}`,
        `${this.senderId} ${this.#limitedSince} ${this.#pausedUntil}`,
      )
      .catch(() => {})
    return { pauseMs, newPause: true }
  }

  async tokenRefused(error: PlatformError): Promise<void> {
    const { config, db, logger } = this.#context
    const state: SenderState = 'needs_attention'
    this.#refusedAt = Date.now()
    // Paused first: whatever happens to the record, no further message meets the same refusal.
    await (await this.queue.get()).pause()
    this.#appliedPaused = true
    this.settings = { ...this.settings, state }
    const changed = await markSenderNeedsAttention(db, this.senderId, {
      code: error.code,
      reason: error.message,
      alertTo: config.ADMIN_ALERT_EMAIL,
      now: new Date(),
    })
    if (!changed) return
    if (!config.ADMIN_ALERT_EMAIL)
      logger.error({ senderId: this.senderId }, 'sender needs attention; ADMIN_ALERT_EMAIL unset, no e-mail')
    // Every other process learns at once (it would at its next refresh anyway).
    await this.#publisher
      .publish(`${config.QUEUE_PREFIX}:${SENDER_CHANGES_CHANNEL}`, this.senderId)
      .catch(() => {})
  }

  /** Stops taking jobs and lets those in flight finish. */
  async close(): Promise<void> {
    await this.#worker?.close()
    this.#worker = undefined
    await this.queue.close()
  }
}

/** The channel fallback's parts a lane delivers with (docs/fallback.md). */
export interface LaneFallback {
  sms: SmsProvider | undefined
  timers: SmsFallbackTimers
}

/** Every sender's lane in this process, kept in line with the registry. */
export class SenderLanes {
  readonly #lanes = new Map<string, SenderLane>()
  readonly #context: WorkerContext
  readonly #connections: { producer: RedisClient; worker: RedisClient; claims: RedisClient }
  readonly #recorder: DeliveryRecorder
  readonly #optOuts: OptOutWatch
  /** The revoked keys, whose messages delivery cancels instead of sending. */
  readonly #revokedKeys: RevokedKeys
  /** The canceled campaigns, whose messages delivery cancels instead of sending. */
  readonly #canceledCampaigns: CanceledCampaigns
  /** The sent outcomes of every lane's bundles of a turn, in one write (sent-log.ts). */
  readonly #appendSent: ReturnType<typeof batchedLogSent>
  /** The channel fallback's provider and timers, shared by every lane. */
  readonly fallback: LaneFallback
  /** The pool mover, once started (`watchRotation`): bundles ask it whether their number fell. */
  #rotation: RotationWatch | undefined
  readonly #rotationWatch: RotationWatch = {
    leftRotation: (senderId) => this.#rotation?.leftRotation(senderId) ?? false,
    handOver: (senderId, messages, holder) =>
      this.#rotation?.handOver(senderId, messages, holder) ?? Promise.resolve(new Set<string>()),
    rateLimited: (senderId, since, until) => this.#rotation?.rateLimited(senderId, since, until),
    poolNumbers: (poolId, acceptedAt) => this.#rotation?.poolNumbers(poolId, acceptedAt),
  }

  constructor(context: WorkerContext) {
    this.#context = context
    this.#connections = {
      producer: context.redis('senders-queues', { blocking: false }),
      worker: context.redis('messages-workers', { blocking: true }),
      // Each job's claim, opt-out read and window read go out together, and with other jobs'.
      claims: context.redis('messages-claims', { blocking: false, pipelined: true }),
    }
    // One recorder for every sender: outcomes of all of them share each batched write.
    // A final outcome once committed shortens its message's claim: Redis holds what is in flight.
    this.#recorder = new DeliveryRecorder(context.sql, {
      redis: this.#connections.claims,
      claims: { prefix: context.config.QUEUE_PREFIX, keepMs: context.config.MESSAGE_CLAIM_KEEP_MS },
    })
    // On the claims' connection, which holds no BullMQ queue or worker: BullMQ defines its 60-odd
    // scripts on its connections, and ioredis copies each onto every pipeline made there.
    this.#appendSent = batchedLogSent(this.#connections.claims)
    const { config, logger } = context
    this.fallback = {
      sms: createSmsProvider(config),
      timers: new SmsFallbackTimers(
        this.#connections.producer,
        queuePrefix(config, QueueNames.smsFallbackTimers),
        this.#connections.claims,
      ),
    }
    this.#optOuts = new OptOutWatch(
      context.redis('optout-announcements', { blocking: true }),
      config.QUEUE_PREFIX,
      logger,
    )
    this.#optOuts.start()
    // Both follow their announcements on one subscribed connection (each reads its own channel).
    const announcements = context.redis('cancel-announcements', { blocking: true })
    this.#revokedKeys = new RevokedKeys({
      db: context.db,
      subscriber: announcements,
      prefix: config.QUEUE_PREFIX,
      logger,
    })
    this.#canceledCampaigns = new CanceledCampaigns({
      db: context.db,
      subscriber: announcements,
      prefix: config.QUEUE_PREFIX,
      logger,
    })
  }

  /**
   * Reads the revoked keys and the canceled campaigns before the first delivery, and follows their
   * announcements.
   */
  async followRevocations(): Promise<void> {
    await Promise.all([this.#revokedKeys.start(), this.#canceledCampaigns.start()])
  }

  /**
   * Resolves once this process follows the opt-out announcements (consent/watch.ts), so its first
   * deliveries skip the reads they need not make; waits a second at most.
   */
  followingOptOuts(): Promise<void> {
    return this.#optOuts.caughtUp(1_000)
  }

  /** Bundles on a pool number that left rotation hand their unsent messages to `watch` (pool-mover.ts). */
  watchRotation(watch: RotationWatch): void {
    this.#rotation = watch
  }

  get producer(): RedisClient {
    return this.#connections.producer
  }

  /** What recording an outcome outside a delivery takes: the claims' connection and the recorder. */
  get recording(): { claims: RedisClient; recorder: DeliveryRecorder } {
    return { claims: this.#connections.claims, recorder: this.#recorder }
  }

  lanes(): IterableIterator<SenderLane> {
    return this.#lanes.values()
  }

  get(id: string): SenderLane | undefined {
    return this.#lanes.get(id)
  }

  /** Starts lanes for new senders, applies changed settings, closes the lanes of removed ones. */
  async reconcile(senders: SenderSettings[], readAt = Date.now()): Promise<void> {
    const { logger } = this.#context
    const seen = new Set<string>()
    for (const sender of senders) {
      seen.add(sender.id)
      let lane = this.#lanes.get(sender.id)
      if (!lane) {
        lane = new SenderLane(
          this.#context,
          sender,
          this.#connections,
          this.#recorder,
          this.#optOuts,
          this.#appendSent,
          this.#revokedKeys,
          this.#canceledCampaigns,
          this.fallback,
          this.#rotationWatch,
        )
        this.#lanes.set(sender.id, lane)
        logger.info(
          {
            senderId: sender.id,
            phoneNumberId: sender.phoneNumberId,
            ratePerSecond: sender.ratePerSecond,
            platform: lane.platform.name,
          },
          'delivering for sender',
        )
      }
      await lane.apply(sender, readAt)
    }
    for (const [id, lane] of this.#lanes) {
      if (seen.has(id)) continue
      this.#lanes.delete(id)
      logger.info({ senderId: id }, 'sender removed; its lane closes')
      await lane.close()
    }
  }

  /** Closes every lane (in-flight jobs finish), then writes the outcomes they left to Postgres. */
  async close(): Promise<void> {
    await Promise.all([...this.#lanes.values()].map((lane) => lane.close()))
    this.#lanes.clear()
    this.#optOuts.close()
    this.#revokedKeys.close()
    this.#canceledCampaigns.close()
    await this.fallback.timers.close()
    await this.#recorder.drain()
  }
}
