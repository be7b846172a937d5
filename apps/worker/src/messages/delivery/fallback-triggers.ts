import { type MessageJob, UNDELIVERABLE_CODE } from '@dispatch/contracts'
import { type Db, findRecordedDelivery, type Sql } from '@dispatch/db'
import { MESSAGE_BUNDLE_JOB_NAME, type MessageBundleJob } from '@dispatch/runtime/message-handoff'
import type { Job } from 'bullmq'
import type { Logger } from 'pino'
import type { SmsFallbackTimers } from '../fallback-timer.ts'
import { EXPIRED_RULE, fallBackFromJob, UNDELIVERABLE_RULE } from '../sms-fallback.ts'
import type { Disposition, MessageDelivery } from './types.ts'

/** How long a job whose timer could not be armed (Redis away) waits before it tries again. */
export const ARM_RETRY_MS = 5_000

/** The fallback's timer or hold could not be written: the job keeps the SMS's text and runs again. */
export class FallbackUnarmedError extends Error {
  override name = 'FallbackUnarmedError'
}

/**
 * A message WhatsApp took that carries a fallback: its timer armed (fallback-timer.ts) before the
 * job completes, so a process killed before this leaves the job to run again, find its send and
 * arm it then: "no `delivered` in time" with `afterSeconds`, else a hold that a 131026 reported
 * later by a status webhook runs (on the delivery path, only for a message whose content is
 * discarded: any other's sent record keeps its SMS, `smsKeptWithRecord`). Nothing for any other
 * message. False: it could not be written (Redis away); the job must not complete then, since it
 * alone holds the SMS's text (see `unarmed`).
 */
export async function armFallbackTimer({ data, deps, log }: MessageDelivery): Promise<boolean> {
  if (data.fallback === undefined || !deps.fallbackTimers) return true
  try {
    await deps.fallbackTimers.arm(data, new Date())
    return true
  } catch (error) {
    log.error({ err: error }, 'sms fallback timer not armed; the job runs again to arm it')
    return false
  }
}

/**
 * The timer of a message an earlier run sent, armed by this one (that run was killed, or could not
 * arm it): armed now, then run at once if the record already says 131026 (a status webhook that
 * came meanwhile found nothing to run). False: not armed (Redis away), see `unarmed`.
 */
export async function armLate(delivery: MessageDelivery): Promise<boolean> {
  if (!(await armFallbackTimer(delivery))) return false
  const { data, deps, log } = delivery
  try {
    const recorded = await findRecordedDelivery(deps.db, data.messageId)
    if (recorded && (await deps.fallbackTimers?.runIfUndeliverable(data, recorded))) {
      log.info('sms fallback armed after a 131026 was recorded; run now')
    }
    return true
  } catch (error) {
    log.error({ err: error }, 'sms fallback armed late, its record not read; the job runs again')
    return false
  }
}

/**
 * A message sent (or found sent) whose timer could not be armed: instead of completing, its job
 * goes again in ARM_RETRY_MS, unspent, the platform id kept on it. The run that follows finds the
 * send (never sends again) and arms the timer then; Redis away for longer, the job's lock lapses and
 * it is retaken as stalled, with the same outcome. The send's record goes on as it would.
 */
export function unarmed(sent: {
  platformMessageId: string
  fallbackUsed?: boolean | undefined
}): Disposition {
  return {
    kind: 'again',
    error: new FallbackUnarmedError('The SMS fallback timer could not be armed (Redis away)'),
    spent: false,
    delayMs: ARM_RETRY_MS,
    sent: { platformMessageId: sent.platformMessageId, fallbackUsed: sent.fallbackUsed === true },
  }
}

/** Where a job's fallback steps that could not be taken go on: its timer due now (fallback-timer.ts). */
export const handOn = (deps: MessageDelivery['deps']) => {
  const timers = deps.fallbackTimers
  return timers ? (data: MessageJob) => timers.runNow(data) : undefined
}

/** Its validity ended before it went, recorded `expired`: its `fallback.sms` goes instead. */
export async function fallBackAfterExpiry({ data, deps, log }: MessageDelivery): Promise<void> {
  if (!data.fallback) return
  const sql = deps.db.$client as Sql
  const steps = { sql, sms: deps.sms, clock: () => new Date(), log, handOn: handOn(deps) }
  await fallBackFromJob(steps, data, EXPIRED_RULE)
}

