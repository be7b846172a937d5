/**
 * A sender pool's sticky record (docs/failover.md, "How stickiness is kept"): which of the pool's
 * numbers last spoke with each recipient, and when the recipient last wrote to it (their window).
 *
 * One Redis hash per pool and **generation**: field the recipient (E.164 phone or BSUID), value
 * `<senderId> <last inbound ms, 0: none>`. A generation is `POOL_STICKY_TTL_DAYS` long; a record is
 * written into the current one and read from the current one, else the previous one (then copied
 * forward). Each generation's hash expires at the end of the next one, so a recipient nobody wrote
 * to or heard from for one to two generations is forgotten (and spread afresh), with no sweeper
 * and no per-field expiry (Redis 7.0). The pool's id is the keys' hash tag: on a Cluster both
 * generations of a pool sit in one slot.
 */
export const stickyGeneration = (nowMs: number, ttlMs: number) => Math.floor(nowMs / ttlMs)

export const poolStickyKey = (prefix: string, poolId: string, generation: number) =>
  `${prefix}:pool-sticky:{${poolId}}:${generation}`

/** When a generation's hash goes: the end of the generation after it. */
export const stickyExpiresAt = (generation: number, ttlMs: number) => (generation + 2) * ttlMs

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
