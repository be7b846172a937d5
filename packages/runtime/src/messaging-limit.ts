import { join } from 'node:path'
import { type MessagingLimitPolicy, portfolioOf } from '@dispatch/contracts'
import { luaScripts, scriptCall } from './lua-scripts.ts'
import type { RedisClient } from './redis.ts'

/**
 * WhatsApp's messaging limit: the unique users a business portfolio may reach outside a
 * customer-service window in a moving 24 hours (250, 2,000, 10,000, 100,000 or unlimited), shared
 * by every number of the portfolio. Dispatch counts the portfolio's reach in Redis, in two keys of
 * one slot:
 *
 * - **the exact set** (`portfolioReachKey`): a sorted set, member a recipient's hash
 *   (recipient-hash.ts, 48 bytes), score the last time (ms) they were reached outside their window;
 *   about 140 bytes a member;
 * - **the recent list** (`portfolioRecentKey`): entries "<time> <hash>" appended in time order
 *   while the set and the list together, each entry taken as a recipient of its own, stay within
 *   the limit; about 70 bytes an entry, at most 100,000 entries. An append costs Redis about a
 *   third of a set's insert, and a recipient reached twice is two entries: far from its limit a
 *   portfolio needs no exact count. A worker appends the recipients whose window the accept path
 *   read closed (`windowClosesAt`) with a plain `RPUSH`, no script, checking the list's length and
 *   the set's size after (apps/worker/src/messages/delivery/reach-beside-claim.ts).
 *
 * Once a count, a door's read or a view finds the two together at the limit, the list is folded
 * into the set (each recipient keeping its latest time) and counted exactly from then on
 * (lua/messaging-limit/includes/recentReach.lua). Both keep at most a day (trimmed as they are
 * counted, each expiring 24 h after its last write). Nothing is kept for a portfolio without a
 * finite limit.
 */
export const MESSAGING_LIMIT_WINDOW_MS = 24 * 60 * 60 * 1000

/** Meta's tiers (`whatsapp_business_manager_messaging_limit`, `business_capability_update`). */
const TIERS: Record<string, number | null> = {
  TIER_250: 250,
  TIER_1K: 1000,
  TIER_2K: 2000,
  TIER_10K: 10_000,
  TIER_100K: 100_000,
  TIER_UNLIMITED: null,
}

/**
 * The number of users a tier allows: null for unlimited; undefined for a tier Dispatch cannot read
 * (then no limit is applied). `TIER_<n>` (a number Meta sent, as stored by the webhook) reads as n.
 */
export function tierLimit(tier: string | null | undefined): number | null | undefined {
  if (!tier) return undefined
  const known = TIERS[tier.toUpperCase()]
  if (known !== undefined) return known
  const numeric = /^TIER_(\d{1,9})$/i.exec(tier)
  if (numeric) return Number(numeric[1])
  return undefined
}

/** What decides a sender's messaging limit, as its row holds it. */
export interface MessagingLimitSettings {
  id: string
  wabaId: string | null
  businessId: string | null
  messagingLimitTier: string | null
  messagingLimitOverride: number | null
  messagingLimitPolicy: MessagingLimitPolicy
}

export interface MessagingLimit {
  /** Null: unlimited (or no limit known). */
  limit: number | null
  source: 'admin' | 'synced' | 'none'
  /** The portfolio the count is shared by. */
  portfolio: string
  policy: MessagingLimitPolicy
  /** Whether sends are counted at all: a finite limit under `hold` or `refuse`. */
  tracked: boolean
}

/** The effective limit: the admin's override, else the synced tier, else none. */
export function messagingLimitOf(sender: MessagingLimitSettings): MessagingLimit {
  const portfolio = portfolioOf(sender)
  const policy = sender.messagingLimitPolicy
  let limit: number | null = null
  let source: MessagingLimit['source'] = 'none'
  if (sender.messagingLimitOverride !== null) {
    limit = sender.messagingLimitOverride
    source = 'admin'
  } else {
    const synced = tierLimit(sender.messagingLimitTier)
    if (synced !== undefined) {
      limit = synced
      source = 'synced'
    }
  }
  return { limit, source, portfolio, policy, tracked: limit !== null && policy !== 'off' }
}