/**
 * Found recorded `failed` by a run that follows (the one that recorded it was killed before its
 * fallback was decided, failed-send.ts): with 131026 and a `fallback.sms`, the steps taken now. A
 * fallback already decided or settled by that run is left as it is (`decideFallback`,
 * `beginFallbackCall`). Nothing for a message without a fallback or failed otherwise.
 */
export async function fallBackAfterUndeliverableRecorded(
  { data, deps, log }: MessageDelivery,
  lastErrorCode: string | null,
): Promise<void> {
  if (!data.fallback || lastErrorCode !== UNDELIVERABLE_CODE) return
  const sql = deps.db.$client as Sql
  const steps = { sql, sms: deps.sms, clock: () => new Date(), log, handOn: handOn(deps) }
  await fallBackFromJob(steps, data, UNDELIVERABLE_RULE)
}

/**
 * BullMQ's reason for a job that stalled more often than its worker's `maxStalledCount` (1) allows:
 * moved back to the queue marked so, and failed, unrun, by the next worker that takes it.
 */
export const STALLED_TOO_OFTEN = 'job stalled more than allowable limit'

/** Whether a message's record says a rule its job met falls back: `failed` with 131026, or `expired`. */
export function fallbackDue(recorded: { status: string; lastErrorCode: string | null } | undefined) {
  if (recorded?.status === 'failed') return recorded.lastErrorCode === UNDELIVERABLE_CODE
  return recorded !== undefined && EXPIRED_RULE.fromStatuses.includes(recorded.status)
}

/**
 * Whether the record says a rule a job meets falls back. Unread (Postgres away), it may: the timer
 * waits for Postgres and reads it then.
 */
async function fallbackMayBeDue(db: Db, messageId: string, log: Logger) {
  try {
    return fallbackDue(await findRecordedDelivery(db, messageId))
  } catch (error) {
    log.warn({ err: error, messageId }, 'stalled message job: its record not read; its fallback handed on')
    return true
  }
}

/** The messages a message job carries: a bundle's, or its own. */
export function messagesOfJob(job: Job<MessageJob | MessageBundleJob>): MessageJob[] {
  return job.name === MESSAGE_BUNDLE_JOB_NAME
    ? ((job.data as MessageBundleJob).messages ?? [])
    : [job.data as MessageJob]
}

/**
 * A message's job failed as stalled (its process killed, or frozen past its lock, twice) runs no
 * step again, so a fallback its runs met but had not decided (131026 or `expired` recorded, then the
 * kill) would never be, and only the job holds the SMS's text. Each of its messages that carries a
 * fallback (a bundle's too) and is recorded so is handed to a timer due now, as steps that could
 * not be taken are (`runNow`): the timer reads the record again and takes the steps, so a fallback
 * decided or settled before is left as it is (never an SMS twice). A message recorded otherwise
 * gets nothing: a `sent` one keeps its own timer, hold or record's SMS, which a timer of its id
 * added now could shadow from a 131026 webhook. Only on such a failure: nothing on the delivery path. A process
 * killed before this ran leaves the job to the sweep of stalled jobs (stalled-fallback-sweep.ts).
 */
export async function handOnStalled(
  deps: { timers: Pick<SmsFallbackTimers, 'runNow'>; db: Db; log: Logger },
  job: Job<MessageJob | MessageBundleJob> | undefined,
  error: Error,
): Promise<void> {
  if (!job || error.message !== STALLED_TOO_OFTEN) return
  const { timers, db, log } = deps
  for (const data of messagesOfJob(job)) {
    if (!data?.fallback || !(await fallbackMayBeDue(db, data.messageId, log))) continue
    try {
      if (await timers.runNow(data)) {
        log.warn(
          { messageId: data.messageId },
          'message job failed as stalled; its sms fallback handed to a timer',
        )
      }
    } catch (caught) {
      // Redis away: the failed job, kept a week, still holds the text; the sweep hands it on later.
      log.error(
        { err: caught, messageId: data.messageId },
        'message job failed as stalled; its sms fallback not handed to a timer',
      )
    }
  }
}
