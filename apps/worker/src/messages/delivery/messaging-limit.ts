import { recipientOf } from '@dispatch/contracts'
import { MESSAGING_LIMIT_WINDOW_MS, portfolioReachKey, REACH_PORTFOLIO_SCRIPT } from '@dispatch/runtime'
import { scriptCall } from '@dispatch/runtime/lua-scripts'
import { type RedisClient, turnBatched } from '@dispatch/runtime/redis'
import type { Cleared, Disposition, MessageDelivery } from './types.ts'

/**
 * Whether this message may count against its portfolio's messaging limit: a template through a
 * sender with a finite limit under `hold` or `refuse`. Its recipient's window is then read beside
 * the claim (gates.ts), as a free-form message's is under `enforce` (whose fallback template,
 * sent when that window is closed, counts too).
 */
export function countsAgainstLimit({ data, lane }: MessageDelivery): boolean {
  return lane.settings.messagingLimit?.tracked === true && data.message.type === 'template'
}

/** One recipient to count: the portfolio's key, its limit, the recipient's hash. */
type ReachCall = { key: string; limit: number; member: string }

/**
 * Each connection's counting, gathered per turn of the event loop: the recipients of every
 * delivery of a turn (a bundle's messages and other jobs') to one portfolio under one limit go in
 * one script call. Answers 0 (reached) or when room frees (ms) per recipient.
 */
const counters = new WeakMap<RedisClient, (call: ReachCall) => Promise<number>>()
function counterOf(redis: RedisClient) {
  let count = counters.get(redis)
  if (!count) {
    const script = scriptCall(redis, REACH_PORTFOLIO_SCRIPT)
    count = turnBatched(async (calls: ReachCall[]) => {
      const answers = new Map<ReachCall, number>()
      const now = Date.now()
      const groups = Map.groupBy(calls, (call) => `${call.limit} ${call.key}`)
      await Promise.all(
        [...groups.values()].map(async (group) => {
          const first = group[0] as ReachCall
          const replies = (await script(
            first.key,
            now,
            MESSAGING_LIMIT_WINDOW_MS,
            first.limit,
            ...group.map((call) => call.member),
          )) as number[]
          group.forEach((call, i) => {
            answers.set(call, Number(replies[i] ?? 0))
          })
        }),
      )
      return calls.map((call) => answers.get(call) ?? 0)
    })
    counters.set(redis, count)
  }
  return count
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
  let roomAt: number
  try {
    roomAt = await counterOf(deps.claims)({
      key: portfolioReachKey(deps.prefix, limit.portfolio),
      limit: limit.limit,
      member: deps.hash(recipientOf(data.message.body)),
    })
  } catch (error) {
    log.warn({ err: error, portfolio: limit.portfolio }, 'messaging limit not counted; sending')
    return cleared
  }
  if (roomAt === 0) return cleared
  const sendAt = new Date(roomAt).toISOString()
  log.info(
    { portfolio: limit.portfolio, limit: limit.limit, sendAt },
    'held: its portfolio reached its messaging limit; scheduled until room frees',
  )
  return {
    kind: 'again',
    spent: false,
    error: new Error(`messaging limit of ${limit.limit} reached; held until ${sendAt}`),
    delayMs: Math.max(0, roomAt - Date.now()),
    held: { sendAt, scheduledReason: 'messaging_limit' },
  }
}
