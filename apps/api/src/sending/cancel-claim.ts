import { messageClaimKey, messageClaimTtlMs } from '@dispatch/runtime/message-handoff'
import type { ApiDeps } from '../deps.ts'
import { AppError, unavailable } from '../errors.ts'
import type { Log } from './log.ts'

/** A message a worker has taken, or ended, is no longer the cancel's. */
export const tooLate = (status: string) =>
  new AppError(
    'INVALID_STATE_TRANSITION',
    `The message is ${status}: only a queued or scheduled message can be canceled`,
  )

/** A cancel's hold on a message's claim: set by this call, or found set by an earlier cancel. */
export interface CancelClaim {
  /** This call set it: a cancel that fails after is to give it back. */
  won: boolean
  /** Deletes the claim if this call set it; a delete that fails is let go (the claim expires). */
  giveBack(): Promise<void>
}

/**
 * The cancel's step in the message's claim (message-claims.ts), for the key's cancel and the
 * admin's alike: set once (`NX`) for as long as the message can be taken, so a worker coming after
 * never sends it. Held by a worker: `409` (`tooLate`). Held by a cancel already: taken, and the
 * cancel answers as that one did. Redis unreachable: `503`, nothing held.
 */
export async function takeCancelClaim(
  deps: Pick<ApiDeps, 'redis' | 'config'>,
  messageId: string,
  expiresAt: string | undefined,
  log: Log,
): Promise<CancelClaim> {
  const { redis } = deps
  const key = messageClaimKey(deps.config.QUEUE_PREFIX, messageId)
  let won: boolean
  let holder: string | null
  try {
    won = (await redis.set(key, 'cancel', 'PX', messageClaimTtlMs(expiresAt, Date.now()), 'NX')) === 'OK'
    holder = won ? 'cancel' : await redis.get(key)
  } catch (error) {
    log.error({ err: error, messageId }, 'message cancel could not reach Redis')
    throw unavailable('cancel messages')
  }
  if (holder !== 'cancel') throw tooLate('sending')
  return {
    won,
    giveBack: async () => {
      if (won) await redis.del(key).catch(() => 0)
    },
  }
}
