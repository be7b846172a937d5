import { findLoggedSent, findPlatformMessageId } from '@dispatch/db'
import type { Disposition, MessageDelivery } from './types.ts'

const alreadySent = (platformMessageId: string): Disposition => ({
  kind: 'done',
  result: { platformMessageId },
})

/** Recorded in Postgres by an earlier run. */
async function recordedSend({ data, deps, log }: MessageDelivery): Promise<Disposition | undefined> {
  const recorded = await findPlatformMessageId(deps.db, data.messageId)
  if (!recorded) return undefined
  log.info({ platformMessageId: recorded }, 'message already sent; not sending again')
  return alreadySent(recorded)
}

/** Sent by an earlier run killed after logging it, its row not yet written: written now. */
async function loggedSend({ data, deps, log }: MessageDelivery): Promise<Disposition | undefined> {
  if (!deps.sentLog) return undefined
  const logged = await findLoggedSent(deps.claims, deps.sentLog.stream, data.messageId)
  if (!logged?.platformMessageId) return undefined
  await deps.recorder.record(logged)
  log.info({ platformMessageId: logged.platformMessageId }, 'message already sent; not sending again')
  return alreadySent(logged.platformMessageId)
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
