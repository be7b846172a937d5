import type { PoolExclusionReason, SenderState } from '@dispatch/contracts'

/** What decides whether a pool's member takes new recipients: its row's health, and a 130429 pause. */
export interface MemberHealth {
  state: SenderState
  /** `account_update` as recorded (`BANNED`, `RESTRICTED`, `DISCONNECTED`, …); null: never reported. */
  accountStatus: string | null
  /** `GREEN`, `YELLOW`, `RED`, or Meta's `FLAGGED`; null: never reported. */
  qualityRating: string | null
  /** When its platform rate-limit pause (130429) ends, epoch ms; undefined: not paused (or not read). */
  rateLimitedUntil?: number | undefined
  /** When its current streak of 130429 pauses began, epoch ms; undefined: taken as now. */
  rateLimitedSince?: number | undefined
}

export interface HealthRules {
  /**
   * A number limited by the platform (130429) for longer than this, counted from its streak's
   * start to the current pause's end, is out of rotation until the pause ends; shorter ones wait.
   */
  rateLimitToleranceMs: number
}

/** Account states in which Meta refuses the number's messages for good (until an appeal). */
const BANNED = new Set(['BANNED', 'DISABLED', 'DELETED'])
const RESTRICTED = new Set(['RESTRICTED'])
/** The number is no longer registered on the Cloud API (`phone_number` status). */
const DISCONNECTED = new Set(['DISCONNECTED', 'UNREGISTERED'])

/**
 * Why a member takes no new recipients now, or null when it does. In order of how long the cause
 * lasts: an admin's or the service's hold, the account's standing, the number's quality, a pause.
 * `YELLOW` stays in rotation (Meta's warning, not a refusal); a scheduled ban too, until it lands.
 */
export function exclusionOf(
  member: MemberHealth,
  rules: HealthRules,
  now: number,
): PoolExclusionReason | null {
  if (member.state === 'paused') return 'paused'
  // A refused token (190) or another failure the service holds the number for.
  if (member.state === 'needs_attention') return 'needs_attention'
  const account = member.accountStatus?.toUpperCase()
  if (account !== undefined) {
    if (BANNED.has(account)) return 'account_banned'
    if (RESTRICTED.has(account)) return 'account_restricted'
    if (DISCONNECTED.has(account)) return 'account_disconnected'
  }
  const quality = member.qualityRating?.toUpperCase()
  if (quality === 'RED') return 'quality_red'
  if (quality === 'FLAGGED') return 'flagged'
  const until = member.rateLimitedUntil
  if (
    until !== undefined &&
    until > now &&
    until - (member.rateLimitedSince ?? now) > rules.rateLimitToleranceMs
  ) {
    return 'rate_limited'
  }
  return null
}

/**
 * Exclusions after which a recipient in an open window leaves the number too: it cannot answer
 * them at all. Under any other (quality, a pause, a hold) the conversation stays where it is.
 */
export const GONE: ReadonlySet<PoolExclusionReason> = new Set(['account_banned', 'account_disconnected'])
