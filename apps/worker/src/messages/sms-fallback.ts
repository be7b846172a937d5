import { type MessageJob, UNDELIVERABLE_CODE } from '@dispatch/contracts'
import {
  beginFallbackCall,
  decideFallback,
  type FallbackReason,
  recordFallbackFailed,
  recordFallbackSent,
  type Sql,
} from '@dispatch/db'
import type { Logger } from 'pino'
import { type SmsProvider, SmsProviderError } from '../platforms/sms/types.ts'

export interface SmsFallbackDeps {
  sql: Sql
  /** The configured provider (SMS_PROVIDER); none: a decided fallback ends `failed`. */
  sms: SmsProvider | undefined
  clock: () => Date
  log: Logger
  /** How a refusal the provider surely did not act on is tried again (TRANSIENT_RETRY by default). */
  retry?: TransientRetry | undefined
  /** Where a job's steps that could not be taken (Postgres away) go on: a timer due now. */
  handOn?: ((data: MessageJob) => Promise<boolean>) | undefined
}

/**
 * A provider's refusal that says it took nothing and may pass (HTTP 429 `20429`, or no connection
 * at all: `outcomeKnown`, kind `rate-limited` or `retryable`) is tried again within the same
 * `calling`, so no other process can call meanwhile: at most `attempts` calls in all, waiting
 * `Retry-After` (at most `maxWaitMs`) or `baseMs` doubling, and none begun later than `withinMs`
 * after the first (each may then last SMS_TIMEOUT_MS), which keeps the whole `calling` shorter than
 * the sweep's SMS_TIMEOUT_MS and a minute (sms-call-sweep.ts). A 5xx or a timeout may have sent it:
 * never tried again.
 */
export interface TransientRetry {
  attempts: number
  baseMs: number
  maxWaitMs: number
  withinMs: number
}
export const TRANSIENT_RETRY: TransientRetry = {
  attempts: 4,
  baseMs: 1_000,
  maxWaitMs: 10_000,
  withinMs: 40_000,
}

const isTransient = (failure: SmsProviderError) =>
  failure.outcomeKnown && (failure.kind === 'rate-limited' || failure.kind === 'retryable')

/** A message to fall back to SMS, and the rule that says so. */
export interface SmsFallbackRequest {
  messageId: string
  acceptedAt: Date
  /** The recipient, E.164. */
  to: string
  text: string
  reason: FallbackReason
  reasonCode?: string | undefined
  /** The message statuses this rule falls back from (`failed` for 131026). */
  fromStatuses: string[]
}

export type SmsFallbackOutcome =
  /** The provider took the SMS. */
  | 'sent'
  /** It surely did not: recorded `failed`. */
  | 'failed'
  /** It may have: recorded `unknown`, never tried again. */
  | 'unknown'
  /** WhatsApp delivered between the decision and the call: nothing sent. */
  | 'withdrawn'
  /** The message is delivered, read, canceled, or in no status the rule falls back from. */
  | 'refused'
  /** Another run holds or settled this fallback: nothing to do here. */
  | 'elsewhere'

/**
 * The channel fallback's steps for one message (docs/fallback.md, "At most once: the record"): decide,
 * take the call (`calling`, committed first), call the provider, record its answer. Safe to run
 * again at any point, by any number of processes at once: a decision already taken is taken
 * again only while nobody called (a run killed between the decision and `calling` is picked up), and
 * once `calling` is committed nothing calls again, whatever happens to the run that wrote it.
 */
