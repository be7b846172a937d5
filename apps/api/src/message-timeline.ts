import { errorMeaning, type SenderChangedView, type TimelineEntry } from '@dispatch/contracts'
import type { MessageHistory, MessageRow } from '@dispatch/db'
import { senderChangedView } from './sending/sender-change-view.ts'

const iso = (date: Date) => date.toISOString()
const withMeaning = (code: string, message: string | null) => {
  const meaning = errorMeaning(code)
  return `${code}${message ? `: ${message}` : ''}${meaning && meaning !== message ? ` (${meaning})` : ''}`
}

/** How every message's life starts: accepted, and scheduled when it waits for a time. */
export function openingEntries(
  acceptedAt: string,
  sendAt: string | null,
  quietHours: boolean,
): TimelineEntry[] {
  const entries: TimelineEntry[] = [{ at: acceptedAt, kind: 'accepted', summary: 'Accepted (202)' }]
  if (sendAt) {
    const why = quietHours ? ' (the recipient’s quiet hours)' : ''
    entries.push({ at: acceptedAt, kind: 'scheduled', summary: `Scheduled for ${sendAt}${why}`, sendAt })
  }
  return entries
}

/**
 * A move to another pool member (docs/sender-pools.md, "Messages waiting on a fallen number"),
 * from its record or, before the message has one, from its job.
 */
export const senderChangedEntry = (change: SenderChangedView): TimelineEntry => ({
  at: change.at,
  kind: 'sender_changed',
  summary: `Moved from sender ${change.from} to ${change.to}: ${change.from} left its pool's rotation (${change.reason})`,
  senderChanged: change,
})

const REASONS: Record<string, string> = {
  whatsapp_undeliverable: 'WhatsApp could not deliver it',
  expired: 'it expired before it went',
  not_delivered_in_time: 'WhatsApp reported no delivery in time',
}

/** Its channel fallback's steps (docs/fallback.md): decided, the SMS taken or not, the provider's last report. */
function fallbackEntries(fallback: NonNullable<MessageHistory['fallback']>): TimelineEntry[] {
  const why = `${REASONS[fallback.reason] ?? fallback.reason}${fallback.reasonCode ? ` (${fallback.reasonCode})` : ''}`
  const entries: TimelineEntry[] = [
    { at: iso(fallback.decidedAt), kind: 'fallback_decided', summary: `SMS fallback decided: ${why}` },
  ]
  const settled = fallback.settledAt && iso(fallback.settledAt)
  const error = fallback.errorCode ? { errorCode: fallback.errorCode } : {}
  const failure = fallback.errorCode
    ? `: ${fallback.errorCode}${fallback.errorMessage ? ` ${fallback.errorMessage}` : ''}`
    : ''
  if (settled && fallback.state === 'sent') {
    const sid = fallback.providerMessageId ? ` (${fallback.providerMessageId})` : ''
    entries.push({
      at: settled,
      kind: 'fallback_sent',
      summary: `SMS sent through ${fallback.provider}${sid}`,
    })
  } else if (settled && fallback.state === 'withdrawn') {
    entries.push({
      at: settled,
      kind: 'fallback_not_sent',
      summary: 'SMS not sent: WhatsApp delivered it first',
    })
  } else if (settled && (fallback.state === 'failed' || fallback.state === 'unknown')) {
    const summary =
      fallback.state === 'failed'
        ? `SMS not sent${failure}`
        : `SMS may have been sent (never sent again)${failure}`
    entries.push({ at: settled, kind: 'fallback_not_sent', summary, ...error })
  }
  // The provider's reports since its first answer (which the `sent` entry stands for).
  const reported = fallback.providerStatusAt?.getTime() !== fallback.settledAt?.getTime()
  if (fallback.providerStatus && fallback.providerStatusAt && fallback.state === 'sent' && reported) {
    const failing = fallback.providerStatus === 'undelivered' || fallback.providerStatus === 'failed'
    entries.push({
      at: iso(fallback.providerStatusAt),
      kind: 'fallback_delivery',
      summary: `SMS ${fallback.providerStatus}, as the provider reports it${failing ? failure : ''}`,
      ...(failing ? error : {}),
    })
  }
  return entries
}

