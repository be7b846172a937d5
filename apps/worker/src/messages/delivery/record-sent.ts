import type { DeliveryOutcome } from '@dispatch/db'
import type { LoggedEntry } from '../delivery-recorder.ts'
import { logSent } from '../sent-log.ts'
import type { Sent } from './platform-send.ts'
import type { Disposition, MessageDelivery } from './types.ts'

/** The message's sent outcome could not be recorded (no sent log): the job keeps the platform id. */
export class UnrecordedSendError extends Error {
  readonly sent: { platformMessageId: string; fallbackUsed: boolean }
  constructor(cause: unknown, sent: { platformMessageId: string; fallbackUsed: boolean }) {
    super((cause as Error)?.message ?? String(cause), { cause })
    this.sent = sent
  }
}

const countSent = ({ data, lane, deps }: MessageDelivery) =>
  deps.metrics?.sent(lane.senderId, data.sendAt ?? data.acceptedAt)

/**
 * Through the sender's sent log: appended now, its row written after the job completes. A message's
 * own job appends on the connection BullMQ completes it on, not awaited: Redis runs it before the
 * completion, so a completed job's outcome is in the log (or Postgres) at no extra round trip. A
 * bundle's go through `append`, whose entries the bundle waits for (bundle.ts).
 */
function recordThroughSentLog(
  delivery: MessageDelivery,
  sentLog: NonNullable<MessageDelivery['deps']['sentLog']>,
  sent: DeliveryOutcome,
  after: Promise<void> | undefined,
): { recorded: Promise<void>; logged: Promise<LoggedEntry> } {
  const { deps, log } = delivery
  const appended = sentLog.append ? sentLog.append(sent) : logSent(sentLog.redis, sentLog.stream, sent)
  // Logged once what must come first (its fallback's hold) is written too: both in flight at once.
  const logged = after ? Promise.all([appended, after]).then(([entry]) => entry) : appended
  // Counted once the outcome is in the log: a process killed before that counts nothing it loses.
  logged.then(
    () => countSent(delivery),
    (error) =>
      log.error(
        { err: error, platformMessageId: sent.platformMessageId },
        'sent outcome not logged in Redis',
      ),
  )
  const recorded = deps.recorder.recordLogged(sent, logged)
  recorded.catch(() => {})
  return { recorded, logged }
}

/** Without a sent log: the row written now, the job waiting for it; a failure keeps the id on the job. */
async function recordNow(
  delivery: MessageDelivery,
  outcome: DeliveryOutcome,
  sent: Sent,
  after: Promise<void> | undefined,
): Promise<void> {
  const { platformMessageId, fallbackUsed } = sent
  await after
  try {
    await delivery.deps.recorder.record(outcome)
  } catch (error) {
    delivery.log.error(
      { err: error, platformMessageId },
      'message sent but its record failed; retrying the record',
    )
    throw new UnrecordedSendError(error, { platformMessageId, fallbackUsed })
  }
  countSent(delivery)
}

const sentDisposition = (
  delivery: MessageDelivery,
  { platformMessageId, fallbackUsed }: Sent,
  written: { recorded?: Promise<void>; logged?: Promise<LoggedEntry> } = {},
): Disposition => {
  delivery.log.debug({ platformMessageId, attempts: delivery.attempts, fallbackUsed }, 'message sent')
  return {
    kind: 'done',
    result: fallbackUsed ? { platformMessageId, fallbackUsed: true } : { platformMessageId },
    ...written,
  }
}

/**
 * Step 5: the sent outcome recorded, through the sender's sent log when there is one, else written
 * now. Not async on the hot path (the sent log's): the pipeline answers without waiting on a write.
 * `after`: written before the record (a fallback's timer or hold), which waits for it.
 */
export function recordSent(
  delivery: MessageDelivery,
  sent: Sent,
  after?: Promise<void>,
): Disposition | Promise<Disposition> {
  const { platformMessageId, fallbackUsed } = sent
  const outcome = delivery.outcome('sent', { platformMessageId, fallbackUsed })
  const { sentLog } = delivery.deps
  if (sentLog) return sentDisposition(delivery, sent, recordThroughSentLog(delivery, sentLog, outcome, after))
  return recordNow(delivery, outcome, sent, after).then(() => sentDisposition(delivery, sent))
}
