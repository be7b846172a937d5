import {
  type MessageJob,
  QueueNames,
  SmsFallbackTimerJob,
  smsFallbackHoldKey,
  UNDELIVERABLE_CODE,
  UNDELIVERABLE_HOLD_SECONDS,
} from '@dispatch/contracts'
import { findRecordedDelivery, type Sql } from '@dispatch/db'
import { hasHashTag, queuePrefix } from '@dispatch/runtime'
import { isOutage } from '@dispatch/runtime/outages'
import { type RedisClient, turnBatchedSet } from '@dispatch/runtime/redis'
import { DelayedError, Job, Queue, UnrecoverableError, Worker } from 'bullmq'
import { Compile } from 'typebox/compile'
import type { SmsProvider } from '../platforms/sms/types.ts'
import type { WorkerContext } from '../runtime.ts'
import { EXPIRED_RULE, type SmsFallbackOutcome, sendSmsFallback, UNDELIVERABLE_RULE } from './sms-fallback.ts'

const isTimerJob = Compile(SmsFallbackTimerJob)

/** A message's 131026 hold to write: its key and its JSON (what its timer would carry). */
type Hold = { key: string; value: string }

/** Statuses of a message not yet recorded sent (its sent log's write still on its way): try later. */
const NOT_YET_RECORDED = new Set(['scheduled', 'queued', 'sending'])
/** Its timer tries again this often, this many times, while the record lags behind WhatsApp. */
const RECORD_LAG_RETRY_MS = 15_000
const RECORD_LAG_ATTEMPTS = 8

/**
 * As a message's own job: gone once run (it holds the SMS's text, which nothing keeps after), kept
 * a week when it failed, for inspection.
 */
const KEPT = { removeOnComplete: true, removeOnFail: { age: 7 * 86_400, count: 100_000 } }
/** A timer's job options but its delay (the API's run of a 131026 hold takes the same). */
const TIMER_JOB_OPTIONS = {
  attempts: RECORD_LAG_ATTEMPTS,
  backoff: { type: 'fixed' as const, delay: RECORD_LAG_RETRY_MS },
  ...KEPT,
}

/**
 * A message's timer job (the SMS's text and number, from its job): none when it carries no fallback
 * or has no number to text (a BSUID alone).
 */
function timerJobOf(data: MessageJob, sentAt: Date): SmsFallbackTimerJob | undefined {
  const to = data.message.body.phone
  if (data.fallback === undefined || to === undefined) return undefined
  return {
    messageId: data.messageId,
    acceptedAt: data.acceptedAt,
    to,
    text: data.fallback.sms.text,
    sentAt: sentAt.toISOString(),
  }
}

/**
 * Arms the "no `delivered` within `afterSeconds`" timers: one delayed BullMQ job per message, id the
 * message's, so arming again (a job run again after a kill between its send and this) adds nothing.
 * In Redis like the message's job, it outlives any worker; only it holds the SMS's text.
 */
export class SmsFallbackTimers {
  readonly #queue: Queue<SmsFallbackTimerJob>
  readonly #redis: RedisClient
  readonly #prefix: string
  /** Writes a hold; rejects when it could not be written. */
  readonly #hold: (hold: Hold) => Promise<unknown>

  /**
   * `holds`: the connection the holds are written on; the lanes give their claims' one, which
   * auto-pipelines (a round trip of its own per message cost a fallback's delivery a sixth more CPU).
   */
  constructor(connection: RedisClient, prefix: string, holds: RedisClient = connection) {
    this.#queue = new Queue<SmsFallbackTimerJob>(QueueNames.smsFallbackTimers, { connection, prefix })
    this.#redis = holds
    this.#prefix = prefix
    // The holds of a turn of the event loop (a bundle's messages, and other jobs') in one call, not
    // a command each (`turnBatchedSet`); on a Cluster their keys share a slot only when the prefix
    // has a {…} hash tag, else a SET each. A call that fails fails every hold of its turn, each of
    // whose jobs then runs again (`unarmed`).
    const set = turnBatchedSet(holds, UNDELIVERABLE_HOLD_SECONDS * 1000, { oneSlot: hasHashTag(prefix) })
    this.#hold = (hold: Hold) => set(hold.key, hold.value)
  }

