import {
  MessageJob,
  messageClaimKey,
  messageClaimTtlMs,
  type OutboundMessage,
  type RecipientHasher,
  recipientOf,
  redactAfter,
  redactPayload,
  type ServiceWindowPolicy,
} from '@dispatch/contracts'
import type { RedisClient } from '@dispatch/contracts/redis'
import { type Db, type DeliveryOutcome, findPlatformMessageId } from '@dispatch/db'
import { DelayedError, type Job, UnrecoverableError, Worker } from 'bullmq'
import type { Logger } from 'pino'
import { Compile } from 'typebox/compile'
import { MARKETING_STOPPED_CODE, optedOutFields, recordMarketingStop } from '../consent/check.ts'
import type { OptOutWatch } from '../consent/watch.ts'
import type { DeliveryRecorder } from '../delivery-recorder.ts'
import type { DeliveryMetrics } from '../metrics/registry.ts'
import { type MessagingPlatform, PlatformError } from '../platforms/types.ts'
import { traced } from '../tracing.ts'
import { fallbackMessage, isFreeForm, WINDOW_CLOSED_CODE } from '../window/check.ts'
import { readRecipient } from './recipient-reads.ts'
import { withPlatformReferences } from './references.ts'
import { findLoggedSent, logSent } from './sent-log.ts'

/** A retry's place in the sender's pace, taken without holding up the job (a lost one is one message early). */
function spendPace(lane: DeliveryLane, log: Logger): void {
  lane.spendPace().catch((error) => log.warn({ err: error }, "a retry not counted in the sender's pace"))
}

/** What a job ends with: the platform's id, or why it was never sent. */
export type DeliveryResult =
  | { platformMessageId: string; fallbackUsed?: true }
  | { outcome: 'expired' | 'canceled' }

/** The sender a job is delivered through, as its lane holds it now (its token may change). */
export interface DeliveryLane {
  senderId: string
  platform: MessagingPlatform
  settings: { serviceWindowPolicy: ServiceWindowPolicy }
  /** Pauses this sender for the platform's rate limit (lanes.ts). */
  rateLimit(ms: number): Promise<{ pauseMs: number; newPause: boolean }>
  /** Until when this process knows the sender to be rate limited (ms; 0 or past: not). */
  readonly limitedUntil: number
  /** While still limited: the limiter key set to what is left of the pause; answers whether it was. */
  holdForLimit(): Promise<boolean>
  /** Takes one message's place from the sender's pace: a retry the platform will see. */
  spendPace(): Promise<void>
  /** Pauses this sender (its token was refused): `needs_attention`, alert, queue paused. */
  tokenRefused(error: PlatformError): Promise<void>
}

export interface DeliveryDeps {
  db: Db
  /** A non-blocking connection, for the message claims that settle a race with a cancel. */
  claims: RedisClient
  logger: Logger
  prefix: string
  /** The recipient's hash, which the Redis copy of the suppression list is keyed by. */
  hash: RecipientHasher
  recorder: DeliveryRecorder
  /**
   * The sender's sent log (sent-log.ts): a sent outcome is appended there and written to Postgres
   * after the job completes. Without it, the job waits for its row (as the benchmark's baseline).
   */
  sentLog?: { stream: string; redis: RedisClient } | undefined
  /** Counts outcomes, when metrics are on. */
  metrics?: DeliveryMetrics | undefined
  /** The opt-outs this process heard of; without it, every delivery reads its recipient's entry. */
  optOuts?: Pick<OptOutWatch, 'mustRead'> | undefined
}

const isMessageJob = Compile(MessageJob)

/**
 * A message's outcome as the recorder takes it: what the job says of the message, through the
 * sender's number, with `attempts` in all (the earlier ones of an admin's retry included).
 */