export async function sendSmsFallback(
  deps: SmsFallbackDeps,
  request: SmsFallbackRequest,
): Promise<SmsFallbackOutcome> {
  const { sql, sms, clock } = deps
  const { messageId, acceptedAt } = request
  const log = deps.log.child({ messageId, fallback: request.reason })
  const decision = await decideFallback(sql, {
    messageId,
    acceptedAt,
    reason: request.reason,
    reasonCode: request.reasonCode,
    fromStatuses: request.fromStatuses,
    at: clock(),
  })
  if (decision === 'refused') return 'refused'
  const call = await beginFallbackCall(sql, { messageId, acceptedAt, at: clock() })
  if (call === 'withdrawn') {
    log.info('whatsapp delivered before the sms fallback went; withdrawn')
    return 'withdrawn'
  }
  if (call === 'none') return 'elsewhere'
  if (!sms) {
    await recordFallbackFailed(sql, {
      messageId,
      provider: null,
      code: 'SMS_NOT_CONFIGURED',
      message: 'No SMS provider is configured (SMS_PROVIDER)',
      outcomeKnown: true,
      at: clock(),
    })
    log.warn('sms fallback decided without an sms provider; failed')
    return 'failed'
  }
  let accepted: Awaited<ReturnType<SmsProvider['send']>> | undefined
  let failure: SmsProviderError | undefined
  const retry = deps.retry ?? TRANSIENT_RETRY
  const firstCallAt = Date.now()
  for (let attempt = 1; accepted === undefined; attempt++) {
    try {
      accepted = await sms.send({ messageId, to: request.to, text: request.text })
    } catch (error) {
      // A failure of ours (not the provider's answer) tells nothing of what the provider got: unknown.
      failure =
        error instanceof SmsProviderError
          ? error
          : new SmsProviderError('INTERNAL', 'permanent', (error as Error)?.message ?? String(error), {
              outcomeKnown: false,
            })
      const wait = Math.min(failure.retryAfterMs ?? retry.baseMs * 2 ** (attempt - 1), retry.maxWaitMs)
      const again =
        isTransient(failure) && attempt < retry.attempts && Date.now() + wait - firstCallAt <= retry.withinMs
      if (!again) break
      log.warn(
        { code: failure.code, kind: failure.kind, attempt, waitMs: wait },
        'sms fallback refused for now; trying again',
      )
      await new Promise((resolve) => setTimeout(resolve, wait))
    }
  }
  if (accepted === undefined) {
    failure ??= new SmsProviderError('INTERNAL', 'permanent', 'No answer', { outcomeKnown: false })
    await recordFallbackFailed(sql, {
      messageId,
      provider: sms.name,
      code: failure.code,
      message: failure.message,
      outcomeKnown: failure.outcomeKnown,
      at: clock(),
    })
    log.warn(
      { code: failure.code, kind: failure.kind, outcomeKnown: failure.outcomeKnown },
      'sms fallback not sent',
    )
    return failure.outcomeKnown ? 'failed' : 'unknown'
  }
  // Logged before it is recorded: should the write fail, the row stays `calling` (later `unknown`)
  // and this line keeps the sid for ops.
  log.info({ sid: accepted.providerMessageId, status: accepted.status }, 'sms fallback sent')
  await recordFallbackSent(sql, {
    messageId,
    provider: sms.name,
    providerMessageId: accepted.providerMessageId,
    providerStatus: accepted.status,
    at: clock(),
  })
  return 'sent'
}

/** A trigger of the fallback, as a message's job meets it: why, and the statuses it falls back from. */
export type FallbackRule = Pick<SmsFallbackRequest, 'reason' | 'reasonCode' | 'fromStatuses'>

/** 131026 at send time: the message recorded `failed`. */
export const UNDELIVERABLE_RULE: FallbackRule = {
  reason: 'whatsapp_undeliverable',
  reasonCode: UNDELIVERABLE_CODE,
  fromStatuses: ['failed'],
}

/** Its validity ended before it went: the message recorded `expired`, never sent on WhatsApp. */
export const EXPIRED_RULE: FallbackRule = { reason: 'expired', fromStatuses: ['expired'] }

/**
 * A trigger met by a message's job, its outcome committed: the `fallback.sms` on the job goes out
 * as an SMS. A message sent to a BSUID alone has no number to text. Its steps failing (Postgres
 * away) are handed on to a timer due now (`handOn`), which waits for Postgres and takes them then;
 * the record lets one run call, so never an SMS twice. Redis away too, they are logged and dropped.
 */
export async function fallBackFromJob(
  deps: SmsFallbackDeps,
  data: MessageJob,
  rule: FallbackRule,
): Promise<SmsFallbackOutcome | undefined> {
  const text = data.fallback?.sms.text
  const to = data.message.body.phone
  if (text === undefined || to === undefined) return undefined
  try {
    return await sendSmsFallback(deps, {
      messageId: data.messageId,
      acceptedAt: new Date(data.acceptedAt),
      to,
      text,
      ...rule,
    })
  } catch (error) {
    try {
      if (deps.handOn && (await deps.handOn(data))) {
        deps.log.warn(
          { err: error, messageId: data.messageId },
          'sms fallback steps failed; handed to a timer',
        )
        return undefined
      }
    } catch (handOnError) {
      deps.log.error({ err: handOnError, messageId: data.messageId }, 'sms fallback not handed to a timer')
    }
    deps.log.error({ err: error, messageId: data.messageId }, 'sms fallback steps failed')
    return undefined
  }
}

/** The send-time trigger (131026), its `failed` record committed. */
export const fallBackAfterUndeliverable = (deps: SmsFallbackDeps, data: MessageJob) =>
  fallBackFromJob(deps, data, UNDELIVERABLE_RULE)
