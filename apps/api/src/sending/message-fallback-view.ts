import { DEFAULT_SENDER_ID, type FallbackView, type MessageView } from '@dispatch/contracts'
import { type MessageFallbackRow, owned } from '@dispatch/db'
import type { ApiDeps } from '../deps.ts'

/** A key's message's channel fallback (docs/fallback.md), through the owned layer. */
export const ownFallback = (
  deps: Pick<ApiDeps, 'db'>,
  apiKey: { id: string; senderId: string | null; tenantId?: string | null },
  messageId: string,
) =>
  owned(deps.db, {
    apiKeyId: apiKey.id,
    tenantId: apiKey.tenantId ?? null,
    senderId: apiKey.senderId ?? DEFAULT_SENDER_ID,
  }).messages.fallback(messageId)

/**
 * The view with its fallback, once one was decided, and its channel then: `sms` once the
 * fallback's SMS went (the provider took it), else `whatsapp`. No fallback, neither: the message is
 * WhatsApp's, as every view without them says (the lists' among them, which read no fallback).
 */
export function withFallback<View extends MessageView>(
  view: View,
  row: MessageFallbackRow | undefined,
  message: { deliveredAt?: Date | null },
): View {
  if (!row) return view
  // WhatsApp's delivery, whenever it was reported: before the call (withdrawn), after the SMS, or
  // after the message failed (its status stays `failed`).
  const delivered = message.deliveredAt ? { whatsappDeliveredAt: message.deliveredAt.toISOString() } : {}
  const fallback: FallbackView = {
    channel: 'sms',
    reason: row.reason,
    reasonCode: row.reasonCode,
    at: row.decidedAt.toISOString(),
    state: row.state,
    status: row.providerStatus,
    error: row.errorCode ? { code: row.errorCode, message: row.errorMessage ?? '' } : null,
    ...delivered,
    ...(row.price !== null && row.priceUnit !== null
      ? { price: { amount: row.price, currency: row.priceUnit } }
      : {}),
  }
  return { ...view, channel: row.state === 'sent' ? 'sms' : 'whatsapp', fallback }
}
