import { recipientOf } from '@dispatch/contracts'
import { MESSAGING_LIMIT_WINDOW_MS, REACH_PORTFOLIO_SCRIPT } from '@dispatch/runtime'
import { scriptCall } from '@dispatch/runtime/lua-scripts'
import { type RedisClient, turnBatched } from '@dispatch/runtime/redis'
import { type ReachCount, reachKeysOf } from './reach-beside-claim.ts'
import { recordHeld } from './record-held.ts'
import type { Cleared, Disposition, MessageDelivery } from './types.ts'

/** One recipient to count: the portfolio's keys (its set, its recent list), its limit, the recipient's hash. */
type ReachCall = { key: string; recent: string; limit: number; member: string }

/**
 * Each connection's counting after the gates (a Cluster; a fallback template), gathered per turn of
 * the event loop: the recipients of every delivery of a turn to one portfolio under one limit go in
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
            first.recent,
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
 * Held past the limit: the job waits until room frees, `scheduled` (`messaging_limit`) meanwhile,
 * in Redis and (its first hold) in Postgres too (record-held.ts).
 */
async function held(
  delivery: MessageDelivery,
  limit: number,
  portfolio: string,
  roomAt: number,
): Promise<Disposition> {
  await recordHeld(delivery, new Date(roomAt))
  const sendAt = new Date(roomAt).toISOString()
  delivery.log.info(
    { portfolio, limit, sendAt },
    'held: its portfolio reached its messaging limit; scheduled until room frees',
  )
  return {
    kind: 'again',
    spent: false,
    error: new Error(`messaging limit of ${limit} reached; held until ${sendAt}`),
    delayMs: Math.max(0, roomAt - Date.now()),
    held: { sendAt, scheduledReason: 'messaging_limit' },
  }
}

/**
 * The messaging limit, after every other gate: a template to a recipient whose window is not open
 * (closed, or unknown: counted, as Meta would) is counted in its portfolio's reach (a recipient
 * already reached in the last 24 h is counted once): beside the claim on one server (`counted`,
 * reachBesideClaim.lua), here on a Cluster and for a fallback template (reachPortfolio-2.lua).
 * Past the limit it is held, not sent: the job waits until the oldest counted recipient leaves the
 * 24 hours (`scheduled`, `scheduledReason: messaging_limit`), and is counted again then. Under
 * `refuse` too: the door refused what it saw; what passed it meanwhile (a batch, another instance)
 * is held, never dropped. Redis unreadable: sent, uncounted (the platform decides, as without a limit).
 */
export async function messagingLimitGate(
  delivery: MessageDelivery,
  cleared: Cleared,
  window: 'open' | 'closed' | 'unknown' | undefined,
  counted: Promise<ReachCount> | undefined,
): Promise<Cleared | Disposition> {
  const { lane, deps, log } = delivery
  const limit = lane.settings.messagingLimit
  if (!limit?.tracked || limit.limit === null) return cleared
  if (counted) {
    const count = await counted
    if (count.kind === 'held') return held(delivery, limit.limit, limit.portfolio, count.roomAt)
    if (count.kind === 'unread') {
      log.warn({ err: count.error, portfolio: limit.portfolio }, 'messaging limit not counted; sending')
    }
    return cleared
  }
  if (cleared.message.type !== 'template' || window === 'open') return cleared
  let roomAt: number
  try {
    const keys = reachKeysOf(deps.prefix, limit.portfolio)
    roomAt = await counterOf(deps.claims)({
      key: keys.key,
      recent: keys.recent,
      limit: limit.limit,
      member: deps.hash(recipientOf(cleared.message.body)),
    })
  } catch (error) {
    log.warn({ err: error, portfolio: limit.portfolio }, 'messaging limit not counted; sending')
    return cleared
  }
  return roomAt === 0 ? cleared : held(delivery, limit.limit, limit.portfolio, roomAt)
}
