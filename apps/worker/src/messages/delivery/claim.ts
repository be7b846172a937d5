import type { MessageJob } from '@dispatch/contracts'
import { messageClaimKey, messageClaimTtlMs } from '@dispatch/runtime/message-handoff'
import type { RedisClient } from '@dispatch/runtime/redis'
import { findPriorSend } from './prior-send.ts'
import type { Disposition, MessageDelivery } from './types.ts'

/**
 * Takes the message's claim, which settles any race with a cancel: once a job holds it, a cancel is
 * refused. One command (`SET … NX GET`, Redis ≥ 7): answers who held it before, or null when it was
 * free and is now `as` (`worker` for a message's own job, the bundle's id for a bundle's).
 */
export async function takeClaim(
  claims: RedisClient,
  prefix: string,
  data: MessageJob,
  as = 'worker',
): Promise<string | null> {
  const ttl = messageClaimTtlMs(data.expiresAt, Date.now())
  return claims.set(messageClaimKey(prefix, data.messageId), as, 'PX', ttl, 'NX', 'GET')
}

/** The claim is this run's; `heldBefore`: by an earlier run (or the bundle it takes over), which may have sent it. */
export type Claimed = { kind: 'claimed'; heldBefore: boolean }

/** Step 1: the message's claim, unless a cancel holds it (recorded `canceled`) or another job does. */
export async function claimMessage(delivery: MessageDelivery): Promise<Claimed | Disposition> {
  const { data, run, deps, log } = delivery
  const holder = await takeClaim(deps.claims, deps.prefix, data, run.claimAs)
  if (holder === 'cancel') {
    // A job that may follow another (run again, handed out again) may meet a cancel's claim set
    // after an earlier job sent the message and its claim was released: the record says so first.
    if (run.rerun || data.readmitted === true) {
      const prior = await findPriorSend(delivery)
      if (prior) return prior
    }
    await deps.recorder.record(delivery.outcome('canceled', { attempts: run.attemptsMade }))
    deps.metrics?.canceled(delivery.lane.senderId)
    log.info('message canceled before it was sent')
    return { kind: 'done', result: { outcome: 'canceled' } }
  }
  if (holder !== null && holder !== run.claimAs && holder !== run.takesOver) {
    log.info({ holder }, 'message held by another job; that one delivers it')
    return { kind: 'elsewhere' }
  }
  return { kind: 'claimed', heldBefore: holder !== null }
}
