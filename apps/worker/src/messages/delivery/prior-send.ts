import { findLoggedSent, findRecordedDelivery } from '@dispatch/db'
import { FINAL_OUTCOMES, fairKeys } from '@dispatch/runtime/message-handoff'
import { fallBackAfterExpiry, fallBackAfterUndeliverableRecorded } from './fallback-triggers.ts'
import type { Disposition, MessageDelivery } from './types.ts'

const alreadySent = (platformMessageId: string): Disposition => ({
  kind: 'done',
  result: { platformMessageId },
})

/**
 * Recorded in Postgres by an earlier run: sent (its platform id), or ended without a send
 * (`canceled`, `expired`, `failed`). Once its final outcome is recorded a message's claim is
 * released (message-claims.ts), so a job that follows finds the record, not the claim.
 */
async function recordedSend(delivery: MessageDelivery): Promise<Disposition | undefined> {
  const { data, deps, log } = delivery
  const recorded = await findRecordedDelivery(deps.db, data.messageId)
  if (!recorded) return undefined
  // Ended: the claim this run took again on its way goes as the first run's went.
  if (recorded.platformMessageId || FINAL_OUTCOMES.has(recorded.status)) {
    void deps.recorder.releaseClaims([data.messageId])
  }
  if (recorded.platformMessageId) {
    log.info({ platformMessageId: recorded.platformMessageId }, 'message already sent; not sending again')
    return alreadySent(recorded.platformMessageId)
  }
  if (recorded.status === 'canceled' || recorded.status === 'expired') {
    log.info({ status: recorded.status }, 'message already ended; not sending it')
    // A run killed between recording `expired` and its fallback: the steps taken again (once).
    if (recorded.status === 'expired') await fallBackAfterExpiry(delivery)
    return { kind: 'done', result: { outcome: recorded.status } }
  }
  if (recorded.status === 'failed') {
    log.info('message already failed; not sending it again')
    // A run killed between recording 131026's `failed` and its fallback's decision: the steps
    // taken again; the record lets one run call, so never an SMS twice.
    await fallBackAfterUndeliverableRecorded(delivery, recorded.lastErrorCode)
    return { kind: 'failed', reason: 'The message already failed; an admin retry sends it again' }
  }
  return undefined
}

/**
 * Sent by an earlier run killed after logging it, its row not yet written: written now. A message
 * moved off a fallen pool number (`senderChanged`) is looked for in that number's log too, where a
 * run of the job it left would have logged it.
 */
async function loggedSend({ data, deps, log }: MessageDelivery): Promise<Disposition | undefined> {
  if (!deps.sentLog) return undefined
  const streams = [deps.sentLog.stream]
  const left = data.senderChanged?.from
  if (left !== undefined) streams.push(fairKeys(deps.prefix, left).sentLog)
  for (const stream of new Set(streams)) {
    const logged = await findLoggedSent(deps.claims, stream, data.messageId)
    if (!logged?.platformMessageId) continue
    await deps.recorder.record(logged)
    log.info({ platformMessageId: logged.platformMessageId }, 'message already sent; not sending again')
    return alreadySent(logged.platformMessageId)
  }
  return undefined
}

/** Sent by an earlier run whose record failed (the id kept on the job): recorded now. */
async function keptSend(delivery: MessageDelivery): Promise<Disposition | undefined> {
  const { data, run, deps, log } = delivery
  const sent = run.progress?.platformMessageId
  if (!sent) return undefined
  const fallbackUsed = run.progress?.fallbackUsed === true
  await deps.recorder.record(
    delivery.outcome('sent', { platformMessageId: sent, attempts: run.attemptsMade, fallbackUsed }),
  )
  deps.metrics?.sent(delivery.lane.senderId, data.sendAt ?? data.acceptedAt)
  log.info({ platformMessageId: sent }, 'message already sent; recorded it without sending again')
  return alreadySent(sent)
}

/**
 * Step 2, for a run that may follow an earlier one: a send that run made, found in Postgres, in the
 * sender's sent log or on the job, in that order. Once one is found the message is never sent again.
 */
export async function findPriorSend(delivery: MessageDelivery): Promise<Disposition | undefined> {
  return (await recordedSend(delivery)) ?? (await loggedSend(delivery)) ?? (await keptSend(delivery))
}
