import { MessageJob } from '@dispatch/contracts'
import { DelayedError, type Job, UnrecoverableError, Worker } from 'bullmq'
import { Compile } from 'typebox/compile'
import { PlatformError } from '../platforms/types.ts'
import { deliveryOutcome, smsKeptWithRecord } from '../shared/message-outcome.ts'
import { claimMessage } from './delivery/claim.ts'
import { armFallbackTimer, armLate, unarmed } from './delivery/fallback-triggers.ts'
import { type GateInputs, gate, readGateInputs } from './delivery/gates.ts'
import { sendToPlatform } from './delivery/platform-send.ts'
import { findPriorSend } from './delivery/prior-send.ts'
import { giveBackReach } from './delivery/reach-beside-claim.ts'
import { recordSent, UnrecordedSendError } from './delivery/record-sent.ts'
import type {
  Cleared,
  DeliveryDeps,
  DeliveryLane,
  DeliveryResult,
  DeliveryRun,
  Disposition,
  MessageDelivery,
} from './delivery/types.ts'
import { fromNewerVersion, NEWER_JOB_DELAY_MS } from './newer-job.ts'

const isMessageJob = Compile(MessageJob)
const MAX_BACKOFF_MS = 15 * 60_000

/** Exponential backoff with full jitter over the upper half: base·2^(n-1)·[0.5, 1), capped. */
export function platformBackoff(attemptsMade: number, baseMs: number, error?: Error): number {
  if (error instanceof PlatformError && error.retryAfterMs !== undefined) return error.retryAfterMs
  const ceiling = Math.min(MAX_BACKOFF_MS, baseMs * 2 ** Math.max(0, attemptsMade - 1))
  return Math.round(ceiling * (0.5 + Math.random() * 0.5))
}

/** What every step of one message's delivery reads: the job, the run, the lane, and its log line's fields. */
function openDelivery(
  data: MessageJob,
  run: DeliveryRun,
  lane: DeliveryLane,
  deps: DeliveryDeps,
): MessageDelivery {
  const attempts = run.attemptsMade + 1
  // A message an admin retried (or a bundle handed on) counts on from its earlier attempts.
  const priorAttempts = data.priorAttempts ?? 0
  // A fallback's SMS sent only on a 131026 rides with the sent record (no hold in Redis), when this
  // worker runs fallbacks at all.
  const smsFallbackText = deps.fallbackTimers ? smsKeptWithRecord(data) : undefined
  return {
    data,
    run,
    lane,
    deps,
    log: deps.logger.child({ messageId: data.messageId, type: data.message.type, senderId: lane.senderId }),
    attempts,
    smsFallbackText,
    outcome: (status, fields) =>
      deliveryOutcome(data, lane, status, {
        attempts: priorAttempts + attempts,
        ...(smsFallbackText !== undefined && status === 'sent' ? { smsFallbackText } : {}),
        ...fields,
      }),
  }
}

/**
 * Delivers one message of a job, and answers how it ended (deliverMessage below and bundle.ts turn
 * that into BullMQ's terms). Five steps, each in delivery/: claim the message, find a send an
 * earlier run made, pass the gates, send, record. A run that may follow an earlier one never sends a
 * message twice once it has a platform id.
 */
export async function deliverOne(
  data: MessageJob,
  run: DeliveryRun,
  lane: DeliveryLane,
  deps: DeliveryDeps,
): Promise<Disposition> {
  const delivery = openDelivery(data, run, lane, deps)
  // Read (and counted against the messaging limit) beside the claim, in the same turn: the gates
  // cost no round trip more.
  const reads = readGateInputs(delivery)
  const cleared = await clearToSend(delivery, reads)
  if (cleared.kind !== 'send') {
    // Not sent by this run: a recipient counted beside the claim is given back.
    await giveBackReach(delivery, reads.reach)
    // Sent by an earlier run (killed before its timer was armed, or Redis away then): armed now,
    // once (fallback-timer.ts); still not, the job goes again rather than complete.
    if (cleared.kind === 'done' && 'platformMessageId' in cleared.result && data.fallback) {
      if (!(await armLate(delivery))) return unarmed(cleared.result)
    }
    return cleared
  }
  const sent = await sendToPlatform(delivery, cleared)
  if (sent.kind !== 'sent') return sent
  // Without a fallback, or with its SMS in the sent record itself: nothing else to write.
  if (!data.fallback || delivery.smsFallbackText !== undefined) return recordSent(delivery, sent)
  // Its timer (or hold) goes out beside the sent outcome, not a round trip before it: the record
  // waits for both, so no status webhook finds the message before its hold, and so does the job.
  const armed = armFallbackTimer(delivery)
  const disposition = await recordSent(
    delivery,
    sent,
    armed.then(() => undefined),
  )
  // Not armed (Redis away): the send is recorded as any, but the job, which alone holds the SMS's
  // text, does not complete: it goes again and arms the timer then (fallback-triggers.ts).
  if (!(await armed)) return unarmed(sent)
  return disposition
}

