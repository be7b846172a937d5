/**
 * A sender pool's sticky record (docs/failover.md, "How stickiness is kept"): which of the pool's
 * numbers last spoke with a recipient, and when the recipient last wrote to it (their window).
 *
 * One small string per pool and recipient, `<senderId> <last inbound ms, 0: none>`, expiring
 * `POOL_STICKY_TTL_DAYS` after it was last written (a change of number, a reply). A string, not a
 * field of a pool's hash: a send reads it in the MGET its turn of the event loop already makes
 * (`turnBatchedGet`), so the lookup costs no command of its own, and Redis expires each record on
 * its own. Not hash-tagged: a big pool's recipients spread over a Cluster's slots.
 */
export const poolStickyKey = (prefix: string, poolId: string, recipient: string) =>
  `${prefix}:pool-sticky:${poolId}:${recipient}`

/** A recipient's record in a pool. */
export interface StickyRecord {
  senderId: string
  /** The recipient's last message to that number (ms); 0: never (or not since it became theirs). */
  inboundAt: number
}

export const encodeSticky = (record: StickyRecord) => `${record.senderId} ${record.inboundAt}`

export function decodeSticky(value: string | null | undefined): StickyRecord | undefined {
  if (!value) return undefined
  const space = value.lastIndexOf(' ')
  if (space <= 0) return undefined
  const inboundAt = Number(value.slice(space + 1))
  return { senderId: value.slice(0, space), inboundAt: Number.isFinite(inboundAt) ? inboundAt : 0 }
}
