import {
  QueueNames,
  SmsFallbackTimerJob,
  smsFallbackHoldKey,
  UNDELIVERABLE_CODE,
  UNDELIVERABLE_HOLD_SECONDS,
} from '@dispatch/contracts'
import { type Db, findRecordedDelivery, findUndeliverableSms } from '@dispatch/db'
import { hasHashTag, queuePrefix } from '@dispatch/runtime'
import type { RedisClient } from '@dispatch/runtime/redis'
import { Job, Queue } from 'bullmq'
import { Compile } from 'typebox/compile'
import type { ApiDeps } from '../../deps.ts'

const isTimerJob = Compile(SmsFallbackTimerJob)

/** As the worker's timers (fallback-timer.ts): tried again while the record lags, kept a week if failed. */
const TIMER_JOB_OPTIONS = {
  attempts: 8,
  backoff: { type: 'fixed' as const, delay: 15_000 },
  removeOnComplete: true,
  removeOnFail: { age: 7 * 86_400, count: 100_000 },
}

/**
 * The channel fallback of a message WhatsApp reports undeliverable (131026) in a status webhook
 * (docs/fallback.md, "The timer"). A message carrying a fallback left, when WhatsApp took it
 * (the worker writes it no later than its send's record, so before any status can move it), a
 * timer in the `sms-fallback-timers` queue (`afterSeconds`), or its SMS in its sent record, or (its
 * content discarded) a 131026 hold, a Redis string. Once the `failed` is committed, the timer is
 * promoted, or the record's SMS or the hold becomes a timer due now (the hold then deleted): a
 * worker runs it and, finding the message `failed` with 131026, takes the
 * fallback's steps (decided with the message's row locked, `calling` committed before the provider
 * is called). The webhook itself never calls the SMS provider. A message without a fallback has
 * neither: nothing happens.
 */
export class UndeliverableFallbacks {
  readonly #queue: Queue
  readonly #redis: RedisClient
  readonly #prefix: string
  readonly #db: Db

  constructor(deps: Pick<ApiDeps, 'config' | 'redisQueues' | 'logger' | 'db'>) {
    const name = QueueNames.smsFallbackTimers
    this.#db = deps.db
    this.#prefix = queuePrefix(deps.config, name)
    this.#redis = deps.redisQueues
    this.#queue = new Queue(name, { connection: deps.redisQueues, prefix: this.#prefix })
    this.#queue.on('error', (error) => deps.logger.warn({ err: error }, 'sms fallback timers queue error'))
  }

  /** Runs the message's fallback timer now: true when one was waiting (a duplicate status finds none). */
  async promote(messageId: string): Promise<boolean> {
    const job = await Job.fromId(this.#queue, messageId)
    if (job) {
      if (!(await job.isDelayed())) return false
      try {
        await job.promote()
        return true
      } catch (error) {
        // Promoted or run meanwhile (two deliveries of the status at once): it runs once either way.
        if (await job.isDelayed()) throw error
        return false
      }
    }
    const holdKey = smsFallbackHoldKey(this.#prefix, messageId)
    const held = await this.#redis.get(holdKey)
    if (held === null) return this.#fromRecord(messageId)
    const data: unknown = JSON.parse(held)
    if (!isTimerJob.Check(data) || data.messageId !== messageId) return false
    // Its id is the message's: a second status turning the same hold into a timer adds nothing.
    await this.#queue.add('undeliverable', data, { jobId: messageId, ...TIMER_JOB_OPTIONS })
    await this.#redis.del(holdKey)
    return true
  }

  /**
   * The SMS its sent record keeps (a fallback without `afterSeconds`, whose content may be stored):
   * a timer due now, as a hold would have made. None once a fallback was decided, WhatsApp reported
   * it delivered, its content was redacted or erased, or it was sent more than a day ago.
   */
  async #fromRecord(messageId: string): Promise<boolean> {
    const since = new Date(Date.now() - UNDELIVERABLE_HOLD_SECONDS * 1000)
    const kept = await findUndeliverableSms(this.#db, messageId, since)
    if (!kept) return false
    const data: SmsFallbackTimerJob = {
      messageId,
      acceptedAt: kept.acceptedAt.toISOString(),
      to: kept.to,
      text: kept.text,
      sentAt: kept.sentAt.toISOString(),
      undeliverableOnly: true,
    }
    // Its id is the message's: a duplicate status adds nothing while it waits or runs.
    await this.#queue.add('undeliverable', data, { jobId: messageId, ...TIMER_JOB_OPTIONS })
    return true
  }

  close(): Promise<void> {
    return this.#queue.close()
  }
}

/**
 * Lets go of the 131026 holds of messages WhatsApp reported delivered or read: a message it
 * delivered is never undeliverable, so its hold (a day otherwise) would only wait in Redis. One
 * `DEL` for a webhook's messages; on a Cluster one per message unless the timers' prefix has a
 * {…} hash tag. A message without a fallback has no hold: its key is simply absent.
 */
export async function releaseUndeliverableHolds(
  deps: Pick<ApiDeps, 'config' | 'redisQueues'>,
  messageIds: readonly string[],
): Promise<void> {
  if (messageIds.length === 0) return
  const prefix = queuePrefix(deps.config, QueueNames.smsFallbackTimers)
  const redis = deps.redisQueues
  const keys = messageIds.map((id) => smsFallbackHoldKey(prefix, id))
  if (redis.isCluster && !hasHashTag(prefix)) await Promise.all(keys.map((key) => redis.del(key)))
  else await redis.del(...keys)
}

/** A duplicate 131026 status (it moved nothing): the message it names, when it is recorded so. */
export async function recordedUndeliverable(
  db: Db,
  messageId: string | undefined,
): Promise<string | undefined> {
  if (!messageId) return undefined
  const recorded = await findRecordedDelivery(db, messageId)
  return recorded?.status === 'failed' && recorded.lastErrorCode === UNDELIVERABLE_CODE
    ? messageId
    : undefined
}
