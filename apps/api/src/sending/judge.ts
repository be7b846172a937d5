import {
  BATCH_ITEMS,
  DEFAULT_SENDER_ID,
  MESSAGE_TYPES,
  type MessageType,
  Scopes,
  SEND_SCOPE,
} from '@dispatch/contracts'
import { suppressionOwner } from '@dispatch/runtime'
import { AppError } from '../errors.ts'
import { describeValidationError, makeAjv } from '../plugins/validation.ts'
import { type AcceptedMessage, acceptMessage, type SendingKey } from './accept.ts'
import type { Prefetched, SendToCheck } from './checks/send-checks.ts'
import {
  choosePoolSenders,
  earlySticky,
  keepsLikely,
  prefetchSticky,
  readStickyRecords,
} from './pools/on-accept.ts'
import type { Sending } from './sending.ts'

/** One send of a request: its type, its validated body, and its field (`body`, `body.messages[3]`). */
export interface SendItem {
  type: MessageType
  body: AcceptedMessage['job']['message']['body']
  field: string
}

/** What a send comes to: the message to store, or the error that refuses it. */
export type Judged = { accepted: AcceptedMessage } | { error: AppError }

/**
 * Starts a single send's reads for the checks (its window, its suppression entry) before the
 * request's other steps (the idempotency claim, the rate limit), so their round trip overlaps the
 * limit's instead of following it: `judge` (through `submit`) takes them as `prefetched`.
 */
export const prefetchChecks = (
  sending: Pick<Sending, 'checks' | 'pools' | 'sticky' | 'log'>,
  key: SendingKey,
  type: MessageType,
  body: unknown,
): Prefetched | undefined => {
  if (key.senderPoolId) {
    // The number is chosen from the recipient's sticky record, read now; the checks' reads are
    // started for the number the spread gives them (most recipients'), in the same round trip, and
    // used only if that is the number chosen.
    const sticky = prefetchSticky(sending, key, body)
    if (!sticky) return undefined
    // The recipient's entries on the pool's other numbers too, in the same MGET (consent.md, "Sender pools").
    const early = sending.checks.prefetch(
      sticky.likely,
      body,
      type,
      suppressionOwner({ apiKeyId: key.id, tenantId: key.tenantId }),
      poolNumbers(sending, key),
    )
    const prefetched: Prefetched = early ?? { recipient: sticky.recipient }
    prefetched.senderId = sticky.likely
    prefetched.sticky = sticky
    return prefetched
  }
  return sending.checks.prefetch(
    key.senderId ?? DEFAULT_SENDER_ID,
    body,
    type,
    suppressionOwner({ apiKeyId: key.id, tenantId: key.tenantId }),
  )
}

/**
 * Every rule a send must pass before it is stored, in the order a caller meets them: its delivery
 * options (`sendAt`, `validitySeconds`, `priority`), then what Dispatch knows the platform would
 * refuse (the sender's templates and, under `enforce`, the recipient's window). One answer per
 * item; the send, batch and validate routes all judge through here, so they answer alike.
 */
