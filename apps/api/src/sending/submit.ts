import { DEFAULT_SENDER_ID, type MessageJob } from '@dispatch/contracts'
import { owned } from '@dispatch/db'
import { type AppError, unavailable } from '../errors.ts'
import { type AcceptedMessage, outstandingLimitReached, type SendingKey } from './accept.ts'
import type { Prefetched } from './checks/send-checks.ts'
import { type Judged, judge, type SendItem } from './judge.ts'
import type { Log } from './log.ts'
import type { StoreOutcome } from './message-store.ts'
import type { Sending } from './sending.ts'

/** What a submitted send comes to: stored (`accepted`), or the error that refused it. */
export type Submitted = { accepted: AcceptedMessage } | { error: AppError }

/**
 * The key's message rate and daily quota (plugins/message-rate-limit.ts), as the caller holds
 * them: `spend` counts the sends judged valid before they are stored (and throws its 429);
 * `giveBack` returns those the outstanding bound then refused. A caller that spent before judging
 * (a single send's route, so its 429 comes before a validation error) gives no `spend`, and gets
 * back what the checks refuse too.
 */
export interface MessageRate {
  spend?(count: number): Promise<void>
  giveBack(count: number): Promise<void>
}

export interface SubmitOptions {
  /** When the sends are accepted; the clock's now by default. */
  now?: Date
  /** The batch the sends belong to, carried on each job. */
  batchId?: string
  /** The checks' reads started early (`prefetchChecks`), for a single send. */
  prefetched?: Prefetched | undefined
  rate?: MessageRate
  /** The caller's logger (a request's); sending's own by default. */
  log?: Log
  /**
   * Each send's message id, given by the caller (a campaign assigns its rows' ids in Postgres
   * before storing them, so a second store after a crash is the same messages).
   */
  messageIds?: string[]
  /**
   * The messages may have been stored before under the same ids (a campaign's window stored again):
   * the worker reads each one's record before sending, so none goes twice.
   */
  again?: boolean
  /** Wait for room under the portfolio's messaging limit whatever the sender's policy (a campaign's). */
  holdAtLimit?: boolean
}

/**
 * Submits sends for a key: each judged (`judge`: its delivery options, quiet hours, then the
 * sender's templates, window and consent), those that pass counted against the key's rate and
 * stored for delivery, one answer per send in order. A send past the key's outstanding bound is
 * refused with `429 OUTSTANDING_LIMIT_REACHED`, its rate given back; when every send judged valid
 * is refused so, or the store cannot be reached (`503`), the submission throws as a whole.
 * Scheduled messages are also listed at once (best effort: else the worker lists them when due).
 * The send, batch routes and anything else that sends (a campaign, a test) call this.
 */
export async function submit(
  sending: Sending,
  key: SendingKey,
  sends: SendItem[],
  options: SubmitOptions = {},
): Promise<Submitted[]> {
  const now = options.now ?? sending.clock()
  const log = options.log ?? sending.log
  const { batchId } = options
  const judged: Judged[] = await judge(sending, key, sends, {
    now,
    batchId,
    prefetched: options.prefetched,
    messageIds: options.messageIds,
    holdAtLimit: options.holdAtLimit,
  })
  const valid = judged.flatMap((answer, i) => ('accepted' in answer ? [i] : []))
  // A caller that spent before judging gets back what the checks refused: a refused send spends
  // no quota (the per-second window keeps it: it measures the key's pace of asking). Not awaited:
  // the refusal answers at once, and a later read on the same connection comes after it.
  if (options.rate && !options.rate.spend && valid.length < sends.length)
    void options.rate.giveBack(sends.length - valid.length).catch(() => {})
  if (valid.length === 0) return judged
  await options.rate?.spend?.(valid.length)

  const accepted = valid.map((i) => (judged[i] as { accepted: AcceptedMessage }).accepted)
  if (options.again) for (const { job } of accepted) job.readmitted = true
  const [only] = accepted
  let outcomes: StoreOutcome[]
  try {
    // A lone send awaits its add alone: no Promise.all on the hot path.
    outcomes =
      accepted.length === 1 && only
        ? [await sending.messages.add(only.job, only.delayMs)]
        : await Promise.all(accepted.map(({ job, delayMs }) => sending.messages.add(job, delayMs)))
  } catch (error) {
    log.error(
      { err: error, ...(batchId ? { batchId } : { messageId: only?.job.messageId }) },
      batchId ? 'could not enqueue batch' : 'could not enqueue message',
    )
    throw unavailable('accept messages')
  }

  const max = sending.config.MESSAGE_OUTSTANDING_MAX
  const refused = valid.filter((_, n) => outcomes[n] === 'refused')
  if (refused.length > 0) {
    await options.rate?.giveBack(refused.length)
    if (refused.length === valid.length) throw outstandingLimitReached(max)
    for (const i of refused) judged[i] = { error: outstandingLimitReached(max, (sends[i] as SendItem).field) }
  }

  // A pooled send's recipient now sticks to the number chosen (pools/on-accept.ts): written once
  // stored, not awaited (the next send on this connection reads after it).
  const sticky = valid.flatMap((i) => {
    const answer = judged[i] as Submitted
    return 'accepted' in answer && answer.accepted.sticky ? [answer.accepted.sticky] : []
  })
  if (sticky.length > 0) {
    void sending.sticky.write(sticky, now.getTime()).catch((error) => {
      log.warn({ err: error, senderPoolId: key.senderPoolId }, 'sticky senders not written')
    })
  }

  const scheduled = valid.flatMap((i) => {
    const answer = judged[i] as Submitted
    return 'accepted' in answer && answer.accepted.status === 'scheduled' ? [answer.accepted.job] : []
  })
  if (scheduled.length > 0) await listScheduled(sending, key, scheduled, log, batchId)
  return judged
}

/** Best effort: the jobs are stored; without their rows the worker writes them when they are due. */
async function listScheduled(
  sending: Sending,
  key: SendingKey,
  jobs: MessageJob[],
  log: Log,
  batchId: string | undefined,
) {
  const caller = {
    apiKeyId: key.id,
    tenantId: key.tenantId ?? null,
    senderId: key.senderId ?? DEFAULT_SENDER_ID,
  }
  try {
    await owned(sending.db, caller).messages.recordScheduled(jobs)
  } catch (error) {
    if (batchId) log.warn({ err: error, batchId }, 'scheduled messages not listed until due')
    else log.warn({ err: error, messageId: jobs[0]?.messageId }, 'scheduled message not listed until due')
  }
}
