import { recipientOf } from '@dispatch/contracts'
import {
  MESSAGING_LIMIT_WINDOW_MS,
  portfolioReachKey,
  REACH_PORTFOLIO_SCRIPT,
  readReachAnswer,
} from '@dispatch/runtime'
import { type LuaCall, scriptCall } from '@dispatch/runtime/lua-scripts'
import type { RedisClient } from '@dispatch/runtime/redis'
import type { Cleared } from './gates.ts'
import type { Disposition, MessageDelivery } from './types.ts'

/**
 * Whether this message may count against its portfolio's messaging limit: a template through a
 * sender with a finite limit under `hold` or `refuse`. Its recipient's window is then read beside
 * the claim (gates.ts), as a free-form message's is under `enforce` (whose fallback template,
 * sent when that window is closed, counts too).
 */
export function countsAgainstLimit({ data, lane }: MessageDelivery): boolean {
  return lane.settings.messagingLimit?.tracked === true && data.message.type === 'template'
}

const calls = new WeakMap<RedisClient, LuaCall>()
const reachOn = (redis: RedisClient) => {
  let call = calls.get(redis)
  if (!call) {
    call = scriptCall(redis, REACH_PORTFOLIO_SCRIPT)
    calls.set(redis, call)
  }
  return call
}

/**
 * The messaging limit, after every other gate: a template to a recipient whose window is not open
 * (closed, or unknown: counted, as Meta would) is counted in its portfolio's reach
 * (reachPortfolio-1.lua: a recipient already reached in the last 24 h is counted once). Past the
 * limit it is held, not sent: the job waits until the oldest counted recipient leaves the 24 hours
 * (`scheduled`, `scheduledReason: messaging_limit`), and is counted again then. Under `refuse` too:
 * the door refused what it saw; what passed it meanwhile (a batch, another instance) is held, never
 * dropped. Redis unreadable: sent, uncounted (the platform decides, as without a limit).
 */
export async function messagingLimitGate(
  delivery: MessageDelivery,
  cleared: Cleared,
  window: 'open' | 'closed' | 'unknown' | undefined,
): Promise<Cleared | Disposition> {
  const { data, lane, deps, log } = delivery
  const limit = lane.settings.messagingLimit
  if (!limit?.tracked || limit.limit === null) return cleared
  if (cleared.message.type !== 'template' || window === 'open') return cleared
  const now = Date.now()
  let answer: ReturnType<typeof readReachAnswer>
  try {
    answer = readReachAnswer(
      await reachOn(deps.claims)(
        portfolioReachKey(deps.prefix, limit.portfolio),
        deps.hash(recipientOf(data.message.body)),
        now,
        MESSAGING_LIMIT_WINDOW_MS,
        limit.limit,
      ),
    )
  } catch (error) {
    log.warn({ err: error, portfolio: limit.portfolio }, 'messaging limit not counted; sending')
    return cleared
  }
  if (answer.reached) return cleared
  const sendAt = new Date(answer.roomAt).toISOString()
  log.info(
    { portfolio: limit.portfolio, limit: limit.limit, sendAt },
    'held: its portfolio reached its messaging limit; scheduled until room frees',
  )
  return {
    kind: 'again',
    spent: false,
    error: new Error(`messaging limit of ${limit.limit} reached; held until ${sendAt}`),
    delayMs: Math.max(0, answer.roomAt - now),
    held: { sendAt, scheduledReason: 'messaging_limit' },
  }
}