/**
 * How long the recipient's window as the accept path read it (`windowClosesAt` on a template's
 * job) stands at delivery: a job delivered within this of its acceptance is counted by it, with no
 * read (a recipient who wrote in between is counted: the reach errs high, never low); a later one
 * (scheduled, held, backlogged) reads the window as it is then.
 */
export const WINDOW_KNOWN_AT_ACCEPT_MS = 60_000

/**
 * At most this many entries wait in the recent list (lua/messaging-limit/includes/recentReach.lua's
 * `RECENT_MAX`): past them a portfolio is counted exactly, as near its limit.
 */
export const RECENT_REACH_MAX = 100_000

/** The portfolio's reach: a sorted set of recipient hashes by when last reached outside their window. */
export const portfolioReachKey = (prefix: string, portfolio: string) => `${prefix}:reach:{${portfolio}}`
/** The portfolio's recent reach, not yet counted: entries "<time> <hash>" in a list, on the set's slot. */
export const portfolioRecentKey = (prefix: string, portfolio: string) =>
  `${prefix}:reach:{${portfolio}}:recent`

const scripts = luaScripts(join(import.meta.dirname, 'lua/messaging-limit'), [
  'reachPortfolio',
  'reachBesideClaim',
  'giveBackReach',
  'peekReach',
  'readReach',
])
/**
 * lua/messaging-limit/reachPortfolio-2.lua: counts recipients (in order), or says when room frees.
 * Its answer per recipient: 0 reached (counted), else when room frees (ms).
 */
export const REACH_PORTFOLIO_SCRIPT = scripts.reachPortfolio
/**
 * lua/messaging-limit/reachBesideClaim.lua (one server): reads each recipient's window and counts
 * those outside it, in order. Per recipient: -lastInbound (open, not counted), 0 reached before,
 * 1 added (appended to the recent list far from the limit, else to the set), else when room frees
 * (ms).
 */
export const REACH_BESIDE_CLAIM_SCRIPT = scripts.reachBesideClaim
/** lua/messaging-limit/giveBackReach-2.lua: removes recipients added at a time, if still at it. */
export const GIVE_BACK_REACH_SCRIPT = scripts.giveBackReach
/** lua/messaging-limit/peekReach-2.lua: the reach, the oldest counted, and when each recipient was (0: not). */
export const PEEK_REACH_SCRIPT = scripts.peekReach
/** lua/messaging-limit/readReach-2.lua: the reach and its oldest time, folding the list at a bound. */
export const READ_REACH_SCRIPT = scripts.readReach

/**
 * The reach now and when room frees (the oldest counted recipient's time + 24 h; null: none).
 * `foldAt`: the reach at which what waits in the recent list is folded into the exact set first
 * (a campaign's feeder: its limit, so far from it nothing is folded); undefined: always, until
 * nothing waits (the sender's view shows the exact reach).
 */
export async function readReach(
  redis: RedisClient,
  prefix: string,
  portfolio: string,
  now: number,
  foldAt?: number,
): Promise<{ reach: number; roomAt: number | null }> {
  const read = scriptCall(redis, READ_REACH_SCRIPT)
  const keys = [portfolioReachKey(prefix, portfolio), portfolioRecentKey(prefix, portfolio)]
  let answer: number[] = []
  // A fold moves at most 5,000 entries a call (a list holds at most 100,000).
  for (let calls = 0; calls < 25; calls++) {
    answer = ((await read(...keys, now, MESSAGING_LIMIT_WINDOW_MS, foldAt ?? 0)) as number[]).map(Number)
    if (foldAt !== undefined || (answer[2] ?? 0) === 0) break
  }
  const [reach = 0, oldest = 0] = answer
  return { reach, roomAt: oldest > 0 ? oldest + MESSAGING_LIMIT_WINDOW_MS : null }
}