export function deliveryOutcome(
  data: MessageJob,
  lane: Pick<DeliveryLane, 'senderId' | 'platform'>,
  status: DeliveryOutcome['status'],
  fields: Partial<DeliveryOutcome> & { attempts: number },
): DeliveryOutcome {
  const {
    messageId,
    apiKeyId,
    acceptedAt,
    clientReference,
    message,
    batchId,
    sendAt,
    expiresAt,
    scheduledReason,
  } = data
  return {
    id: messageId,
    apiKeyId,
    type: message.type,
    phone: message.body.phone ?? null,
    userId: message.body.userId ?? null,
    // A `discard` message's record never holds its content: only this job (in Redis) does.
    payload: data.discardContent ? redactPayload(message.type, message.body) : message.body,
    ...(data.discardContent ? { redacted: true } : {}),
    redactAfter: redactAfter(acceptedAt, data.contentRetentionHours),
    clientReference: clientReference ?? null,
    senderPhoneNumberId: lane.platform.phoneNumberId,
    senderId: lane.senderId,
    batchId: batchId ?? null,
    acceptedAt: new Date(acceptedAt),
    sendAt: sendAt ? new Date(sendAt) : null,
    heldForQuietHours: scheduledReason === 'quiet_hours',
    expiresAt: expiresAt ? new Date(expiresAt) : null,
    status,
    platformMessageId: null,
    lastErrorCode: null,
    lastErrorMessage: null,
    at: new Date(),
    ...fields,
  }
}

/**
 * Takes the message's claim for a worker, which settles any race with a cancel: once the worker's,
 * a cancel is refused. Answers who holds it: `worker`, or `cancel` when a cancel got there first.
 * One command (`SET … NX GET`, Redis ≥ 7): nil when the claim was free and is now the worker's.
 */
export async function takeClaim(claims: RedisClient, prefix: string, data: MessageJob): Promise<string> {
  const ttl = messageClaimTtlMs(data.expiresAt, Date.now())
  const holder = await claims.set(messageClaimKey(prefix, data.messageId), 'worker', 'PX', ttl, 'NX', 'GET')
  return holder ?? 'worker'
}

/** The fields of an expiry: never handed to the platform before its validity ended. */
export const expiredFields = (expiresAt: string | undefined) => ({
  lastErrorCode: 'MESSAGE_EXPIRED',
  lastErrorMessage: `Not handed to the platform before ${expiresAt}`,
})
/** The fields of a free-form message whose window Dispatch found closed, with no fallback to send. */
const windowClosedFields = {
  lastErrorCode: WINDOW_CLOSED_CODE,
  lastErrorMessage:
    'Not sent: the 24-hour customer-service window with this recipient was closed when it was due (checked by Dispatch); send a template, or give the message a fallbackTemplate',
}
const MAX_BACKOFF_MS = 15 * 60_000

/** Exponential backoff with full jitter over the upper half: base·2^(n-1)·[0.5, 1), capped. */
export function platformBackoff(attemptsMade: number, baseMs: number, error?: Error): number {
  if (error instanceof PlatformError && error.retryAfterMs !== undefined) return error.retryAfterMs
  const ceiling = Math.min(MAX_BACKOFF_MS, baseMs * 2 ** Math.max(0, attemptsMade - 1))
  return Math.round(ceiling * (0.5 + Math.random() * 0.5))
}

const asPlatformError = (error: unknown) =>
  error instanceof PlatformError
    ? error
    : new PlatformError('INTERNAL', 'retryable', (error as Error)?.message ?? String(error))

/**
 * Delivers one message. A job run again (retried, or picked up after a worker died) first looks
 * for a platform id already recorded, and never sends a message twice once it has one.
 */