/** The claim, a send an earlier run made, the gates: what may go to the platform, or why not. */
async function clearToSend(delivery: MessageDelivery, reads: GateInputs): Promise<Cleared | Disposition> {
  const claim = await claimMessage(delivery)
  if (claim.kind !== 'claimed') return claim
  // Only a run that may follow another looks: a new job's first run with a claim it just took has
  // nothing recorded yet (the hot path). A message handed out again by admission (`readmitted`) may
  // have been delivered by its first job, whose claim is gone once the record has it.
  const mayFollow = delivery.run.rerun || claim.heldBefore || delivery.data.readmitted === true
  const prior = mayFollow ? await findPriorSend(delivery) : undefined
  if (prior) return prior
  return gate(delivery, reads)
}

/**
 * A message's own job: one message, its retries BullMQ's (with the `platform` backoff), its pair
 * limit a delay of the job, a paused sender the job back in the queue.
 */
export async function deliverMessage(
  job: Job<MessageJob, DeliveryResult>,
  token: string | undefined,
  lane: DeliveryLane,
  deps: DeliveryDeps,
): Promise<DeliveryResult> {
  if (!isMessageJob.Check(job.data)) {
    if (fromNewerVersion(MessageJob, job.data)) {
      deps.logger.warn(
        { jobId: job.id },
        'message job carries fields this worker does not know (a newer version wrote it); left for a newer worker',
      )
      await job.moveToDelayed(Date.now() + NEWER_JOB_DELAY_MS, token)
      throw new DelayedError()
    }
    deps.logger.error({ jobId: job.id }, 'message job does not match its contract; failed without delivery')
    throw new UnrecoverableError('The job payload does not match the messages contract')
  }
  // Its number left its pool's rotation (RED, a 130429 streak past the tolerance…): moved first.
  if (mayMove(job.data, lane, deps) && (await handedOver(job, lane, deps))) return { outcome: 'elsewhere' }
  // Taken while this process knows the sender rate limited: back to the queue's front unsent, and
  // the worker waits out the pause. The limiter key is set to what is left of it first (another
  // process may have set a shorter one): the wait is the key's life, and a key gone would let the
  // worker take the job straight back.
  if (Date.now() < lane.limitedUntil && (await lane.holdForLimit())) throw Worker.RateLimitError()
  let disposition: Disposition
  try {
    disposition = await deliverOne(
      job.data,
      {
        claimAs: 'worker',
        takesOver: job.data.claimedBy,
        attemptsMade: job.attemptsMade,
        maxAttempts: job.opts.attempts ?? 1,
        rerun: job.attemptsMade > 0 || job.attemptsStarted > 1,
        progress: job.progress as DeliveryRun['progress'],
      },
      lane,
      deps,
    )
  } catch (error) {
    // Sent but not recorded: keep the id on the job in Redis, so the retry completes without sending.
    if (error instanceof UnrecordedSendError) await job.updateProgress(error.sent).catch(() => {})
    throw error
  }
  switch (disposition.kind) {
    case 'done':
      return disposition.result
    case 'failed':
      throw new UnrecoverableError(disposition.reason)
    case 'held':
      // Refused for the number (130429, 190): moved now if that took it out of rotation.
      if (mayMove(job.data, lane, deps) && (await handedOver(job, lane, deps)))
        return { outcome: 'elsewhere' }
      throw Worker.RateLimitError()
    case 'elsewhere':
      return { outcome: 'elsewhere' }
    case 'again':
      // Sent, its fallback not armed: the id kept on the job, its next run finds the send.
      if (disposition.sent) await job.updateProgress(disposition.sent).catch(() => {})
      if (disposition.spent || !token) throw disposition.error
      // Held (the messaging limit): the job says so, and the message shows `scheduled` until then.
      if (disposition.held) await job.updateData({ ...job.data, ...disposition.held })
      await job.moveToDelayed(Date.now() + (disposition.delayMs ?? 0), token)
      throw new DelayedError()
  }
}

/** It came through a pool whose rotation its number left (a Map read for a number in no pool). */
const mayMove = (data: MessageJob, lane: DeliveryLane, deps: DeliveryDeps) =>
  data.senderPoolId !== undefined && deps.rotation?.leftRotation(lane.senderId) === true

/**
 * A message's own job on a number out of its pool's rotation: the message handed to the pool mover
 * (pool-mover.ts), which moves it to a healthy member if it may move, with the attempts this job
 * spent on it. Never one this job may have sent: a send it kept unrecorded stays.
 */
async function handedOver(
  job: Job<MessageJob, DeliveryResult>,
  lane: DeliveryLane,
  deps: DeliveryDeps,
): Promise<boolean> {
  const { data } = job
  const { rotation } = deps
  if (!rotation) return false
  if ((job.progress as DeliveryRun['progress'])?.platformMessageId) return false
  const made = job.attemptsMade
  const message =
    made > 0
      ? {
          ...data,
          priorAttempts: (data.priorAttempts ?? 0) + made,
          attemptsSpent: (data.attemptsSpent ?? 0) + made,
        }
      : data
  const moved = await rotation.handOver(lane.senderId, [message], 'worker').catch((error) => {
    deps.logger.warn({ err: error, messageId: data.messageId }, 'message not handed off a fallen pool number')
    return new Set<string>()
  })
  return moved.has(data.messageId)
}
