import { randomUUID } from 'node:crypto'
import {
  DEFAULT_SENDER_ID,
  DELIVERY_OPTION_KEYS,
  type FallbackTemplate,
  kindProblem,
  MessageJob,
  type MessagePriority,
  type MessageType,
  recipientProblem,
} from '@dispatch/contracts'
import { Compile } from 'typebox/compile'
import type { ApiConfig } from '../../env.ts'
import { AppError } from '../../errors.ts'
import { currentTraceContext } from '../../trace-context.ts'

/** The farthest ahead a message may be scheduled. */
export const SCHEDULE_MAX_AHEAD_MS = 35 * 24 * 3600 * 1000

const jobIsValid = Compile(MessageJob)

/** A send the API accepted: its job, and how long the queue holds it back (scheduled ones). */
export interface AcceptedMessage {
  job: MessageJob
  delayMs: number
  status: 'queued' | 'scheduled'
}

type SendBody = {
  phone?: string | undefined
  userId?: string | undefined
  clientReference?: string
  sendAt?: string
  validitySeconds?: number
  priority?: MessagePriority
  fallbackTemplate?: FallbackTemplate
}

/** What the accept step needs of the calling key. */
export interface SendingKey {
  id: string
  /** Its sender; null: the default. */
  senderId: string | null
  transactional: boolean
}

const invalid = (field: string, why: string) => new AppError('VALIDATION_ERROR', `${field} ${why}`)

/**
 * Turns a validated send body into its job: the delivery options (`clientReference`, `sendAt`,
 * `validitySeconds`, `priority`) go beside the message, never into the body the platform gets. Throws `400`
 * naming the field when `sendAt` or `validitySeconds` is out of range for this configuration, and
 * `403` for `priority: "high"` from a key not marked transactional;
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
  },
  config: Pick<
    ApiConfig,
    'MESSAGE_VALIDITY_SECONDS' | 'MESSAGE_VALIDITY_MIN_SECONDS' | 'SCHEDULE_MIN_AHEAD_SECONDS'
  >,
): AcceptedMessage {
  const { type, now, field = 'body' } = input
  const problem =
    recipientProblem(input.body, field) ?? kindProblem(type, input.body as Record<string, unknown>, field)
  if (problem) throw new AppError('VALIDATION_ERROR', problem)
  const body: Record<string, unknown> = { ...input.body }
  for (const key of DELIVERY_OPTION_KEYS) delete body[key]
  const { clientReference, sendAt, validitySeconds, priority = 'normal', fallbackTemplate } = input.body
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
  const validity = validitySeconds ?? config.MESSAGE_VALIDITY_SECONDS
  if (validitySeconds !== undefined && validitySeconds < config.MESSAGE_VALIDITY_MIN_SECONDS) {
    throw invalid(`${field}.validitySeconds`, `must be at least ${config.MESSAGE_VALIDITY_MIN_SECONDS}`)
  }

  const traceContext = currentTraceContext()
  const job = {
    messageId: randomUUID(),
    apiKeyId: input.apiKey.id,
    acceptedAt: now.toISOString(),
    senderId: input.apiKey.senderId ?? DEFAULT_SENDER_ID,
    priority,
    ...(clientReference === undefined ? {} : { clientReference }),
    ...(input.batchId === undefined ? {} : { batchId: input.batchId }),
    ...(traceContext === undefined ? {} : { traceContext }),
    ...(fallbackTemplate === undefined ? {} : { fallbackTemplate }),
    ...(sendAt === undefined ? {} : { sendAt: new Date(due).toISOString() }),
    expiresAt: new Date(due + validity * 1000).toISOString(),
    message: { type, body },
  }
  if (!jobIsValid.Check(job)) throw new Error(`message job does not match its contract: ${job.messageId}`)
  return {
    job,
    delayMs: sendAt === undefined ? 0 : due - now.getTime(),
    status: sendAt === undefined ? 'queued' : 'scheduled',
  }
}
