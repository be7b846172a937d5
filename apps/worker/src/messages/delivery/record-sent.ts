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

/**
 * Step 5: the sent outcome recorded. Through the sender's sent log when there is one (its row
 * written after the job completes), else written now, the job waiting for it.
 */
export async function recordSent(
  delivery: MessageDelivery,
  { platformMessageId, fallbackUsed }: Sent,
): Promise<Disposition> {
  const { data, deps, log, lane } = delivery
  const sent = delivery.outcome('sent', { platformMessageId, fallbackUsed })
  const countSent = () => deps.metrics?.sent(lane.senderId, data.sendAt ?? data.acceptedAt)
  let recorded: Promise<void> | undefined
  let logged: Promise<LoggedEntry> | undefined
  if (deps.sentLog) {
    // A message's own job appends on the connection BullMQ completes it on, not awaited: Redis runs
    // it before the completion, so a completed job's outcome is in the log (or Postgres) at no extra
    // round trip. A bundle's go through `append`, whose entries the bundle waits for (bundle.ts).
    const { append } = deps.sentLog
    logged = append ? append(sent) : logSent(deps.sentLog.redis, deps.sentLog.stream, sent)
    // Counted once the outcome is in the log: a process killed before that counts nothing it loses.
    logged.then(countSent, (error) =>
      log.error({ err: error, platformMessageId }, 'sent outcome not logged in Redis'),
    )
    recorded = deps.recorder.recordLogged(sent, logged)
    recorded.catch(() => {})
  } else {
    try {
      await deps.recorder.record(sent)
    } catch (error) {
      log.error({ err: error, platformMessageId }, 'message sent but its record failed; retrying the record')
      throw new UnrecordedSendError(error, { platformMessageId, fallbackUsed })
    }
    countSent()
  }
  log.debug({ platformMessageId, attempts: delivery.attempts, fallbackUsed }, 'message sent')
  return {
    kind: 'done',
    result: fallbackUsed ? { platformMessageId, fallbackUsed: true } : { platformMessageId },
    ...(recorded ? { recorded } : {}),
    ...(logged ? { logged } : {}),
  }
}
