import { DEFAULT_SENDER_ID, type MessageView, type SenderChangedView } from '@dispatch/contracts'
import { type MessageRow, type MessageSenderChange, owned } from '@dispatch/db'
import type { ApiDeps } from '../deps.ts'

/** A key's message's latest move to another pool member (docs/sender-pools.md), through the owned layer. */
export const ownSenderChange = (
  deps: Pick<ApiDeps, 'db'>,
  apiKey: { id: string; senderId: string | null; tenantId?: string | null },
  row: MessageRow,
) =>
  owned(deps.db, {
    apiKeyId: apiKey.id,
    tenantId: apiKey.tenantId ?? null,
    senderId: apiKey.senderId ?? DEFAULT_SENDER_ID,
  }).messages.senderChange(row)

/** A recorded move (its `message_attempts` row) as views say it. */
export const senderChangedView = (change: MessageSenderChange): SenderChangedView => ({
  from: change.from,
  to: change.to,
  at: change.at.toISOString(),
  reason: change.reason,
})

/**
 * The view with its latest move to another pool member (docs/sender-pools.md), when it was moved
 * (a timeline's `history.senderChanges.at(-1)`); never moved, the view as it was.
 */
export function withSenderChange<View extends MessageView>(
  view: View,
  latest: MessageSenderChange | undefined,
): View {
  return latest ? { ...view, senderChanged: senderChangedView(latest) } : view
}
