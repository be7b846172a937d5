import { type SuppressionOwner, suppressionOwner } from '@dispatch/runtime'

/**
 * Who a key route acts for: the key, its tenant (null: none bound), and the sender it sends
 * through. Everything a key route reads or changes goes through `owned(db, caller)`, whose every
 * query carries the caller's filter; the unscoped functions of `queries/` are for admin routes
 * (audited) and the workers.
 */
export interface Caller {
  apiKeyId: string
  tenantId: string | null
  senderId: string
  /**
   * A pooled key's pool's members (its own sender among them): its sends may go through any of
   * them, so its owner's suppression entries there (which block its sends) are its to list, read
   * and lift, and their template catalogs its to list. Absent: its sender only.
   */
  poolSenderIds?: readonly string[]
}

/**
 * The senders the caller's sends may go through, whose suppression entries (its owner's) and
 * template catalogs are its: its own and, for a pooled key, its pool's members (each once).
 */
export const sendersOf = (caller: Pick<Caller, 'senderId' | 'poolSenderIds'>): string[] => [
  ...new Set([caller.senderId, ...(caller.poolSenderIds ?? [])]),
]

/** The caller's owner of suppression entries: its tenant, or the key itself without one. */
export const ownerOf = (caller: Caller): SuppressionOwner =>
  suppressionOwner({ apiKeyId: caller.apiKeyId, tenantId: caller.tenantId })