export async function judge(
  sending: Pick<Sending, 'config' | 'checks' | 'quietHours' | 'pools' | 'sticky' | 'log'>,
  key: SendingKey,
  items: SendItem[],
  options: {
    now: Date
    batchId?: string | undefined
    prefetched?: Prefetched | undefined
    /** Each item's message id, given by the caller (a campaign's rows); else new ones. */
    messageIds?: string[] | undefined
    /** Wait for room under the messaging limit whatever the sender's policy (a campaign's sends). */
    holdAtLimit?: boolean | undefined
  },
): Promise<Judged[]> {
  const accept = (item: SendItem, i: number, messageId = options.messageIds?.[i]): Judged => {
    try {
      return {
        accepted: acceptMessage(
          {
            ...item,
            apiKey: key,
            now: options.now,
            ...(options.batchId ? { batchId: options.batchId } : {}),
            ...(messageId ? { messageId } : {}),
          },
          sending.config,
          sending.quietHours,
        ),
      }
    } catch (error) {
      if (!(error instanceof AppError)) throw error
      return { error }
    }
  }
  const judged: Judged[] = items.map((item, i) => accept(item, i))
  const open = judged.flatMap((j, i) => ('accepted' in j ? [i] : []))
  if (open.length === 0) return judged
  if (key.senderPoolId) {
    const now = options.now.getTime()
    const early = earlySticky(sending, key, items, open, options.prefetched?.sticky)
    if (early) {
      // A single send whose record is being read: checked against the spread's number (its early
      // reads were made for it) while the record lands in the same round trip, so it waits no
      // more than a single-sender key's send. Only a recipient who sticks to another number is
      // accepted again (the same id) and checked against that one.
      const i = open[0] as number
      ;(judged[i] as { accepted: AcceptedMessage }).accepted.job.senderId = early.likely
      await checkSends(sending, key, items, judged, open, options)
      const record = (early.settled ? early.record : await early.wait()) ?? undefined
      const checked = judged[i] as Judged
      const message = 'accepted' in checked ? checked.accepted : undefined
      if (keepsLikely(sending, key, early, record, message, now)) return judged
      judged[i] = accept(items[i] as SendItem, i, message?.job.messageId)
      if (!('accepted' in (judged[i] as Judged))) return judged
      choosePoolSenders(sending, key, judged, items, open, now, [record])
      await checkSends(sending, key, items, judged, open, options)
      return judged
    }
    const records = await readStickyRecords(sending, key, items, open, now, options.prefetched?.sticky)
    choosePoolSenders(sending, key, judged, items, open, now, records)
  }
  await checkSends(sending, key, items, judged, open, options)
  return judged
}

/**
 * The checks of every accepted send, each against the number it goes through: a send refused is
 * given its error in `judged`; one let through gets what its checks add to its job (its window
 * under a counted limit, the sender's default fallback, its marketing mark).
 */
async function checkSends(
  sending: Pick<Sending, 'checks' | 'pools'>,
  key: SendingKey,
  items: SendItem[],
  judged: Judged[],
  open: number[],
  options: { now: Date; prefetched?: Prefetched | undefined; holdAtLimit?: boolean | undefined },
): Promise<void> {
  // Each send is checked against the rules of the number it goes through (a pool's sends, against
  // the number chosen for each): one group for a key's own sender.
  const bySender = Map.groupBy(
    open.filter((i) => 'accepted' in (judged[i] as Judged)),
    (i) => (judged[i] as { accepted: AcceptedMessage }).accepted.job.senderId as string,
  )
  const mayFallBack = key.scopes?.includes(Scopes.sendSmsFallback) === true
  // A pooled key's opt-outs hold on every number of its pool: a recipient who opted out on one
  // member, or whom the key's tenant suppressed (on the key's own sender, a member), hears from none.
  // An opt-out on any of them since stops it at delivery too, wherever it was moved: the worker
  // reads its pool's numbers itself (the job carries its pool's id, not its numbers).
  const numbers = options.prefetched?.poolNumbers ?? poolNumbers(sending, key)
  const checkGroup = async (senderId: string, group: number[]) => {
    const sends = group.map((i) => items[i] as SendToCheck)
    // A pooled send's early reads were made for one number: used only when it is the one chosen.
    const prefetched =
      options.prefetched?.senderId === undefined || options.prefetched.senderId === senderId
        ? options.prefetched
        : undefined
    // Under a counted messaging limit, the templates' windows for their jobs: a single send's read
    // early, the others' in the same turn as the checks' reads (one MGET for both).
    const early = prefetched?.limitWindow
    const closing = early ? undefined : sending.checks.windowsClosing(senderId, sends)
    const refused = await sending.checks.check(
      senderId,
      sends,
      options.now.getTime(),
      prefetched,
      suppressionOwner({ apiKeyId: key.id, tenantId: key.tenantId }),
      options.holdAtLimit === true,
      numbers,
    )
    const closesAt = closing && (await closing)
    // The sender's default fallback, on the sends that carry none, for a key that may ask for one.
    const defaultFallback = mayFallBack ? sending.checks.defaultFallback(senderId) : null
    refused.forEach((error, n) => {
      const i = group[n] as number
      if (error) {
        judged[i] = { error }
        return
      }
      const { job } = (judged[i] as { accepted: AcceptedMessage }).accepted
      const windowClosesAt = early ? early.closesAt : closesAt?.[n]
      if (windowClosesAt !== undefined) job.windowClosesAt = windowClosesAt
      if (defaultFallback && !job.fallback) job.fallback = defaultFallback
      // Carried on the job: an opt-out of marketing made before delivery cancels it then.
      if (sending.checks.isMarketing(senderId, items[i] as SendToCheck)) job.marketing = true
    })
  }
  const [only] = bySender
  if (bySender.size === 1 && only) await checkGroup(...only)
  else await Promise.all([...bySender].map(([senderId, group]) => checkGroup(senderId, group)))
}