  /**
   * The timer of a message WhatsApp took, when it carries a fallback and has a number to text: a
   * delayed job due `afterSeconds` later; without one, its 131026 hold (one Redis string, kept
   * UNDELIVERABLE_HOLD_SECONDS: a job each would halve such messages' delivery throughput; written
   * with the turn's other holds in one call), which a 131026 status webhook turns into a timer run
   * at once. Answers once its timer or hold is in Redis; rejects when it could not be written.
   */
  async arm(data: MessageJob, sentAt: Date): Promise<boolean> {
    const afterSeconds = data.fallback?.afterSeconds
    const job = timerJobOf(data, sentAt)
    if (!job) return false
    if (afterSeconds === undefined) {
      await this.#hold({
        key: smsFallbackHoldKey(this.#prefix, data.messageId),
        value: JSON.stringify({ ...job, undeliverableOnly: true }),
      })
      return true
    }
    const delay = Math.max(0, sentAt.getTime() + afterSeconds * 1000 - Date.now())
    await this.#queue.add('not-delivered-in-time', job, {
      jobId: data.messageId,
      delay,
      ...TIMER_JOB_OPTIONS,
    })
    return true
  }

  /**
   * The steps of a fallback a message's job met (131026 at send time, `expired`) but could not take
   * (Postgres away), or never took (the job failed as stalled, `handOnStalled`): handed to a timer
   * due now, which holds the SMS's text, reads the record and takes them once Postgres answers
   * (`fireSmsFallbackTimer`). Its id is the message's: handed twice, added once.
   */
  async runNow(data: MessageJob): Promise<boolean> {
    const job = timerJobOf(data, new Date())
    if (!job) return false
    await this.#queue.add(
      'handed-on',
      { ...job, undeliverableOnly: true },
      { jobId: data.messageId, ...TIMER_JOB_OPTIONS },
    )
    return true
  }

  /**
   * A message's timer or hold armed late (its job run again after the arm failed, or after a kill),
   * when its record already says `failed` with 131026: a status webhook may have come before the
   * arm and found nothing to run, so the timer runs now (a delayed one promoted, else one added
   * due now) and the hold goes. Run after the arm, so that either this sees the `failed` or the
   * webhook, committing it later, finds the hold; both running it adds one timer.
   */
  async runIfUndeliverable(data: MessageJob, recorded: { status: string; lastErrorCode: string | null }) {
    if (recorded.status !== 'failed' || recorded.lastErrorCode !== UNDELIVERABLE_CODE) return false
    const job = await Job.fromId(this.#queue, data.messageId)
    if (job) {
      if (await job.isDelayed()) await job.promote().catch(() => {})
    } else {
      await this.runNow(data)
    }
    await this.#redis.del(smsFallbackHoldKey(this.#prefix, data.messageId))
    return true
  }

  close(): Promise<void> {
    return this.#queue.close()
  }
}

/** The message is not recorded sent yet: its timer runs again later. */
class RecordLagging extends Error {}

/**
 * A timer that ran: the fallback's steps (sms-fallback.ts). The message recorded `failed` with
 * 131026 (a status webhook's, which promoted the timer): the rule "undeliverable", whatever the
 * timer. Else, a hold sends nothing; an `afterSeconds` timer, the rule "no `delivered` in time":
 * decided only while the message is `sent` (or `failed`, a status webhook's), never once
 * `delivered` or `read` is committed. A message whose sent record has not reached Postgres yet is
 * tried again later, never sent blind.
 */
