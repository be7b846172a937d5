import {
  KEY_REVOKED_CODE,
  KEY_REVOKED_MESSAGE,
  MessageJob,
  type OutboundMessage,
  recipientOf,
  redactAfter,
  redactPayload,
  type ServiceWindowPolicy,
} from '@dispatch/contracts'
import { type Db, type DeliveryOutcome, findLoggedSent, findPlatformMessageId } from '@dispatch/db'
import { type RecipientHasher, suppressionOwner } from '@dispatch/runtime'
import { messageClaimKey, messageClaimTtlMs } from '@dispatch/runtime/message-handoff'
import type { RedisClient } from '@dispatch/runtime/redis'
import { DelayedError, type Job, UnrecoverableError, Worker } from 'bullmq'
import type { Logger } from 'pino'
import { Compile } from 'typebox/compile'
import { MARKETING_STOPPED_CODE, optedOutFields, recordMarketingStop } from '../consent/check.ts'
import type { OptOutWatch } from '../consent/watch.ts'
import type { DeliveryRecorder, LoggedEntry } from '../delivery-recorder.ts'
import type { DeliveryMetrics } from '../metrics/registry.ts'
import { type MessagingPlatform, PlatformError } from '../platforms/types.ts'
import { traced } from '../tracing.ts'
import { fallbackMessage, isFreeForm, WINDOW_CLOSED_CODE } from '../window/check.ts'
import { readRecipient } from './recipient-reads.ts'
import { withPlatformReferences } from './references.ts'
import type { RevokedKeys } from './revoked-keys.ts'
import { logSent } from './sent-log.ts'

/** A retry's place in the sender's pace, taken without holding up the job (a lost one is one message early). */
function spendPace(lane: DeliveryLane, log: Logger): void {
  lane.spendPace().catch((error) => log.warn({ err: error }, "a retry not counted in the sender's pace"))
}

/** What a job ends with: the platform's id, or why it was never sent. */
export type Delivered =
  | { platformMessageId: string; fallbackUsed?: true }
  | { outcome: 'expired' | 'canceled' }
export type DeliveryResult =
  | Delivered
  /** Another job holds the message's claim and delivers it (message-bundles.ts). */
  | { outcome: 'elsewhere' }

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
  sentLog?:
    | {
        stream: string
        redis: RedisClient
        /** Appends an outcome (a bundle's: batchedLogSent); without it, one XADD of its own. */
        append?: (outcome: DeliveryOutcome) => Promise<LoggedEntry>
      }
    | undefined
  /** Counts outcomes, when metrics are on. */
  metrics?: DeliveryMetrics | undefined
  /** The opt-outs this process heard of; without it, every delivery reads its recipient's entry. */
  optOuts?: Pick<OptOutWatch, 'mustRead'> | undefined
  /** The revoked keys this process knows of (revoked-keys.ts): their messages are never sent. */
  revokedKeys?: Pick<RevokedKeys, 'has'> | undefined
}

const isMessageJob = Compile(MessageJob)

/**
 * A message's outcome as the recorder takes it: what the job says of the message, through the
 * sender's number, with `attempts` in all (the earlier ones of an admin's retry included).
 */
