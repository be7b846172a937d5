import { isUserId, type MessagePricing, WhatsAppStatus, type WhatsAppWebhook } from '@dispatch/contracts'
import { isUuid, type PlatformStatusUpdate } from '@dispatch/db'
import { Compile } from 'typebox/compile'

const isStatus = Compile(WhatsAppStatus)

/**
 * The window a status time must fall in. Meta retries a delivery for up to 7 days, so a month back
 * is generous; an hour ahead allows for clock skew. Outside it the value is garbage (and a far
 * future year is one Postgres refuses), so the item is skipped.
 */
export const STATUS_TIME_AHEAD_MS = 60 * 60 * 1000
export const STATUS_TIME_BACK_MS = 30 * 24 * 60 * 60 * 1000

/** Where a skipped item was, and why; never its values (a wamid encodes the recipient's number). */
export interface SkippedStatus {
  at: string
  reason: string
}

/** The compiled check of one item's contract. */
interface ItemCheck<T> {
  Check(value: unknown): value is T
  Errors(value: unknown): Iterable<{ instancePath?: string; message?: string }>
}

/**
 * Judges one platform item on its own: its shape against `check`, then its time against the
 * window. Answers the item and its time, or the reason to skip it (the rule broken, never a value).
 */
export function judgeItem<T extends { timestamp: string }>(
  check: ItemCheck<T>,
  item: unknown,
  now: Date,
): { item: T; time: Date } | { reason: string } {
  if (!check.Check(item)) {
    const [problem] = check.Errors(item)
    return { reason: `${problem?.instancePath || 'item'} ${problem?.message ?? 'is invalid'}` }
  }
  const time = new Date(Number(item.timestamp) * 1000)
  const offset = time.getTime() - now.getTime()
  if (offset > STATUS_TIME_AHEAD_MS || offset < -STATUS_TIME_BACK_MS) {
    return { reason: `/timestamp ${item.timestamp} is outside the accepted window` }
  }
  return { item, time }
}

/**
 * The updates a delivery carries, each item checked on its own: one bad item (wrong type, missing
 * id, unknown status, time out of the window) is skipped and reported, the others still apply.
 */
export function readStatusUpdates(
  body: WhatsAppWebhook,
  now: Date,
): { updates: PlatformStatusUpdate[]; skipped: SkippedStatus[] } {
  const updates: PlatformStatusUpdate[] = []
  const skipped: SkippedStatus[] = []
  body.entry.forEach((entry, e) => {
    entry.changes.forEach((change, c) => {
      change.value.statuses?.forEach((raw, s) => {
        const at = `entry[${e}].changes[${c}].statuses[${s}]`
        const judged = judgeItem(isStatus, raw, now)
        if ('reason' in judged) {
          skipped.push({ at, reason: judged.reason })
          return
        }
        const { item, time } = judged
        const error = item.errors?.[0]
        const pricing = readPricing(item.pricing)
        const recipient = readRecipient(item)
        const ours = item.biz_opaque_callback_data
        updates.push({
          platformMessageId: item.id,
          ...(ours !== undefined && isUuid(ours) ? { messageId: ours.toLowerCase() } : {}),
          status: item.status,
          at: time,
          ...(pricing ? { pricing } : {}),
          ...(recipient ? { recipient } : {}),
          ...(error
            ? { error: { code: String(error.code), message: error.message ?? error.title ?? '' } }
            : {}),
        })
      })
    })
  })
  return { updates, skipped }
}

const platformPhone = /^[1-9][0-9]{7,14}$/

/**
 * Who the status names: its `recipient_id` (the phone, digits only) and `recipient_user_id` (the
 * BSUID), each when well formed. A message sent to a phone learns the user's BSUID this way, and
 * one sent to a BSUID its phone when Meta gives it.
 */
export function readRecipient(
  item: WhatsAppStatus,
): { phone: string | null; userId: string | null } | undefined {
  const phone =
    item.recipient_id !== undefined && platformPhone.test(item.recipient_id) ? `+${item.recipient_id}` : null
  const userId =
    item.recipient_user_id !== undefined && isUserId(item.recipient_user_id) ? item.recipient_user_id : null
  return phone === null && userId === null ? undefined : { phone, userId }
}

const text = (value: unknown) => (typeof value === 'string' && value.length <= 64 ? value : null)

/** A status's `pricing`, read leniently: Meta's fields as they come, anything unreadable left null. */
export function readPricing(raw: unknown): MessagePricing | undefined {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) return undefined
  const p = raw as Record<string, unknown>
  const pricing = {
    billable: typeof p.billable === 'boolean' ? p.billable : null,
    pricingModel: text(p.pricing_model),
    category: text(p.category),
    type: text(p.type),
  }
  return Object.values(pricing).every((v) => v === null) ? undefined : pricing
}