export async function fireSmsFallbackTimer(
  deps: { sql: Sql; db: WorkerContext['db']; sms: SmsProvider | undefined; log: WorkerContext['logger'] },
  job: Job<SmsFallbackTimerJob>,
): Promise<SmsFallbackOutcome> {
  if (!isTimerJob.Check(job.data)) {
    throw new UnrecoverableError('The job payload does not match the sms fallback timer contract')
  }
  const { messageId, acceptedAt, to, text } = job.data
  const steps = { sql: deps.sql, sms: deps.sms, clock: () => new Date(), log: deps.log }
  const request = { messageId, acceptedAt: new Date(acceptedAt), to, text }
  let recorded = await findRecordedDelivery(deps.db, messageId)
  if (recorded?.status === 'failed' && recorded.lastErrorCode === UNDELIVERABLE_CODE) {
    return sendSmsFallback(steps, { ...request, ...UNDELIVERABLE_RULE })
  }
  // Handed on by its job (runNow), which could not take the steps: expired before it went.
  if (recorded?.status === 'expired') return sendSmsFallback(steps, { ...request, ...EXPIRED_RULE })
  if (recorded && NOT_YET_RECORDED.has(recorded.status)) {
    throw new RecordLagging(`The message is recorded ${recorded.status}, not yet sent; trying later`)
  }
  if (job.data.undeliverableOnly) return 'refused'
  const outcome = await sendSmsFallback(steps, {
    ...request,
    reason: 'not_delivered_in_time',
    fromStatuses: ['sent', 'failed'],
  })
  if (outcome === 'refused') {
    recorded = await findRecordedDelivery(deps.db, messageId)
    if (recorded && NOT_YET_RECORDED.has(recorded.status)) {
      throw new RecordLagging(`The message is recorded ${recorded.status}, not yet sent; trying later`)
    }
  }
  return outcome
}

/** How long a timer waits for Postgres before it reads the record again. */
export const POSTGRES_WAIT_MS = 15_000

/**
 * A timer's run, which waits out Postgres away: its steps read and write the record before any
 * call, so a run that cannot reach Postgres sends nothing (never blind) and goes back, delayed,
 * without spending one of its tries, however long the outage; the record then lets one run call.
 */
export async function fireOrWait(
  deps: Parameters<typeof fireSmsFallbackTimer>[0],
  job: Job<SmsFallbackTimerJob>,
  token: string | undefined,
  waitMs = POSTGRES_WAIT_MS,
): Promise<SmsFallbackOutcome> {
  try {
    return await fireSmsFallbackTimer(deps, job)
  } catch (error) {
    if (!token || !isOutage(error)) throw error
    deps.log.warn(
      { err: error, messageId: job.data.messageId },
      'sms fallback waits for Postgres; nothing sent',
    )
    await job.moveToDelayed(Date.now() + waitMs, token)
    throw new DelayedError()
  }
}

/** The timers' consumer, in the `messages` role, beside the senders' lanes. */
export function startSmsFallbackTimerWorker(
  context: WorkerContext,
  sms: SmsProvider | undefined,
): Worker<SmsFallbackTimerJob> {
  const { config, logger, telemetry } = context
  const name = QueueNames.smsFallbackTimers
  const deps = { sql: context.db.$client as Sql, db: context.db, sms, log: logger }
  const worker = new Worker<SmsFallbackTimerJob, SmsFallbackOutcome>(
    name,
    (job, token) => fireOrWait(deps, job, token),
    {
      connection: context.redis('sms-fallback-timers', { blocking: true }),
      prefix: queuePrefix(config, name),
      // Each run may hold an SMS call for up to SMS_TIMEOUT_MS (its lock renewed meanwhile). A
      // process killed mid-run leaves its timer stalled, retaken as a message's job is.
      concurrency: config.MESSAGES_CONCURRENCY,
      lockDuration: config.MESSAGES_LOCK_MS,
      stalledInterval: config.MESSAGES_STALLED_INTERVAL_MS,
      ...(telemetry ? { telemetry } : {}),
    },
  )
  worker.on('error', (error) => logger.error({ err: error }, 'sms fallback timer worker error'))
  return worker
}