export function deliveryOutcome(
  data: MessageJob,
  lane: { senderId: string; platform: Pick<MessagingPlatform, 'phoneNumberId'> },
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
 * Takes the message's claim, which settles any race with a cancel: once a job holds it, a cancel is
 * refused. One command (`SET … NX GET`, Redis ≥ 7): answers who held it before, or null when it was
 * free and is now `as` (`worker` for a message's own job, the bundle's id for a bundle's).
 */
export async function takeClaim(
  claims: RedisClient,
  prefix: string,
  data: MessageJob,
  as = 'worker',
): Promise<string | null> {
  const ttl = messageClaimTtlMs(data.expiresAt, Date.now())
  return claims.set(messageClaimKey(prefix, data.messageId), as, 'PX', ttl, 'NX', 'GET')
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
/** The fields of a message canceled because its key was revoked (the view's `cancelReason: key_revoked`). */
export const keyRevokedFields = { lastErrorCode: KEY_REVOKED_CODE, lastErrorMessage: KEY_REVOKED_MESSAGE }
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

/** How one job runs one message: the single job's own run, or one message of a bundle. */
export interface DeliveryRun {
  /** The claim's value this run holds: `worker` for a message's own job, a bundle's job id. */
  claimAs: string
  /** A claim held under this name is this run's too: the bundle that handed the message on. */
  takesOver?: string | undefined
  /** Attempts this job made at this message before this run. */
  attemptsMade: number
  /** The most attempts this job makes at the message. */
  maxAttempts: number
  /** The job ran before (a retry, a stalled or rate-limited run): the message may be sent already. */
  rerun: boolean
  /** What an earlier run kept of a send it could not record (without a sent log). */
  progress?: { platformMessageId?: string; fallbackUsed?: boolean } | undefined
}

/** What one run of one message ended with. Every outcome but `held` and `elsewhere` is recorded. */
export type Disposition =
  /** `recorded`: a sent outcome's row is written after the run, from the sent log; settles then. */
  | { kind: 'done'; result: Delivered; recorded?: Promise<void>; logged?: Promise<LoggedEntry> }
  /** Failed for good (recorded `failed`). */
  | { kind: 'failed'; reason: string }
  /** To be tried again after `delayMs`; `spent`: an attempt was made (and recorded `sending`). */
  | { kind: 'again'; error: Error; spent: boolean; delayMs?: number }
  /** Not sent: the sender is paused (a platform rate limit, a refused token); back in the queue. */
  | { kind: 'held' }
  /** Another job holds its claim (a bundle made again after an admitter died): that one sends it. */
  | { kind: 'elsewhere' }

/** The message's sent outcome could not be recorded (no sent log): the job keeps the platform id. */
export class UnrecordedSendError extends Error {
  readonly sent: { platformMessageId: string; fallbackUsed: boolean }
  constructor(cause: unknown, sent: { platformMessageId: string; fallbackUsed: boolean }) {
    super((cause as Error)?.message ?? String(cause), { cause })
    this.sent = sent
  }
}

/**
 * Delivers one message of a job, and answers how it ended (the adapters below and bundle.ts turn
 * that into BullMQ's terms). A run that may follow an earlier one (a job run again, a claim already
 * held) first looks for a platform id already recorded, and never sends a message twice once it
 * has one.
 */
export async function deliverOne(
  data: MessageJob,
  run: DeliveryRun,
  lane: DeliveryLane,
  deps: DeliveryDeps,
): Promise<Disposition> {
  const { db, logger, recorder, metrics } = deps
  const { platform, senderId } = lane
  const { messageId, acceptedAt, message, sendAt, expiresAt } = data
  const log = logger.child({ messageId, type: message.type, senderId })

  const attempts = run.attemptsMade + 1
  // A message an admin retried (or a bundle handed on) counts on from its earlier attempts (the
  // record keeps the greater count, so outcomes that spend no attempt need no offset).
  const priorAttempts = data.priorAttempts ?? 0
  const outcome = (status: DeliveryOutcome['status'], fields: Partial<DeliveryOutcome>): DeliveryOutcome =>
    deliveryOutcome(data, lane, status, { attempts: priorAttempts + attempts, ...fields })

  // An opt-out made after the message was accepted (when this process may not have heard of it)
  // and, under `enforce`, the recipient's window: read beside the claim, not after it, so no round
  // trip more on the job's way (a read that turns out unneeded, the message canceled or expired, is
  // dropped).
  const recipient = recipientOf(message.body)
  const recipientHash = deps.hash(recipient)
  const { optOut, window } = readRecipient(
    deps.claims,
    deps.prefix,
    {
      phoneNumberId: platform.phoneNumberId,
      recipient,
      recipientHash,
      // Jobs accepted before they carried the tenant read the key's own entries.
      owner: suppressionOwner({ apiKeyId: data.apiKeyId, tenantId: data.tenantId ?? null }),
    },
    {
      optOut: deps.optOuts?.mustRead(platform.phoneNumberId, recipientHash, Date.parse(acceptedAt)) ?? true,
      window: lane.settings.serviceWindowPolicy === 'enforce' && isFreeForm(message),
    },
  )
  const holder = await takeClaim(deps.claims, deps.prefix, data, run.claimAs)
  if (holder === 'cancel') {
    await recorder.record(outcome('canceled', { attempts: run.attemptsMade }))
    metrics?.canceled(senderId)
    log.info('message canceled before it was sent')
    return { kind: 'done', result: { outcome: 'canceled' } }
  }
  if (holder !== null && holder !== run.claimAs && holder !== run.takesOver) {
    log.info({ holder }, 'message held by another job; that one delivers it')
    return { kind: 'elsewhere' }
  }

  // First run of a new job with a claim it just took: nothing can be recorded yet, so spare the
  // lookup (the hot path).
  if (run.rerun || holder !== null) {
    const recorded = await findPlatformMessageId(db, messageId)
    if (recorded) {
      log.info({ platformMessageId: recorded }, 'message already sent; not sending again')
      return { kind: 'done', result: { platformMessageId: recorded } }
    }
    // Sent by an earlier run killed after logging it, its row not yet written: write it now.
    const logged = deps.sentLog
      ? await findLoggedSent(deps.claims, deps.sentLog.stream, messageId)
      : undefined
    if (logged?.platformMessageId) {
      await recorder.record(logged)
      log.info({ platformMessageId: logged.platformMessageId }, 'message already sent; not sending again')
      return { kind: 'done', result: { platformMessageId: logged.platformMessageId } }
    }
    // Sent by an earlier run whose record failed: record it now, still without sending.
    const sent = run.progress?.platformMessageId
    if (sent) {
      const fallbackUsed = run.progress?.fallbackUsed === true
      await recorder.record(
        outcome('sent', { platformMessageId: sent, attempts: run.attemptsMade, fallbackUsed }),
      )
      metrics?.sent(senderId, sendAt ?? acceptedAt)
      log.info({ platformMessageId: sent }, 'message already sent; recorded it without sending again')
      return { kind: 'done', result: { platformMessageId: sent } }
    }
  }

  // Past its validity (a backlog, an outage, the platform's rate limits): never sent late.
  if (expiresAt && Date.now() > Date.parse(expiresAt)) {
    await recorder.record(outcome('expired', { attempts: run.attemptsMade, ...expiredFields(expiresAt) }))
    metrics?.expired(senderId)
    log.info({ expiresAt }, 'message expired before it could be sent')
    return { kind: 'done', result: { outcome: 'expired' } }
  }

  // Its key revoked since it was accepted (in a bundle, mid-retry, admitted before the sweep): never
  // sent. A lookup in memory, no round trip.
  if (deps.revokedKeys?.has(data.apiKeyId)) {
    await recorder.record(outcome('canceled', { attempts: run.attemptsMade, ...keyRevokedFields }))
    metrics?.canceled(senderId)
    log.info('its key was revoked before it was sent; canceled')
    return { kind: 'done', result: { outcome: 'canceled' } }
  }

  // Opted out since it was accepted (a STOP, an entry added; of marketing: "Stop promotions", Meta's
  // user_preferences, a 131050), of everything or of what this message is: never sent.
  const scope = await optOut
  if (scope === 'all' || (scope === 'marketing' && data.marketing === true)) {
    await recorder.record(outcome('canceled', { attempts: run.attemptsMade, ...optedOutFields(scope) }))
    metrics?.canceled(senderId)
    log.info({ scope }, 'recipient opted out before it was sent; canceled')
    return { kind: 'done', result: { outcome: 'canceled' } }
  }

  // The 24-hour window under the sender's `enforce` policy: a scheduled or backlogged message can
  // outlive it. Known closed, the fallback template goes instead, or the message fails unsent.
  let outbound: OutboundMessage = message
  let fallbackUsed = false
  if ((await window) === 'closed') {
    const fallback = fallbackMessage(data)
    if (!fallback) {
      await recorder.record(outcome('failed', { attempts: run.attemptsMade, ...windowClosedFields }))
      metrics?.failed(senderId, WINDOW_CLOSED_CODE)
      log.info('24-hour window closed and no fallback template; failed without sending')
      return { kind: 'failed', reason: `${WINDOW_CLOSED_CODE}: ${windowClosedFields.lastErrorMessage}` }
    }
    outbound = fallback
    fallbackUsed = true
  }
  const send = (outgoing: OutboundMessage) =>
    traced(`${platform.name} send`, { 'dispatch.sender_id': senderId }, async () =>
      platform.deliver({ messageId, message: await withPlatformReferences(db, outgoing, data.apiKeyId) }),
    )

  let platformMessageId: string
  try {
    try {
      ;({ platformMessageId } = await send(outbound))
    } catch (caught) {
      // The platform says the window is closed (131047): the fallback goes at once, in this attempt.
      const fallback = fallbackUsed ? undefined : fallbackMessage(data)
      if (!fallback || !(caught instanceof PlatformError) || caught.code !== WINDOW_CLOSED_CODE) throw caught
      log.info('the platform found the 24-hour window closed; sending the fallback template')
      outbound = fallback
      fallbackUsed = true
      ;({ platformMessageId } = await send(outbound))
    }
  } catch (caught) {
    return failedSend(asPlatformError(caught), { data, attempts, run, lane, deps, log, outcome })
  }

  const sent = outcome('sent', { platformMessageId, fallbackUsed })
  let recorded: Promise<void> | undefined
  let logged: Promise<LoggedEntry> | undefined
  if (deps.sentLog) {
    // A message's own job appends on the connection BullMQ completes it on, not awaited: Redis runs
    // it before the completion, so a completed job's outcome is in the log (or Postgres) at no extra
    // round trip. A bundle's go through `append`, whose entries the bundle waits for (bundle.ts).
    const { append } = deps.sentLog
    logged = append ? append(sent) : logSent(deps.sentLog.redis, deps.sentLog.stream, sent)
    // Counted once the outcome is in the log: a process killed before that counts nothing it loses.
    logged.then(
      () => metrics?.sent(senderId, sendAt ?? acceptedAt),
      (error) => log.error({ err: error, platformMessageId }, 'sent outcome not logged in Redis'),
    )
    recorded = recorder.recordLogged(sent, logged)
    recorded.catch(() => {})
  } else {
    try {
      await recorder.record(sent)
    } catch (error) {
      log.error({ err: error, platformMessageId }, 'message sent but its record failed; retrying the record')
      throw new UnrecordedSendError(error, { platformMessageId, fallbackUsed })
    }
    metrics?.sent(senderId, sendAt ?? acceptedAt)
  }
  log.debug({ platformMessageId, attempts, fallbackUsed }, 'message sent')
  return {
    kind: 'done',
    result: fallbackUsed ? { platformMessageId, fallbackUsed: true } : { platformMessageId },
    ...(recorded ? { recorded } : {}),
    ...(logged ? { logged } : {}),
  }
}

/** A platform call that failed: the sender paused, the message delayed, tried again, or failed. */
async function failedSend(
  error: PlatformError,
  context: {
    data: MessageJob
    attempts: number
    run: DeliveryRun
    lane: DeliveryLane
    deps: DeliveryDeps
    log: Logger
    outcome: (status: DeliveryOutcome['status'], fields: Partial<DeliveryOutcome>) => DeliveryOutcome
  },
): Promise<Disposition> {
  const { data, attempts, run, lane, deps, log, outcome } = context
  const { metrics } = deps
  const { senderId, platform } = lane
  if (error.kind === 'rate-limited') {
    // This sender's queue waits: every worker on it, in every process; other senders go on. No
    // attempt is spent.
    const { pauseMs, newPause } = await lane.rateLimit(error.retryAfterMs ?? 1000)
    // One line per pause, not one per job of the burst that met it.
    if (newPause) {
      log.warn({ code: error.code, pauseMs }, 'platform rate limit; pausing this sender')
      metrics?.rateLimitPaused(senderId)
    }
    return { kind: 'held' }
  }
  if (error.kind === 'recipient-throttled') {
    // Only this recipient is over its pair rate: this message waits, the sender's others go on.
    spendPace(lane, log)
    const delayMs = Math.round((error.retryAfterMs ?? 6000) * (1 + Math.random() * 0.5))
    log.info({ code: error.code, delayMs }, 'pair rate limit for this recipient; delaying this message')
    return { kind: 'again', error, spent: false, delayMs }
  }
  if (error.kind === 'token-refused') {
    // Back in the queue, which is paused: it waits (within its validity) for a fixed token.
    log.error({ alert: error.alert, code: error.code }, 'sender token refused; pausing this sender')
    await lane.tokenRefused(error)
    return { kind: 'held' }
  }
  if (error.alert) log.error({ alert: error.alert, code: error.code }, error.message)
  const final = error.kind === 'permanent' || attempts >= run.maxAttempts
  await deps.recorder.record(
    outcome(final ? 'failed' : 'sending', { lastErrorCode: error.code, lastErrorMessage: error.message }),
  )
  if (final) metrics?.failed(senderId, error.code)
  else {
    metrics?.retried(senderId, error.code)
    spendPace(lane, log)
  }
  if (error.code === MARKETING_STOPPED_CODE) {
    const entry = {
      phoneNumberId: platform.phoneNumberId,
      senderId,
      recipient: recipientOf(data.message.body),
    }
    await recordMarketingStop(deps.db, deps.claims, deps.prefix, deps.hash, entry).catch((caught) =>
      log.warn({ err: caught }, '131050 not recorded as an opt-out'),
    )
  }
  log.warn({ code: error.code, kind: error.kind, attempts, final }, 'delivery attempt failed')
  return final
    ? { kind: 'failed', reason: `${error.code}: ${error.message}` }
    : { kind: 'again', error, spent: true }
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
    deps.logger.error({ jobId: job.id }, 'message job does not match its contract; failed without delivery')
    throw new UnrecoverableError('The job payload does not match the messages contract')
  }
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
      throw Worker.RateLimitError()
    case 'elsewhere':
      return { outcome: 'elsewhere' }
    case 'again':
      if (disposition.spent || !token) throw disposition.error
      await job.moveToDelayed(Date.now() + (disposition.delayMs ?? 0), token)
      throw new DelayedError()
  }
}