export async function deliverMessage(
  job: Job<MessageJob, DeliveryResult>,
  token: string | undefined,
  lane: DeliveryLane,
  deps: DeliveryDeps,
): Promise<DeliveryResult> {
  const { db, logger, recorder, metrics } = deps
  const { platform, senderId } = lane
  if (!isMessageJob.Check(job.data)) {
    logger.error({ jobId: job.id }, 'message job does not match its contract; failed without delivery')
    throw new UnrecoverableError('The job payload does not match the messages contract')
  }
  const { messageId, acceptedAt, message, sendAt, expiresAt } = job.data
  const log = logger.child({ messageId, type: message.type, senderId })
  // Taken while this process knows the sender rate limited: back to the queue's front unsent, and
  // the worker waits out the pause. The limiter key is set to what is left of it first (another
  // process may have set a shorter one): the wait is the key's life, and a key gone would let the
  // worker take the job straight back.
  if (Date.now() < lane.limitedUntil && (await lane.holdForLimit())) throw Worker.RateLimitError()

  const attempts = job.attemptsMade + 1
  // A message an admin retried counts on from its earlier attempts (the record keeps the greater
  // count, so outcomes that spend no attempt need no offset).
  const priorAttempts = job.data.priorAttempts ?? 0
  const outcome = (status: DeliveryOutcome['status'], fields: Partial<DeliveryOutcome>): DeliveryOutcome =>
    deliveryOutcome(job.data, lane, status, { attempts: priorAttempts + attempts, ...fields })

  // An opt-out made after the message was accepted (when this process may not have heard of it)
  // and, under `enforce`, the recipient's window: read beside the claim, not after it, so no round
  // trip more on the job's way (a read that turns out unneeded, the message canceled or expired, is
  // dropped).
  const recipient = recipientOf(message.body)
  const recipientHash = deps.hash(recipient)
  const { optOut, window } = readRecipient(
    deps.claims,
    deps.prefix,
    { phoneNumberId: platform.phoneNumberId, recipient, recipientHash },
    {
      optOut: deps.optOuts?.mustRead(platform.phoneNumberId, recipientHash, Date.parse(acceptedAt)) ?? true,
      window: lane.settings.serviceWindowPolicy === 'enforce' && isFreeForm(message),
    },
  )
  if ((await takeClaim(deps.claims, deps.prefix, job.data)) === 'cancel') {
    await recorder.record(outcome('canceled', { attempts: job.attemptsMade }))
    metrics?.canceled(senderId)
    log.info('message canceled before it was sent')
    return { outcome: 'canceled' }
  }

  // First run of a new job: nothing can be recorded yet, so spare the lookup (the hot path).
  if (job.attemptsMade > 0 || job.attemptsStarted > 1) {
    const recorded = await findPlatformMessageId(db, messageId)
    if (recorded) {
      log.info({ platformMessageId: recorded }, 'message already sent; not sending again')
      return { platformMessageId: recorded }
    }
    // Sent by an earlier run killed after logging it, its row not yet written: write it now.
    const logged = deps.sentLog
      ? await findLoggedSent(deps.claims, deps.sentLog.stream, messageId)
      : undefined
    if (logged?.platformMessageId) {
      await recorder.record(logged)
      log.info({ platformMessageId: logged.platformMessageId }, 'message already sent; not sending again')
      return { platformMessageId: logged.platformMessageId }
    }
    // Sent by an earlier run whose record failed: record it now, still without sending.
    const progress = job.progress as { platformMessageId?: string; fallbackUsed?: boolean } | undefined
    const sent = progress?.platformMessageId
    if (sent) {
      const fallbackUsed = progress?.fallbackUsed === true
      await recorder.record(
        outcome('sent', { platformMessageId: sent, attempts: job.attemptsMade, fallbackUsed }),
      )
      metrics?.sent(senderId, sendAt ?? acceptedAt)
      log.info({ platformMessageId: sent }, 'message already sent; recorded it without sending again')
      return { platformMessageId: sent }
    }
  }

  // Past its validity (a backlog, an outage, the platform's rate limits): never sent late.
  if (expiresAt && Date.now() > Date.parse(expiresAt)) {
    await recorder.record(outcome('expired', { attempts: job.attemptsMade, ...expiredFields(expiresAt) }))
    metrics?.expired(senderId)
    log.info({ expiresAt }, 'message expired before it could be sent')
    return { outcome: 'expired' }
  }

  // Opted out since it was accepted (a STOP, an entry added; of marketing: "Stop promotions", Meta's
  // user_preferences, a 131050), of everything or of what this message is: never sent.
  const scope = await optOut
  if (scope === 'all' || (scope === 'marketing' && job.data.marketing === true)) {
    await recorder.record(outcome('canceled', { attempts: job.attemptsMade, ...optedOutFields(scope) }))
    metrics?.canceled(senderId)
    log.info({ scope }, 'recipient opted out before it was sent; canceled')
    return { outcome: 'canceled' }
  }

  // The 24-hour window under the sender's `enforce` policy: a scheduled or backlogged message can
  // outlive it. Known closed, the fallback template goes instead, or the message fails unsent.
  let outbound: OutboundMessage = message
  let fallbackUsed = false
  if ((await window) === 'closed') {
    const fallback = fallbackMessage(job.data)
    if (!fallback) {
      await recorder.record(outcome('failed', { attempts: job.attemptsMade, ...windowClosedFields }))
      metrics?.failed(senderId, WINDOW_CLOSED_CODE)
      log.info('24-hour window closed and no fallback template; failed without sending')
      throw new UnrecoverableError(`${WINDOW_CLOSED_CODE}: ${windowClosedFields.lastErrorMessage}`)
    }
    outbound = fallback
    fallbackUsed = true
  }
  const send = (outgoing: OutboundMessage) =>
    traced(`${platform.name} send`, { 'dispatch.sender_id': senderId }, async () =>
      platform.deliver({ messageId, message: await withPlatformReferences(db, outgoing) }),
    )

  let platformMessageId: string
  try {
    try {
      ;({ platformMessageId } = await send(outbound))
    } catch (caught) {
      // The platform says the window is closed (131047): the fallback goes at once, in this attempt.
      const fallback = fallbackUsed ? undefined : fallbackMessage(job.data)
      if (!fallback || !(caught instanceof PlatformError) || caught.code !== WINDOW_CLOSED_CODE) throw caught
      log.info('the platform found the 24-hour window closed; sending the fallback template')
      outbound = fallback
      fallbackUsed = true
      ;({ platformMessageId } = await send(outbound))
    }
  } catch (caught) {
    const error = asPlatformError(caught)
    if (error.kind === 'rate-limited') {
      // This sender's queue waits: every worker on it, in every process; other senders go on. No
      // attempt is spent.
      const { pauseMs, newPause } = await lane.rateLimit(error.retryAfterMs ?? 1000)
      // One line per pause, not one per job of the burst that met it.
      if (newPause) {
        log.warn({ code: error.code, pauseMs }, 'platform rate limit; pausing this sender')
        metrics?.rateLimitPaused(senderId)
      }
      throw Worker.RateLimitError()
    }
    if (error.kind === 'recipient-throttled' && token) {
      // Only this recipient is over its pair rate: this message waits, the sender's others go on.
      spendPace(lane, log)
      const delayMs = Math.round((error.retryAfterMs ?? 6000) * (1 + Math.random() * 0.5))
      log.info({ code: error.code, delayMs }, 'pair rate limit for this recipient; delaying this message')
      await job.moveToDelayed(Date.now() + delayMs, token)
      throw new DelayedError()
    }
    if (error.kind === 'token-refused') {
      // Back in the queue, which is paused: it waits (within its validity) for a fixed token.
      log.error({ alert: error.alert, code: error.code }, 'sender token refused; pausing this sender')
      await lane.tokenRefused(error)
      throw Worker.RateLimitError()
    }
    if (error.alert) log.error({ alert: error.alert, code: error.code }, error.message)
    const final = error.kind === 'permanent' || attempts >= (job.opts.attempts ?? 1)
    await recorder.record(
      outcome(final ? 'failed' : 'sending', { lastErrorCode: error.code, lastErrorMessage: error.message }),
    )
    if (final) metrics?.failed(senderId, error.code)
    else {
      metrics?.retried(senderId, error.code)
      spendPace(lane, log)
    }
    if (error.code === MARKETING_STOPPED_CODE) {
      const entry = { phoneNumberId: platform.phoneNumberId, senderId, recipient: recipientOf(message.body) }
      await recordMarketingStop(db, deps.claims, deps.prefix, deps.hash, entry).catch((caught) =>
        log.warn({ err: caught }, '131050 not recorded as an opt-out'),
      )
    }
    log.warn({ code: error.code, kind: error.kind, attempts, final }, 'delivery attempt failed')
    throw final ? new UnrecoverableError(`${error.code}: ${error.message}`) : error
  }

  const sent = outcome('sent', { platformMessageId, fallbackUsed })
  if (deps.sentLog) {
    // Appended on the connection BullMQ completes the job on, not awaited: Redis runs it before the
    // completion, so a completed job's outcome is in the log (or Postgres) at no extra round trip.
    const logged = logSent(deps.sentLog.redis, deps.sentLog.stream, sent)
    logged.catch((error) => log.error({ err: error, platformMessageId }, 'sent outcome not logged in Redis'))
    recorder.recordLogged(sent, logged).catch(() => {})
  } else {
    try {
      await recorder.record(sent)
    } catch (error) {
      // Sent but not recorded: keep the id on the job in Redis, so the retry completes without sending.
      await job.updateProgress({ platformMessageId, fallbackUsed }).catch(() => {})
      log.error({ err: error, platformMessageId }, 'message sent but its record failed; retrying the record')
      throw error
    }
  }
  metrics?.sent(senderId, sendAt ?? acceptedAt)
  log.debug({ platformMessageId, attempts, fallbackUsed }, 'message sent')
  return fallbackUsed ? { platformMessageId, fallbackUsed: true } : { platformMessageId }
}
