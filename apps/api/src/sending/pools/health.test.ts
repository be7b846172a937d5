import { describe, expect, it } from 'vitest'
import { exclusionOf, type MemberHealth } from './health.ts'

const healthy: MemberHealth = { state: 'active', accountStatus: 'ACTIVE', qualityRating: 'GREEN' }
const rules = { rateLimitToleranceMs: 60_000 }
const now = 1_000_000

describe('a member of a pool', () => {
  it('takes new recipients when active, its account in good standing and its quality GREEN or YELLOW', () => {
    expect(exclusionOf(healthy, rules, now)).toBeNull()
    expect(exclusionOf({ ...healthy, qualityRating: 'YELLOW' }, rules, now)).toBeNull()
    expect(exclusionOf({ state: 'active', accountStatus: null, qualityRating: null }, rules, now)).toBeNull()
    expect(exclusionOf({ ...healthy, accountStatus: 'BAN_SCHEDULED' }, rules, now)).toBeNull()
  })

  it.each([
    [{ state: 'paused' }, 'paused'],
    [{ state: 'needs_attention' }, 'needs_attention'],
    [{ accountStatus: 'BANNED' }, 'account_banned'],
    [{ accountStatus: 'disabled' }, 'account_banned'],
    [{ accountStatus: 'RESTRICTED' }, 'account_restricted'],
    [{ accountStatus: 'DISCONNECTED' }, 'account_disconnected'],
    [{ qualityRating: 'RED' }, 'quality_red'],
    [{ qualityRating: 'FLAGGED' }, 'flagged'],
  ] as const)('is out of rotation with %o: %s', (change, reason) => {
    expect(exclusionOf({ ...healthy, ...change }, rules, now)).toBe(reason)
  })

  it('waits out a 130429 pause up to the configured time, and leaves rotation for a longer one', () => {
    expect(exclusionOf({ ...healthy, rateLimitedUntil: now + 60_000 }, rules, now)).toBeNull()
    expect(exclusionOf({ ...healthy, rateLimitedUntil: now + 60_001 }, rules, now)).toBe('rate_limited')
    expect(exclusionOf({ ...healthy, rateLimitedUntil: now - 1 }, rules, now)).toBeNull()
    // A streak of short pauses counts from its start.
    const streak = { ...healthy, rateLimitedSince: now - 50_000 }
    expect(exclusionOf({ ...streak, rateLimitedUntil: now + 10_000 }, rules, now)).toBeNull()
    expect(exclusionOf({ ...streak, rateLimitedUntil: now + 10_001 }, rules, now)).toBe('rate_limited')
    expect(exclusionOf({ ...streak, rateLimitedUntil: now - 1 }, rules, now)).toBeNull()
  })
})
