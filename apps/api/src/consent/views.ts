import type { SuppressionStatus, SuppressionView } from '@dispatch/contracts'
import type { SuppressionRow } from '@dispatch/db'
import { EVERY_KEY, widerScope } from '@dispatch/runtime'

export const toSuppressionView = (row: SuppressionRow): SuppressionView => ({
  id: row.id,
  senderId: row.senderId,
  phoneNumberId: row.phoneNumberId,
  recipient: row.recipient,
  scope: row.scope,
  source: row.source,
  reason: row.reason,
  tenantId: row.tenantId,
  apiKeyId: row.apiKeyId,
  createdAt: row.createdAt.toISOString(),
})

/**
 * Whether a recipient is blocked for the asking key: the entries that block it (the recipient's own
 * and its tenant's, as `ofRecipient` reads them), ids and reasons only on its own.
 */
export function toSuppressionStatus(recipient: string, rows: SuppressionRow[]): SuppressionStatus {
  const scope = rows.reduce<string | null>((wider, row) => widerScope(wider, row.scope), null)
  return {
    recipient,
    blocked: scope !== null,
    scope: scope as SuppressionStatus['scope'],
    entries: rows.map((row) => {
      const mine = row.owner !== EVERY_KEY
      return {
        scope: row.scope,
        source: row.source,
        owner: mine ? 'tenant' : 'recipient',
        senderId: row.senderId,
        id: mine ? row.id : null,
        reason: mine ? row.reason : null,
        createdAt: row.createdAt.toISOString(),
      }
    }),
  }
}
