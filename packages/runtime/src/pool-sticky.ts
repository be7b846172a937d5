/**
 * A sender pool's sticky record (docs/sender-pools.md, "How stickiness is kept"): which of the pool's
 * numbers last spoke with a recipient, when the recipient last wrote to it (their window), and when
 * the record was last written.
 *
 * One small string per pool and recipient, `<senderId> <last inbound ms, 0: none> <written ms>`,
 * expiring twice `POOL_STICKY_TTL_DAYS` after it was last written (a change of number, a reply, or
 * a send once it is `POOL_STICKY_TTL_DAYS` old: `stickyLifeMs`, `stickyAging`). A string, not a
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
  /**
   * When the record was last written (ms): its expiry counts from then. 0: unknown (a record
   * written before the layout kept it), which `stickyAging` takes as old.
   */
  writtenAt: number
}

export const encodeSticky = (record: StickyRecord) =>
  `${record.senderId} ${record.inboundAt} ${record.writtenAt}`

/** A record as stored, or undefined for none (or one that cannot be read). Sender ids hold no space. */
export function decodeSticky(value: string | null | undefined): StickyRecord | undefined {
  if (!value) return undefined
  const first = value.indexOf(' ')
  if (first <= 0) return undefined
  const second = value.indexOf(' ', first + 1)
  const inboundAt = Number(value.slice(first + 1, second < 0 ? undefined : second))
  const writtenAt = second < 0 ? 0 : Number(value.slice(second + 1))
  return {
    senderId: value.slice(0, first),
    inboundAt: Number.isFinite(inboundAt) ? inboundAt : 0,
    writtenAt: Number.isFinite(writtenAt) ? writtenAt : 0,
  }
}

/**
 * How long a record lives from its write: twice `POOL_STICKY_TTL_DAYS` (`ttlMs`), so that with the
 * rewrite below a recipient is remembered at least `ttlMs` after the last send to them or reply
 * from them, and at most twice that.
 */
export const stickyLifeMs = (ttlMs: number) => 2 * ttlMs

/**
 * Whether a record a send keeps is written again: once less than `ttlMs` of its life is left (it
 * is `ttlMs` old). A recipient sent to at least that often never loses their number to the expiry
 * (and is never spread afresh mid-conversation), at one write per recipient per `ttlMs`; a send to
 * a younger record writes nothing.
 */
export const stickyAging = (record: StickyRecord, ttlMs: number, now: number) =>
  now - record.writtenAt >= ttlMs
