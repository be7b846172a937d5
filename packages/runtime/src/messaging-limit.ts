import { join } from 'node:path'
import { type MessagingLimitPolicy, portfolioOf } from '@dispatch/contracts'
import { luaScripts } from './lua-scripts.ts'

/**
 * WhatsApp's messaging limit: the unique users a business portfolio may reach outside a
 * customer-service window in a moving 24 hours (250, 2,000, 10,000, 100,000 or unlimited), shared
 * by every number of the portfolio. Dispatch counts the portfolio's reach in Redis, one sorted set a
 * portfolio (`portfolioReachKey`): member a recipient's hash (recipient-hash.ts, 48 bytes), score
 * the last time (ms) they were reached outside their window. A member costs about 120 bytes in
 * Redis (its string, its score, a skiplist node and a dict entry), so a portfolio at 100,000 a day
 * holds about 12 MB; at most a day of recipients is kept (trimmed as it is counted, the key expiring
 * 24 h after the last add). Nothing is kept for a portfolio without a finite limit.
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

/** The portfolio's reach: a sorted set of recipient hashes by when last reached outside their window. */
export const portfolioReachKey = (prefix: string, portfolio: string) => `${prefix}:reach:{${portfolio}}`

const scripts = luaScripts(join(import.meta.dirname, 'lua/messaging-limit'), [
  'reachPortfolio',
  'reachBesideClaim',
  'giveBackReach',
  'peekReach',
])
/**
 * lua/messaging-limit/reachPortfolio-1.lua: counts recipients (in order), or says when room frees.
 * Its answer per recipient: 0 reached (counted), else when room frees (ms).
 */
export const REACH_PORTFOLIO_SCRIPT = scripts.reachPortfolio
/**
 * lua/messaging-limit/reachBesideClaim.lua (one server): reads each recipient's window and counts
 * those outside it, in order. Per recipient: -lastInbound (open, not counted), 0 reached before,
 * 1 added, else when room frees (ms).
 */
export const REACH_BESIDE_CLAIM_SCRIPT = scripts.reachBesideClaim
/** lua/messaging-limit/giveBackReach-1.lua: removes recipients added at a time, if still at it. */
export const GIVE_BACK_REACH_SCRIPT = scripts.giveBackReach
/** lua/messaging-limit/peekReach-1.lua: the reach, the oldest counted, and when each recipient was (0: not). */
export const PEEK_REACH_SCRIPT = scripts.peekReach

/** What can read a portfolio's reach now (a client or a pipeline). */
export interface ReachReader {
  zcount(key: string, min: number | string, max: number | string): Promise<number>
  zrangebyscore(
    key: string,
    min: number | string,
    max: number | string,
    withScores: 'WITHSCORES',
    limit: 'LIMIT',
    offset: number,
    count: number,
  ): Promise<string[]>
}

/** The reach now and when room frees (the oldest counted recipient's time + 24 h; null: none). */
export async function readReach(
  redis: ReachReader,
  prefix: string,
  portfolio: string,
  now: number,
): Promise<{ reach: number; roomAt: number | null }> {
  const key = portfolioReachKey(prefix, portfolio)
  const from = `(${now - MESSAGING_LIMIT_WINDOW_MS}`
  const [reach, oldest] = await Promise.all([
    redis.zcount(key, from, '+inf'),
    redis.zrangebyscore(key, from, '+inf', 'WITHSCORES', 'LIMIT', 0, 1),
  ])
  const roomAt = oldest[1] === undefined ? null : Number(oldest[1]) + MESSAGING_LIMIT_WINDOW_MS
  return { reach, roomAt }
}