/**
 * The numbers of a pooled key's pool, whose opt-outs block its sends (docs/consent.md, "Sender
 * pools"); its own sender is one of them (binding a key to a pool makes it a member, and a member
 * that is a bound key's sender cannot leave). Undefined for a key without a pool this process knows.
 */
function poolNumbers(sending: Pick<Sending, 'pools'>, key: SendingKey): readonly string[] | undefined {
  return key.senderPoolId ? sending.pools.get(key.senderPoolId)?.numbers : undefined
}

/** The scopes a batch item (or its dry run) may ask for: its type's, and the fallback's when it has one. */
export const SEND_ITEM_SCOPES: readonly string[] = [
  ...new Set(Object.values(SEND_SCOPE)),
  Scopes.sendSmsFallback,
]

/**
 * A send carrying `fallback` (an SMS, docs/fallback.md) needs `send:sms-fallback` beside its type's
 * scope: `403 INSUFFICIENT_SCOPE` naming the field otherwise.
 */
export function requireFallbackScope(body: unknown, scopes: string[], field: string): void {
  if ((body as { fallback?: unknown } | null)?.fallback === undefined) return
  if (scopes.includes(Scopes.sendSmsFallback)) return
  throw new AppError(
    'INSUFFICIENT_SCOPE',
    `The API key lacks the "${Scopes.sendSmsFallback}" scope for ${field}.fallback`,
  )
}

/** Each item type's own check, as the single sends have it. */
const ajv = makeAjv(false)
const ITEM_CHECKS = Object.fromEntries(
  MESSAGE_TYPES.map((type) => [type, ajv.compile(BATCH_ITEMS[type])]),
) as Record<MessageType, ReturnType<typeof ajv.compile>>
const TYPE_LIST = MESSAGE_TYPES.map((type) => `"${type}"`).join(', ')
const isType = (type: unknown): type is MessageType =>
  typeof type === 'string' && Object.hasOwn(ITEM_CHECKS, type)

/**
 * One item of a batch (`{type, ...that send's body}`) as a send: its shape and the key's scope for
 * its type checked on their own, so one bad item is answered in its result, not the whole request's.
 */
export function readSendItem(item: unknown, field: string, scopes: string[]): SendItem {
  const { type, ...body } = (item ?? {}) as { type?: unknown }
  if (!isType(type)) {
    throw new AppError('VALIDATION_ERROR', `${field}.type must be one of ${TYPE_LIST}`)
  }
  const check = ITEM_CHECKS[type]
  if (!check(item)) throw new AppError('VALIDATION_ERROR', describeValidationError(field, check.errors?.[0]))
  const scope = SEND_SCOPE[type]
  if (!scopes.includes(scope)) {
    throw new AppError('INSUFFICIENT_SCOPE', `The API key lacks the "${scope}" scope for ${field}`)
  }
  requireFallbackScope(body, scopes, field)
  return { type, body: body as SendItem['body'], field }
}

/**
 * Items of a request (`{type, ...body}` each) answered one by one: first their shape and scope
 * (`readSendItem`), then `answer` (`judge` or `submit`) for those that pass. One answer per item,
 * in order; an item refused at reading is answered with its error.
 */
export async function answerEachItem<Answer>(
  items: unknown[],
  fieldOf: (index: number) => string,
  scopes: string[],
  answer: (sends: SendItem[]) => Promise<Answer[]>,
): Promise<Array<Answer | { error: AppError }>> {
  const read = items.map((item, index) => {
    try {
      return readSendItem(item, fieldOf(index), scopes)
    } catch (error) {
      if (!(error instanceof AppError)) throw error
      return error
    }
  })
  const answers = await answer(read.filter((item): item is SendItem => !(item instanceof AppError)))
  let next = 0
  return read.map((item) => (item instanceof AppError ? { error: item } : (answers[next++] as Answer)))
}
