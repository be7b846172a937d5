import type { MessageJob } from '@dispatch/contracts'
import { type Db, findRecordedDelivery } from '@dispatch/db'
import { fairKeys, type MessageBundleJob } from '@dispatch/runtime/message-handoff'
import { isOutage } from '@dispatch/runtime/outages'
import type { RedisClient } from '@dispatch/runtime/redis'
import { Job, type Queue } from 'bullmq'
import type { Logger } from 'pino'
import { Periodic } from '../shared/periodic.ts'
import { fallbackDue, messagesOfJob, STALLED_TOO_OFTEN } from './delivery/fallback-triggers.ts'
import type { SmsFallbackTimers } from './fallback-timer.ts'

/** The most failed jobs of one sender a pass reads (a failedReason each; only stalled ones more). */
const PER_PASS = 500
/**
 * How far behind its clock a pass reads: a job's place in the failed set is the failing worker's
 * clock, so a failure another worker (its clock a little behind) records meanwhile is not passed.
 */
const SETTLE_MS = 10_000

/** A sender's queue, as a pass reads it (a lane). */
export interface SweptSender {
  senderId: string
  queue: { get(): Promise<Queue<MessageJob>> }
}

/** Where a pass stopped: the failed set's score, and how many jobs of that score it read. */
type Cursor = { score: number; seen: number }

const parseCursor = (value: string | null): Cursor => {
  const [score, seen] = (value ?? '0:0').split(':').map(Number)
  return { score: score || 0, seen: seen || 0 }
}

/**
 * Hands on the SMS fallbacks of message jobs BullMQ failed as stalled whose process was killed
 * before its `failed` listener could (`handOnStalled`, docs/fallback.md, "Outages"): the job, kept
 * a week, is then the only holder of the SMS's text. Every SMS_STALLED_SWEEP_MS (and once at
 * start), each sender's failed set is read on from where the last pass stopped (a cursor in Redis,
 * shared by every worker, so a job is read about once), at most PER_PASS jobs a pass; of those
 * failed `job stalled more than allowable limit`, each message that carries a fallback and is
 * recorded `failed` with 131026 or `expired` is handed to its timer due now (`runNow`), as the
 * listener does. Handing twice (the listener ran after all, two workers at once, a cursor lost) is
 * harmless: the timer's id is the message's and the record decides once, so never two SMS.
 * Postgres or Redis away, the pass stops where it was and the next one goes on from there.
 */
export class StalledFallbackSweeper {
  readonly #db: Db
  readonly #redis: RedisClient
  readonly #timers: Pick<SmsFallbackTimers, 'runNow'>
  readonly #prefix: string
  readonly #log: Logger
  readonly #senders: () => Iterable<SweptSender>
  readonly #every: Periodic

  constructor(
    deps: {
      db: Db
      /** The connection the senders' queues are on. */
      redis: RedisClient
      timers: Pick<SmsFallbackTimers, 'runNow'>
      prefix: string
      log: Logger
    },
    senders: () => Iterable<SweptSender>,
    options: { everyMs: number },
  ) {
    this.#db = deps.db
    this.#redis = deps.redis
    this.#timers = deps.timers
    this.#prefix = deps.prefix
    this.#log = deps.log
    this.#senders = senders
    this.#every = new Periodic(
      () => this.sweep(),
      options.everyMs,
      (error) => deps.log.warn({ err: error }, 'sweep of stalled jobs’ sms fallbacks failed; trying again'),
      0,
    )
  }

  start(): void {
    this.#every.start()
  }

  /** One pass over every sender of this process: the ids of the messages handed to a timer. */
  async sweep(now = Date.now()): Promise<string[]> {
    const handed: string[] = []
    let failure: unknown
    for (const sender of [...this.#senders()]) {
      if (this.#every.stopped) break
      try {
        handed.push(...(await this.#sweepSender(sender, now - SETTLE_MS)))
      } catch (error) {
        failure ??= error
      }
    }
    if (failure) throw failure
    return handed
  }

  async #sweepSender(sender: SweptSender, until: number): Promise<string[]> {
    const queue = await sender.queue.get()
    const redis = this.#redis
    const cursorKey = fairKeys(this.#prefix, sender.senderId).stalledSwept
    const start = parseCursor(await redis.get(cursorKey))
    const page = await redis.zrangebyscore(
      queue.keys.failed as string,
      start.score,
      until,
      'WITHSCORES',
      'LIMIT',
      start.seen,
      PER_PASS,
    )
    if (page.length === 0) return []
    const ids = page.filter((_, i) => i % 2 === 0)
    const reasons = await Promise.all(ids.map((id) => redis.hget(queue.toKey(id), 'failedReason')))
    const handed: string[] = []
    let cursor = start
    let failure: unknown
    for (const [i, id] of ids.entries()) {
      if (this.#every.stopped) break
      try {
        if (reasons[i] === STALLED_TOO_OFTEN) handed.push(...(await this.#handOn(queue, id)))
      } catch (error) {
        // Postgres or Redis away: this job is read again by the next pass.
        if (isOutage(error)) {
          failure = error
          break
        }
        // Anything else would fail it at every pass and hold up the jobs behind it.
        this.#log.error(
          { err: error, senderId: sender.senderId, jobId: id },
          'stalled message job not read; its sms fallback not handed on',
        )
      }
      const score = Number(page[i * 2 + 1])
      cursor = score === cursor.score ? { score, seen: cursor.seen + 1 } : { score, seen: 1 }
    }
    if (cursor !== start) await redis.set(cursorKey, `${cursor.score}:${cursor.seen}`)
    if (failure) throw failure
    return handed
  }

  /** A job failed as stalled: its messages whose fallback is due, handed to their timers. */
  async #handOn(queue: Queue<MessageJob>, id: string): Promise<string[]> {
    // Gone meanwhile (an erasure, its week over): nothing holds its text any more.
    const job = await Job.fromId<MessageJob | MessageBundleJob>(queue as Queue, id)
    if (!job) return []
    const handed: string[] = []
    for (const data of messagesOfJob(job)) {
      if (!data?.fallback) continue
      // Unread, it throws: the pass waits for Postgres rather than hand on a message sent meanwhile.
      if (!fallbackDue(await findRecordedDelivery(this.#db, data.messageId))) continue
      if (await this.#timers.runNow(data)) {
        handed.push(data.messageId)
        this.#log.warn(
          { messageId: data.messageId, jobId: id },
          'message job failed as stalled; its sms fallback handed to a timer by the sweep',
        )
      }
    }
    return handed
  }

  stop(): Promise<void> {
    return this.#every.stop()
  }
}
