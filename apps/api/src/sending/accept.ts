import {
  DEFAULT_SENDER_ID,
  DELIVERY_OPTION_KEYS,
  type FallbackTemplate,
  isTimeZone,
  kindProblem,
  type MessageFallback,
  type MessageJob,
  type MessagePriority,
  type MessageType,
  type QuietHours,
  quietHoursProblem,
  recipientProblem,
} from '@dispatch/contracts'
import { messageIdAt } from '@dispatch/runtime'
import type { ApiConfig } from '../env.ts'
import { AppError } from '../errors.ts'
import { currentTraceContext } from '../trace-context.ts'
import type { StickyWrite } from './pools/sticky.ts'

/** The farthest ahead a message may be scheduled. */
export const SCHEDULE_MAX_AHEAD_MS = 35 * 24 * 3600 * 1000

/** A send the API accepted: its job, and how long the queue holds it back (scheduled ones). */
export interface AcceptedMessage {
  job: MessageJob
  delayMs: number
  status: 'queued' | 'scheduled'
  /** A pooled send's new sticky record, written once it is stored (pools/on-accept.ts). */
  sticky?: StickyWrite
}

/** When quiet hours let a message go (see ./quiet-hours). */
export interface QuietHoursHold {
  holdUntil(
    recipient: { phone?: string | undefined },
    quiet: QuietHours,
    timeZone: string | undefined,
    due: number,
  ): number | undefined
}

type SendBody = {
  contentRetention?: 'discard'
  phone?: string | undefined
  userId?: string | undefined
  clientReference?: string
  sendAt?: string
  validitySeconds?: number
  priority?: MessagePriority
  fallbackTemplate?: FallbackTemplate
  fallback?: MessageFallback
  quietHours?: QuietHours
  timeZone?: string
  senderId?: string
}

/** What the accept step needs of the calling key. */
export interface SendingKey {
  id: string
  /** Its sender; null: the default. */
  senderId: string | null
  /** The sender pool it is bound to (docs/sender-pools.md): its sends' number is chosen from it. */
  senderPoolId?: string | null
  /** Its tenant (null: none), carried on the job: that tenant's opt-out entries block it at delivery. */
  tenantId?: string | null
  transactional: boolean
  /** The quiet hours an admin set on the key; a send's own replace them. */
  quietHours: QuietHours | null
  /** Hours its messages' content is kept; 0: `discard` (never stored), null: `retain`. */
  contentRetentionHours: number | null
  /** Its scopes: `send:sms-fallback` lets its sends carry its sender's default fallback. */
  scopes?: readonly string[] | undefined
}

/** `422 INVALID_REFERENCE`: a send's `senderId` the key may not send through. */
export const senderNotAllowed = (field: string, senderId: string) =>
  new AppError(
    'INVALID_REFERENCE',
    `${field}.senderId ${JSON.stringify(senderId)} is neither the API key's sender nor a member of its sender pool`,
  )

/** Sender ids as the admin routes store them: `default`, or a lower-case UUID. */
export const normalSenderId = (id: string) => (id === DEFAULT_SENDER_ID ? id : id.toLowerCase())
const sameSender = (given: string, own: string) => normalSenderId(given) === own

const invalid = (field: string, why: string) => new AppError('VALIDATION_ERROR', `${field} ${why}`)

/**
 * Turns a validated send body into its job: the delivery options (`clientReference`, `sendAt`,
 * `validitySeconds`, `priority`) go beside the message, never into the body the platform gets. Throws `400`
 * naming the field when `sendAt` or `validitySeconds` is out of range for this configuration, and
 * `403` for `priority: "high"` from a key not marked transactional. A message that would reach its
 * recipient inside quiet hours (the send's, else the key's; never for `priority: "high"`) is held
 * until they end: scheduled then, its `validitySeconds` counted from there.
 * `field` prefixes those names (`body` for a single send, `body.messages[3]` in a batch).
 */
