import { recipientOf, UNDELIVERABLE_CODE } from '@dispatch/contracts'
import type { Sql } from '@dispatch/db'
import type { PlatformError } from '../../platforms/types.ts'
import { MARKETING_STOPPED_CODE, recordMarketingStop } from '../consent/check.ts'
import { fallBackAfterUndeliverable } from '../sms-fallback.ts'
import { handOn } from './fallback-triggers.ts'
import type { Disposition, MessageDelivery } from './types.ts'

/** A retry's place in the sender's pace, taken without holding up the job (a lost one is one message early). */
function spendPace({ lane, log }: MessageDelivery): void {
  lane.spendPace().catch((error) => log.warn({ err: error }, "a retry not counted in the sender's pace"))
}

/**
 * The platform's rate limit: this sender's queue waits, every worker on it, in every process; other
 * senders go on. No attempt is spent.
 */
async function pauseSender({ lane, deps, log }: MessageDelivery, error: PlatformError): Promise<Disposition> {
  const { pauseMs, newPause } = await lane.rateLimit(error.retryAfterMs ?? 1000)
  // One line per pause, not one per job of the burst that met it.
  if (newPause) {
    log.warn({ code: error.code, pauseMs }, 'platform rate limit; pausing this sender')
    deps.metrics?.rateLimitPaused(lane.senderId)
  }
  return { kind: 'held' }
}

/** Only this recipient is over its pair rate: this message waits, the sender's others go on. */
function delayForRecipient(delivery: MessageDelivery, error: PlatformError): Disposition {
  spendPace(delivery)
  const delayMs = Math.round((error.retryAfterMs ?? 6000) * (1 + Math.random() * 0.5))
  delivery.log.info(
    { code: error.code, delayMs },
    'pair rate limit for this recipient; delaying this message',
  )
  return { kind: 'again', error, spent: false, delayMs }
}

/** The sender's token refused: back in the queue, which is paused; it waits (within its validity) for a fixed token. */
async function pauseForToken({ lane, log }: MessageDelivery, error: PlatformError): Promise<Disposition> {
  log.error({ alert: error.alert, code: error.code }, 'sender token refused; pausing this sender')
  await lane.tokenRefused(error)
  return { kind: 'held' }
}

/** An attempt spent: recorded `sending` to be tried again, or `failed` for good (permanent, or the last). */
async function failedAttempt(delivery: MessageDelivery, error: PlatformError): Promise<Disposition> {
  const { data, run, lane, deps, log, attempts } = delivery
  const { senderId } = lane
  if (error.alert) log.error({ alert: error.alert, code: error.code }, error.message)
  const final = error.kind === 'permanent' || attempts >= run.maxAttempts
  await deps.recorder.record(
    delivery.outcome(final ? 'failed' : 'sending', {
      lastErrorCode: error.code,
      lastErrorMessage: error.message,
    }),
  )
  if (final) deps.metrics?.failed(senderId, error.code)
  else {
    deps.metrics?.retried(senderId, error.code)
    spendPace(delivery)
  }
  if (error.code === MARKETING_STOPPED_CODE) {
    const entry = {
      phoneNumberId: lane.platform.phoneNumberId,
      senderId,
      recipient: recipientOf(data.message.body),
    }
    await recordMarketingStop(deps.db, deps.claims, deps.prefix, deps.hash, entry).catch((caught) =>
      log.warn({ err: caught }, '131050 not recorded as an opt-out'),
    )
  }
  log.warn({ code: error.code, kind: error.kind, attempts, final }, 'delivery attempt failed')
  if (final && error.code === UNDELIVERABLE_CODE && data.fallback) {
    const sql = deps.db.$client as Sql
    await fallBackAfterUndeliverable(
      { sql, sms: deps.sms, clock: () => new Date(), log, handOn: handOn(deps) },
      data,
    )
  }
  return final
    ? { kind: 'failed', reason: `${error.code}: ${error.message}` }
    : { kind: 'again', error, spent: true }
}

/** A platform call that failed: the sender paused, the message delayed, tried again, or failed. */
export function failedSend(
  delivery: MessageDelivery,
  error: PlatformError,
): Promise<Disposition> | Disposition {
  switch (error.kind) {
    case 'rate-limited':
      return pauseSender(delivery, error)
    case 'recipient-throttled':
      return delayForRecipient(delivery, error)
    case 'token-refused':
      return pauseForToken(delivery, error)
    default:
      return failedAttempt(delivery, error)
  }
}
