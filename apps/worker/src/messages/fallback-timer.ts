import { type MessageJob, QueueNames, SmsFallbackTimerJob } from '@dispatch/contracts'
import { findRecordedDelivery, type Sql } from '@dispatch/db'
import { queuePrefix } from '@dispatch/runtime'
import type { RedisClient } from '@dispatch/runtime/redis'
import { type Job, Queue, UnrecoverableError, Worker } from 'bullmq'
import { Compile } from 'typebox/compile'
import type { SmsProvider } from '../platforms/sms/types.ts'
import type { WorkerContext } from '../runtime.ts'
import { type SmsFallbackOutcome, sendSmsFallback } from './sms-fallback.ts'

const isTimerJob = Compile(SmsFallbackTimerJob)

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

/**
 * Arms the "no `delivered` within `afterSeconds`" timers: one delayed BullMQ job per message, id the
 * message's, so arming again (a job run again after a kill between its send and this) adds nothing.
 * In Redis like the message's job, it outlives any worker; only it holds the SMS's text.
 */
export class SmsFallbackTimers {
  readonly #queue: Queue<SmsFallbackTimerJob>

  constructor(connection: RedisClient, prefix: string) {
    this.#queue = new Queue<SmsFallbackTimerJob>(QueueNames.smsFallbackTimers, { connection, prefix })
  }

  /** The timer of a message WhatsApp took, when its fallback asks for one and it has a number to text. */
  async arm(data: MessageJob, sentAt: Date): Promise<boolean> {
    const afterSeconds = data.fallback?.afterSeconds
    const to = data.message.body.phone
    if (afterSeconds === undefined || data.fallback === undefined || to === undefined) return false
    const job: SmsFallbackTimerJob = {
      messageId: data.messageId,
      acceptedAt: data.acceptedAt,
      to,
      text: data.fallback.sms.text,
      sentAt: sentAt.toISOString(),
    }
    const delay = Math.max(0, sentAt.getTime() + afterSeconds * 1000 - Date.now())
    await this.#queue.add('not-delivered-in-time', job, {
      jobId: data.messageId,
      delay,
      attempts: RECORD_LAG_ATTEMPTS,
      backoff: { type: 'fixed', delay: RECORD_LAG_RETRY_MS },
      ...KEPT,
    })
    return true
  }

  close(): Promise<void> {
    return this.#queue.close()
  }
}

/** The message is not recorded sent yet: its timer runs again later. */
class RecordLagging extends Error {}

/**
 * A timer that fired: the fallback's steps (sms-fallback.ts) under the rule "no `delivered` in
 * time": decided only while the message is `sent` (or `failed`, a status webhook's), never once
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
  const outcome = await sendSmsFallback(
    { sql: deps.sql, sms: deps.sms, clock: () => new Date(), log: deps.log },
    {
      messageId,
      acceptedAt: new Date(acceptedAt),
      to,
      text,
      reason: 'not_delivered_in_time',
      fromStatuses: ['sent', 'failed'],
    },
  )
  if (outcome === 'refused') {
    const recorded = await findRecordedDelivery(deps.db, messageId)
    if (recorded && NOT_YET_RECORDED.has(recorded.status)) {
      throw new RecordLagging(`The message is recorded ${recorded.status}, not yet sent; trying later`)
    }
  }
  return outcome
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
    (job) => fireSmsFallbackTimer(deps, job),
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