export function acceptMessage(
  input: {
    type: MessageType
    body: SendBody
    apiKey: SendingKey
    now: Date
    batchId?: string
    field?: string
    /** The message's id when the caller gave it one (a campaign's row, assigned before storing); else a new one. */
    messageId?: string
  },
  config: Pick<
    ApiConfig,
    'MESSAGE_VALIDITY_SECONDS' | 'MESSAGE_VALIDITY_MIN_SECONDS' | 'SCHEDULE_MIN_AHEAD_SECONDS'
  >,
  quietHours?: QuietHoursHold,
): AcceptedMessage {
  const { type, now, field = 'body' } = input
  const problem =
    recipientProblem(input.body, field) ?? kindProblem(type, input.body as Record<string, unknown>, field)
  if (problem) throw new AppError('VALIDATION_ERROR', problem)
  const body: Record<string, unknown> = { ...input.body }
  for (const key of DELIVERY_OPTION_KEYS) delete body[key]
  const {
    clientReference,
    sendAt,
    validitySeconds,
    priority = 'normal',
    fallbackTemplate,
    timeZone,
  } = input.body
  // A pooled key's `senderId` is judged against its pool (pools/on-accept.ts); any other key's
  // must be its own sender.
  const own = input.apiKey.senderId ?? DEFAULT_SENDER_ID
  if (
    input.body.senderId !== undefined &&
    !input.apiKey.senderPoolId &&
    !sameSender(input.body.senderId, own)
  ) {
    throw senderNotAllowed(field, input.body.senderId)
  }
  if (priority === 'high' && !input.apiKey.transactional) {
    throw new AppError(
      'PRIORITY_NOT_ALLOWED',
      `${field}.priority "high" is for keys an admin marked transactional; send "normal" or "low"`,
    )
  }

  let due = now.getTime()
  if (sendAt !== undefined) {
    const at = Date.parse(sendAt)
    const minAhead = config.SCHEDULE_MIN_AHEAD_SECONDS * 1000
    if (Number.isNaN(at)) throw invalid(`${field}.sendAt`, 'must be a date-time')
    if (at - due < minAhead) {
      throw invalid(`${field}.sendAt`, `must be at least ${config.SCHEDULE_MIN_AHEAD_SECONDS} seconds ahead`)
    }
    if (at - due > SCHEDULE_MAX_AHEAD_MS) throw invalid(`${field}.sendAt`, 'must be at most 35 days ahead')
    due = at
  }
  if (timeZone !== undefined && !isTimeZone(timeZone)) {
    throw invalid(`${field}.timeZone`, 'must be an IANA time zone such as "America/Sao_Paulo"')
  }
  const quiet = input.body.quietHours ?? input.apiKey.quietHours
  const quietProblem =
    input.body.quietHours && quietHoursProblem(input.body.quietHours, `${field}.quietHours`)
  if (quietProblem) throw new AppError('VALIDATION_ERROR', quietProblem)
  const heldUntil =
    quiet && priority !== 'high' ? quietHours?.holdUntil(input.body, quiet, timeZone, due) : undefined
  if (heldUntil !== undefined) due = heldUntil
  const scheduled = sendAt !== undefined || heldUntil !== undefined
  const validity = validitySeconds ?? config.MESSAGE_VALIDITY_SECONDS
  if (validitySeconds !== undefined && validitySeconds < config.MESSAGE_VALIDITY_MIN_SECONDS) {
    throw invalid(`${field}.validitySeconds`, `must be at least ${config.MESSAGE_VALIDITY_MIN_SECONDS}`)
  }

  const traceContext = currentTraceContext()
  // Its shape is MessageJob's by construction from a validated body: accept.test.ts holds every kind
  // and option to the contract (a check here cost 4 µs a request), and the worker checks each job.
  const job = {
    messageId: input.messageId ?? messageIdAt(now.getTime()),
    apiKeyId: input.apiKey.id,
    acceptedAt: now.toISOString(),
    ...(input.apiKey.tenantId ? { tenantId: input.apiKey.tenantId } : {}),
    senderId: input.apiKey.senderId ?? DEFAULT_SENDER_ID,
    priority,
    ...(clientReference === undefined ? {} : { clientReference }),
    ...(input.batchId === undefined ? {} : { batchId: input.batchId }),
    ...(traceContext === undefined ? {} : { traceContext }),
    ...(fallbackTemplate === undefined ? {} : { fallbackTemplate }),
    ...(input.body.fallback === undefined ? {} : { fallback: input.body.fallback }),
    ...(scheduled ? { sendAt: new Date(due).toISOString() } : {}),
    ...(heldUntil === undefined ? {} : { scheduledReason: 'quiet_hours' as const }),
    // The key's `discard` or the send's own: the worker records it without its content.
    ...(input.body.contentRetention === 'discard' || input.apiKey.contentRetentionHours === 0
      ? { discardContent: true as const }
      : input.apiKey.contentRetentionHours
        ? { contentRetentionHours: input.apiKey.contentRetentionHours }
        : {}),
    expiresAt: new Date(due + validity * 1000).toISOString(),
    message: { type, body },
  } as MessageJob
  return {
    job,
    delayMs: scheduled ? due - now.getTime() : 0,
    status: scheduled ? 'scheduled' : 'queued',
  }
}

/** How long a send refused at its key's outstanding bound is told to wait: the queue drains meanwhile. */
export const OUTSTANDING_RETRY_AFTER_SECONDS = 5

/**
 * `429 OUTSTANDING_LIMIT_REACHED`: the key already has its bound of messages queued or scheduled,
 * not yet handed to the platform (Redis runs `noeviction`: one key must not fill it).
 */
export const outstandingLimitReached = (max: number, field?: string) =>
  new AppError(
    'OUTSTANDING_LIMIT_REACHED',
    `${field ? `${field}: ` : ''}The API key has ${max.toLocaleString('en')} messages queued or scheduled, its bound; ` +
      'retry once some are sent, or cancel scheduled ones',
    { 'retry-after': String(OUTSTANDING_RETRY_AFTER_SECONDS) },
  )

/** A scheduled message's time and why, as a 202 tells them; nothing for a message queued at once. */
export const scheduledFields = (job: MessageJob) =>
  job.sendAt === undefined
    ? {}
    : { sendAt: job.sendAt, scheduledReason: job.scheduledReason ?? ('send_at' as const) }
