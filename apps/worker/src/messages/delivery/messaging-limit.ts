import { recipientOf } from '@dispatch/contracts'
import {
  GIVE_BACK_REACH_SCRIPT,
  MESSAGING_LIMIT_WINDOW_MS,
  portfolioReachKey,
  REACH_BESIDE_CLAIM_SCRIPT,
  REACH_PORTFOLIO_SCRIPT,
  SERVICE_WINDOW_MS,
  serviceWindowKey,
} from '@dispatch/runtime'
import { type LuaCall, scriptCall } from '@dispatch/runtime/lua-scripts'
import { type RedisClient, turnBatched } from '@dispatch/runtime/redis'
import { knownOpenWindow, rememberOpenWindow } from '../recipient-reads.ts'
import type { Cleared, Disposition, MessageDelivery } from './types.ts'

/**
 * Whether this message may count against its portfolio's messaging limit: a template through a
 * sender with a finite limit under `hold` or `refuse`. On one Redis server it is counted beside the
 * claim (`countBesideClaim`); on a Cluster its recipient's window is read beside the claim
 * (gates.ts) and it is counted after the gates, as a free-form message's fallback template is
 * (sent when its window is closed under `enforce`).
 */
export function countsAgainstLimit({ data, lane }: MessageDelivery): boolean {
  return lane.settings.messagingLimit?.tracked === true && data.message.type === 'template'
}

/**
 * What the count beside the claim answered: the window open (not counted); reached (`added`: new
 * in the reach at `at`, given back if the message is then not sent); held until `roomAt`; or not
 * read (Redis failed: sent uncounted, as without a limit).
 */
export type ReachCount =
  | { kind: 'open' }
  | { kind: 'reached'; added: boolean; at: number }
  | { kind: 'held'; roomAt: number }
  | { kind: 'unread'; error: unknown }

const OPEN: Promise<ReachCount> = Promise.resolve({ kind: 'open' })

/** One recipient to count beside its claim: the portfolio's key, its limit, the window, the hash. */
type BesideCall = { key: string; limit: number; window: string; member: string }

/**
 * Each connection's counts beside the claims, gathered per turn of the event loop: the recipients of
 * every delivery of a turn (a bundle's messages and other jobs') to one portfolio under one limit
 * in one call of reachBesideClaim.lua, which reads their windows itself. Sent in the turn the
 * claims are (the claims' connection pipelines them): no round trip more.
 */
type Beside = { count: (call: BesideCall) => Promise<ReachCount>; giveBack: LuaCall }
const besides = new WeakMap<RedisClient, Beside>()
function besideOf(redis: RedisClient): Beside {
  let beside = besides.get(redis)
  if (!beside) {
    const script = scriptCall(redis, REACH_BESIDE_CLAIM_SCRIPT)
    // Defined with the count, not at its first use: a script defined on an auto-pipelined client
    // is missing from a pipeline the turn has already started.
    const giveBack = scriptCall(redis, GIVE_BACK_REACH_SCRIPT)
    const count = turnBatched(async (calls: BesideCall[]) => {
      const answers = new Map<BesideCall, ReachCount>()
      const now = Date.now()
      const groups = Map.groupBy(calls, (call) => `${call.limit} ${call.key}`)
      await Promise.all(
        [...groups.values()].map(async (group) => {
          const first = group[0] as BesideCall
          const replies = (await script(
            group.length + 1,
            ...group.map((call) => call.window),
            first.key,
            now,
            MESSAGING_LIMIT_WINDOW_MS,
            first.limit,
            SERVICE_WINDOW_MS,
            ...group.map((call) => call.member),
          )) as number[]
          group.forEach((call, i) => {
            const answer = Number(replies[i] ?? 0)
            if (answer < 0) {
              rememberOpenWindow(call.window, -answer, now)
              answers.set(call, { kind: 'open' })
            } else if (answer <= 1) answers.set(call, { kind: 'reached', added: answer === 1, at: now })
            else answers.set(call, { kind: 'held', roomAt: answer })
          })
        }),
      )
      return calls.map((call) => answers.get(call) as ReachCount)
    })
    beside = { count, giveBack }
    besides.set(redis, beside)
  }
  return beside
}

/**
 * The messaging limit's count, started beside the claim on one Redis server: undefined when the
 * message does not count, or on a Cluster (the window keys sit on other slots than the reach;
 * `messagingLimitGate` counts there once the gates have passed). A window this process knows open
 * needs no call. Never rejects.
 */
export function countBesideClaim(
  delivery: MessageDelivery,
  recipient: string,
  recipientHash: string,
): Promise<ReachCount> | undefined {
  const { lane, deps } = delivery
  const limit = lane.settings.messagingLimit
  if (deps.claims.isCluster || !countsAgainstLimit(delivery) || !limit || limit.limit === null)
    return undefined
  const window = serviceWindowKey(deps.prefix, lane.platform.phoneNumberId, recipient)
  if (knownOpenWindow(window, Date.now())) return OPEN
  return besideOf(deps.claims)
    .count({
      key: portfolioReachKey(deps.prefix, limit.portfolio),
      limit: limit.limit,
      window,
      member: recipientHash,
    })
    .catch((error: unknown) => ({ kind: 'unread', error }))
}

/**
 * A message counted beside its claim that this run does not send (its claim held elsewhere or by a
 * cancel, sent by an earlier run, stopped at a gate): its recipient, if the count added them, is
 * given back (giveBackReach-1.lua, only while their time is still the count's: a delivery that
 * reached them since keeps them). Failing, they stay counted: the reach errs high, never low.
 */
export async function giveBackReach(delivery: MessageDelivery, count: Promise<ReachCount> | undefined) {
  const counted = await count
  if (counted?.kind !== 'reached' || !counted.added) return
  const { data, lane, deps, log } = delivery
  const portfolio = lane.settings.messagingLimit?.portfolio as string
  try {
    await besideOf(deps.claims).giveBack(
      portfolioReachKey(deps.prefix, portfolio),
      counted.at,
      deps.hash(recipientOf(data.message.body)),
    )
  } catch (error) {
    log.warn({ err: error, portfolio }, 'messaging limit: a recipient not sent to stays counted')
  }
}

/** One recipient to count: the portfolio's key, its limit, the recipient's hash. */
type ReachCall = { key: string; limit: number; member: string }

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

/** Held past the limit: the job waits until room frees, `scheduled` (`messaging_limit`) meanwhile. */
function held(delivery: MessageDelivery, limit: number, portfolio: string, roomAt: number): Disposition {
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
 * reachBesideClaim.lua), here on a Cluster and for a fallback template (reachPortfolio-1.lua).
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
    roomAt = await counterOf(deps.claims)({
      key: portfolioReachKey(deps.prefix, limit.portfolio),
      limit: limit.limit,
      member: deps.hash(recipientOf(cleared.message.body)),
    })
  } catch (error) {
    log.warn({ err: error, portfolio: limit.portfolio }, 'messaging limit not counted; sending')
    return cleared
  }
  return roomAt === 0 ? cleared : held(delivery, limit.limit, limit.portfolio, roomAt)
}
