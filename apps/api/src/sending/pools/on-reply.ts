import type { PoolSending } from './on-accept.ts'
import type { StickyWrite } from './sticky.ts'

/** What a reply tells the pools: who wrote, to which number, when. */
export interface PoolReply {
  phoneNumberId: string
  phone: string | null
  userId: string | null
  receivedAt: Date
}

/**
 * A user who writes to a pool's number sticks to it, their window with it open from the reply's
 * time (docs/sender-pools.md, "Replies"): in every pool the number is in, for each identity they are
 * known by (phone and BSUID). Best effort, as the window's copy in Redis: the webhook answers 200
 * whatever Redis says, and a record missed only lets the next send be chosen afresh.
 */
export async function stickToRepliedNumbers(
  sending: PoolSending,
  replies: readonly PoolReply[],
  now: number,
): Promise<void> {
  const writes: StickyWrite[] = []
  for (const reply of replies) {
    const senderId = sending.pools.memberOfNumber(reply.phoneNumberId)
    if (senderId === undefined) continue
    for (const pool of sending.pools.poolsOf(senderId)) {
      for (const recipient of [reply.phone, reply.userId]) {
        if (recipient === null) continue
        writes.push({
          poolId: pool.id,
          recipient,
          senderId,
          inboundAt: reply.receivedAt.getTime(),
          writtenAt: now,
        })
      }
    }
  }
  if (writes.length === 0) return
  try {
    await sending.sticky.write(writes, now)
  } catch (error) {
    sending.log.warn({ err: error, replies: writes.length }, 'sticky senders of replies not written')
  }
}