/**
 * A message's whole life, oldest first: accepted, scheduled, each attempt that met an error, each
 * move to another pool member, sent, delivered, read or its end, each admin retry, and each webhook
 * event with its delivery attempts.
 * Built from the message's record and what was written beside it; nothing here is recomputed.
 */
export function timelineOf(row: MessageRow, history: MessageHistory): TimelineEntry[] {
  const entries = openingEntries(iso(row.acceptedAt), row.sendAt && iso(row.sendAt), row.heldForQuietHours)
  for (const attempt of history.attempts) {
    // A final outcome's own entry below says how it ended; its attempt says why.
    entries.push({
      at: iso(attempt.createdAt),
      kind: 'attempt_failed',
      summary: `Attempt ${attempt.attempt} failed: ${withMeaning(attempt.errorCode, attempt.errorMessage)}`,
      errorCode: attempt.errorCode,
      attempt: attempt.attempt,
    })
  }
  for (const change of history.senderChanges) entries.push(senderChangedEntry(senderChangedView(change)))
  for (const retry of history.retries) {
    entries.push({ at: iso(retry.createdAt), kind: 'retried', summary: `Retried by admin ${retry.actor}` })
  }
  // WhatsApp's delivered or read reported after the message failed: recorded beside `failed`,
  // which stays (docs/fallback.md, "WhatsApp's word after the fallback").
  const afterFailure = (at: Date | null) =>
    row.status === 'failed' && row.failedAt !== null && at !== null && at > row.failedAt
      ? ', reported by WhatsApp after the message failed (its status stays failed)'
      : ''
  const ends: Array<[Date | null, TimelineEntry['kind'], string]> = [
    [
      row.sentAt,
      'sent',
      `Sent${row.platformMessageId ? ` (${row.platformMessageId})` : ''}${row.fallbackUsed ? ', as its fallback template' : ''}`,
    ],
    [row.deliveredAt, 'delivered', `Delivered to the phone${afterFailure(row.deliveredAt)}`],
    [row.readAt, 'read', `Read by the recipient${afterFailure(row.readAt)}`],
    [
      row.failedAt,
      'failed',
      `Failed${row.lastErrorCode ? `: ${withMeaning(row.lastErrorCode, row.lastErrorMessage)}` : ''}`,
    ],
    [row.expiredAt, 'expired', 'Expired: not handed to the platform within its validity'],
    [row.canceledAt, 'canceled', `Canceled${row.lastErrorCode ? ` (${row.lastErrorCode})` : ''}`],
  ]
  for (const [at, kind, summary] of ends) {
    if (at)
      entries.push({
        at: iso(at),
        kind,
        summary,
        ...(kind === 'failed' && row.lastErrorCode ? { errorCode: row.lastErrorCode } : {}),
      })
  }
  if (history.fallback) entries.push(...fallbackEntries(history.fallback))
  for (const event of history.events) {
    entries.push({
      at: iso(event.createdAt),
      kind: 'webhook_event',
      summary: `Event ${event.type}`,
      eventId: event.id,
    })
  }
  for (const delivery of history.deliveries) {
    const outcome =
      delivery.statusCode !== null && delivery.statusCode >= 200 && delivery.statusCode < 300
        ? `answered ${delivery.statusCode}`
        : `failed: ${delivery.error ?? `answered ${delivery.statusCode}`}`
    entries.push({
      at: iso(delivery.createdAt),
      kind: 'webhook_attempt',
      summary: `Webhook to ${delivery.url}, attempt ${delivery.attempt}, ${outcome} in ${delivery.durationMs} ms`,
      eventId: delivery.eventId,
      endpointId: delivery.endpointId,
      statusCode: delivery.statusCode,
    })
  }
  // Stable: entries of one instant keep the order they were added in (the order things happen).
  return entries
    .map((entry, index) => ({ entry, index }))
    .sort((a, b) => Date.parse(a.entry.at) - Date.parse(b.entry.at) || a.index - b.index)
    .map(({ entry }) => entry)
}
