import type { MessageJob } from '@dispatch/contracts'
import type { Sql } from '@dispatch/db'
import { fairKeys } from '@dispatch/runtime/message-handoff'
import type { RedisClient } from '@dispatch/runtime/redis'
import type { SmsProvider } from '../platforms/sms/types.ts'
import type { WorkerContext } from '../runtime.ts'
import { deliveryOutcome, expiredFields } from '../shared/message-outcome.ts'
import { Periodic } from '../shared/periodic.ts'
import { takeClaim } from './delivery/claim.ts'
import type { DeliveryRecorder } from './delivery-recorder.ts'
import type { SenderLane } from './lanes.ts'
import { EXPIRED_RULE, fallBackFromJob } from './sms-fallback.ts'
import { takeWaiting } from './take-waiting.ts'

/** Jobs read per HSCAN page. */
const PAGE = 500

/**
 * Expires the messages of held senders on time. A sender that is held (an admin's switch, a paused
 * state, a refused token) admits nothing, so its waiting messages would stay `queued` past their
 * validity until it resumes. Every EXPIRY_SWEEP_MS, for each held sender of this process, the
 * messages waiting for admission whose validity has ended are taken out of its lists and recorded
 * `expired` with their webhook events, as a worker records an expiry; or `canceled`, when a cancel
 * got the message's claim first. Several processes may sweep one sender: each message is taken once.
 * What was already admitted into the held queue (at most one admission window) expires on resume.
 */
export class HeldExpirySweeper {
  readonly #context: WorkerContext
  readonly #redis: RedisClient
  readonly #claims: RedisClient
  readonly #recorder: DeliveryRecorder
  readonly #sms: SmsProvider | undefined
  readonly #lanes: () => Iterable<SenderLane>
  readonly #every: Periodic

  constructor(
    context: WorkerContext,
    parts: {
      redis: RedisClient
      claims: RedisClient
      recorder: DeliveryRecorder
      /** The channel fallback's provider: an expired message with a `fallback` is texted instead. */
      sms?: SmsProvider | undefined
    },
    lanes: () => Iterable<SenderLane>,
  ) {
    this.#context = context
    this.#redis = parts.redis
    this.#claims = parts.claims
    this.#recorder = parts.recorder
    this.#sms = parts.sms
    this.#lanes = lanes
    this.#every = new Periodic(
      () => this.sweep(),
      context.config.EXPIRY_SWEEP_MS,
      (error) => context.logger.warn({ err: error }, 'expiry sweep of held senders failed; trying again'),
    )
  }

  start(): void {
    this.#every.start()
  }

  /** One pass over every held sender of this process; answers how many messages it recorded. */
  async sweep(now = Date.now()): Promise<number> {
    let recorded = 0
    for (const lane of this.#lanes()) {
      if (lane.held) recorded += await this.#sweepLane(lane, now)
    }
    return recorded
  }

  async #sweepLane(lane: SenderLane, now: number): Promise<number> {
    const keys = fairKeys(this.#context.config.QUEUE_PREFIX, lane.senderId)
    const expired: string[] = []
    let cursor = '0'
    do {
      const [next, entries] = await this.#redis.hscan(keys.jobs, cursor, 'COUNT', PAGE)
      for (let i = 0; i < entries.length; i += 2) {
        const { expiresAt } = JSON.parse(entries[i + 1] as string) as MessageJob
        if (expiresAt && Date.parse(expiresAt) < now) expired.push(entries[i] as string)
      }
      cursor = next
    } while (cursor !== '0')
    let recorded = 0
    for (const id of expired) {
      // Recorded before it leaves `moving`, so a lookup meanwhile finds it there.
      if (await takeWaiting(this.#redis, keys, id, (job) => this.#record(lane, job))) recorded++
    }
    if (recorded > 0) {
      this.#context.logger.info(
        { senderId: lane.senderId, expired: recorded },
        'messages of a held sender expired',
      )
    }
    return recorded
  }

  async #record(lane: SenderLane, data: MessageJob): Promise<void> {
    const { metrics } = this.#context
    // The claim settles a race with a cancel, as for a delivery: a cancel that got it first wins.
    const holder = await takeClaim(this.#claims, this.#context.config.QUEUE_PREFIX, data)
    const attempts = data.priorAttempts ?? 0
    if (holder === 'cancel') {
      await this.#recorder.record(deliveryOutcome(data, lane, 'canceled', { attempts }))
      metrics?.canceled(lane.senderId)
      return
    }
    await this.#recorder.record(
      deliveryOutcome(data, lane, 'expired', { attempts, ...expiredFields(data.expiresAt) }),
    )
    metrics?.expired(lane.senderId)
    if (data.fallback) {
      const { db, logger } = this.#context
      const deps = { sql: db.$client as Sql, sms: this.#sms, clock: () => new Date(), log: logger }
      await fallBackFromJob(deps, data, EXPIRED_RULE)
    }
  }

  stop(): Promise<void> {
    return this.#every.stop()
  }
}
