import type { PoolExclusionReason, SenderState } from '@dispatch/contracts'

// A sender pool's rules (docs/sender-pools.md): which member is in rotation
// (`exclusionOf`) and which number sends to a recipient (`chooseSender`). Pure; shared by the API
// (the choice on accept) and the workers (moving waiting messages off a fallen number).

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

/** A pool's member as the choice sees it: its id, its weight, and why it is out of rotation (or null). */
export interface ChoiceMember {
  senderId: string
  weight: number
  excluded: PoolExclusionReason | null
  /** `memberHash(senderId)`, kept with the pool in memory so a choice does not hash every id again. */
  hash?: number | undefined
}

/** The number that last spoke with the recipient, and whether their 24-hour window with it is open. */
export interface Sticky {
  senderId: string
  windowOpen: boolean
}

export interface ChoiceInput {
  /** The pool's members, in the pool's order. */
  members: readonly ChoiceMember[]
  /** The recipient as the sticky record and the spread know them (E.164 phone, or the user id). */
  recipient: string
  sticky?: Sticky | undefined
  /** A send's own `senderId`: honoured when it is a member, whatever its health. */
  requested?: string | undefined
  /** Where messages go when no member is healthy and the recipient sticks to none: the key's own sender. */
  home: string
}

export type ChoiceWhy =
  /** The send named a member. */
  | 'requested'
  /** The recipient's number, healthy. */
  | 'sticky'
  /** The recipient's number, out of rotation but not gone, and their window with it is open. */
  | 'window'
  /** A new recipient (or one whose number fell), spread by weight over the healthy members. */
  | 'spread'
  /** No member is healthy: the recipient's number if it is still a member, else the key's own. */
  | 'no_healthy_member'

export type Choice = { senderId: string; why: ChoiceWhy } | { senderId: null; why: 'not_in_pool' }

/**
 * Which number of a pool sends to a recipient (docs/sender-pools.md, "Sending through a pool"). Pure and
 * allocation-light: it runs on every pooled send.
 *
 * 1. A send's `senderId` of the pool is honoured (one not in the pool is `not_in_pool`).
 * 2. A recipient keeps the number that last spoke with them while it is healthy; in an open
 *    window they keep it through any exclusion but a gone number (banned, disconnected, removed).
 * 3. Anyone else is spread over the healthy members by weight, deterministically: weighted
 *    rendezvous hashing of the recipient with each member, so the same recipient lands on the same
 *    number without any state, and a member falling or returning moves only its own share.
 */
export function chooseSender(input: ChoiceInput): Choice {
  const { members, sticky, requested } = input
  if (requested !== undefined) {
    return members.some((m) => m.senderId === requested)
      ? { senderId: requested, why: 'requested' }
      : { senderId: null, why: 'not_in_pool' }
  }
  const stuck = sticky ? members.find((m) => m.senderId === sticky.senderId) : undefined
  if (stuck) {
    if (stuck.excluded === null) return { senderId: stuck.senderId, why: 'sticky' }
    if (sticky?.windowOpen && !GONE.has(stuck.excluded)) return { senderId: stuck.senderId, why: 'window' }
  }
  const spread = spreadByWeight(members, input.recipient)
  if (spread !== undefined) return { senderId: spread, why: 'spread' }
  return { senderId: stuck?.senderId ?? input.home, why: 'no_healthy_member' }
}

/** The healthy member with the highest weighted rendezvous score for `recipient`; undefined: none healthy. */
export function spreadByWeight(members: readonly ChoiceMember[], recipient: string): string | undefined {
  let best: string | undefined
  let bestScore = Number.NEGATIVE_INFINITY
  const seed = mix(fnv1a(recipient, FNV_OFFSET))
  for (const member of members) {
    if (member.excluded !== null || member.weight <= 0) continue
    // A uniform draw in (0, 1) from the pair, then -w / ln(u): the largest wins with probability
    // proportional to w (weighted rendezvous hashing, Schindelhauer & Schomaker).
    const u = (mix(seed ^ (member.hash ?? memberHash(member.senderId))) + 0.5) / 4_294_967_296
    const score = -member.weight / Math.log(u)
    if (score > bestScore) {
      bestScore = score
      best = member.senderId
    }
  }
  return best
}

/** A member's half of the rendezvous draw: computed once per member when its pool is loaded. */
export const memberHash = (senderId: string): number => mix(fnv1a(senderId, FNV_SENDER_OFFSET))

const FNV_OFFSET = 0x811c9dc5
/** Another start for the members' ids, so a sender id equal to a recipient draws unlike it. */
const FNV_SENDER_OFFSET = 0x9e3779b9

/** FNV-1a over the string's UTF-16 code units, from `hash`. */
function fnv1a(text: string, hash: number): number {
  let h = hash
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i)
    h = Math.imul(h, 0x01000193)
  }
  return h >>> 0
}

/** A finalizer (murmur3's fmix32): FNV's low bits alone are too regular to read as uniform. */
function mix(hash: number): number {
  let h = hash
  h ^= h >>> 16
  h = Math.imul(h, 0x85ebca6b)
  h ^= h >>> 13
  h = Math.imul(h, 0xc2b2ae35)
  h ^= h >>> 16
  return h >>> 0
}
