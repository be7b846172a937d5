import { describe, expect, it } from 'vitest'
import { type ChoiceMember, chooseSender, memberHash, spreadByWeight } from './choose.ts'

const member = (senderId: string, weight = 1, excluded: ChoiceMember['excluded'] = null): ChoiceMember => ({
  senderId,
  weight,
  excluded,
})
const pool = [member('a'), member('b'), member('c')]
const recipients = Array.from({ length: 30_000 }, (_, i) => `+4479${String(i).padStart(8, '0')}`)
const shares = (members: ChoiceMember[]) => {
  const counts = new Map<string, number>()
  for (const r of recipients) {
    const id = spreadByWeight(members, r) as string
    counts.set(id, (counts.get(id) ?? 0) + 1)
  }
  return Object.fromEntries([...counts].map(([id, n]) => [id, n / recipients.length]))
}

describe('a new recipient', () => {
  it('lands on the same number every time, with no state kept', () => {
    for (const r of recipients.slice(0, 100)) {
      const first = chooseSender({ members: pool, recipient: r, home: 'a' })
      expect(first.why).toBe('spread')
      expect(chooseSender({ members: [...pool].reverse(), recipient: r, home: 'a' })).toEqual(first)
    }
  })

  it('is spread over the healthy members in proportion to their weights', () => {
    const even = shares(pool)
    for (const id of ['a', 'b', 'c']) expect(even[id]).toBeCloseTo(1 / 3, 1)
    const weighted = shares([member('a', 1), member('b', 2), member('c', 5)])
    expect(weighted.a).toBeCloseTo(1 / 8, 1)
    expect(weighted.b).toBeCloseTo(2 / 8, 1)
    expect(weighted.c).toBeCloseTo(5 / 8, 1)
  })

  it('never lands on a member out of rotation, and a member falling moves only its own share', () => {
    const before = new Map(recipients.map((r) => [r, spreadByWeight(pool, r)]))
    const fallen = [member('a'), member('b', 1, 'quality_red'), member('c')]
    let moved = 0
    for (const r of recipients) {
      const now = spreadByWeight(fallen, r)
      expect(now).not.toBe('b')
      if (now !== before.get(r)) {
        moved++
        expect(before.get(r)).toBe('b')
      }
    }
    expect(moved / recipients.length).toBeCloseTo(1 / 3, 1)
    // Healthy again, it takes back the very recipients it had.
    for (const r of recipients.slice(0, 500)) expect(spreadByWeight(pool, r)).toBe(before.get(r))
  })

  it('draws the same with a member hash kept in memory as without', () => {
    const kept = pool.map((m) => ({ ...m, hash: memberHash(m.senderId) }))
    for (const r of recipients.slice(0, 1000)) expect(spreadByWeight(kept, r)).toBe(spreadByWeight(pool, r))
  })
})

describe('a recipient a number already spoke with', () => {
  it('keeps that number while it is healthy, whatever the spread would say', () => {
    for (const r of recipients.slice(0, 50)) {
      expect(
        chooseSender({
          members: pool,
          recipient: r,
          sticky: { senderId: 'c', windowOpen: false },
          home: 'a',
        }),
      ).toEqual({
        senderId: 'c',
        why: 'sticky',
      })
    }
  })

  it('in an open window, stays through quality, pauses and holds, but not a banned or disconnected number', () => {
    const sticky = { senderId: 'b', windowOpen: true }
    for (const reason of [
      'quality_red',
      'flagged',
      'rate_limited',
      'paused',
      'needs_attention',
      'account_restricted',
    ] as const) {
      const members = [member('a'), member('b', 1, reason), member('c')]
      expect(chooseSender({ members, recipient: '+447900000001', sticky, home: 'a' })).toEqual({
        senderId: 'b',
        why: 'window',
      })
    }
    for (const reason of ['account_banned', 'account_disconnected'] as const) {
      const members = [member('a'), member('b', 1, reason), member('c')]
      const choice = chooseSender({ members, recipient: '+447900000001', sticky, home: 'a' })
      expect(choice.why).toBe('spread')
      expect(choice.senderId).not.toBe('b')
    }
  })

  it('outside a window, moves to a healthy member when its number falls', () => {
    const members = [member('a'), member('b', 1, 'quality_red'), member('c')]
    const choice = chooseSender({
      members,
      recipient: '+447900000001',
      sticky: { senderId: 'b', windowOpen: false },
      home: 'a',
    })
    expect(choice.why).toBe('spread')
    expect(['a', 'c']).toContain(choice.senderId)
  })

  it('moves when its number left the pool, even in an open window', () => {
    const choice = chooseSender({
      members: [member('a'), member('c')],
      recipient: '+447900000001',
      sticky: { senderId: 'b', windowOpen: true },
      home: 'a',
    })
    expect(choice.why).toBe('spread')
  })
})

describe('no healthy member', () => {
  const down = [member('a', 1, 'quality_red'), member('b', 1, 'paused')]
  it("waits on the recipient's own number when it is still a member", () => {
    expect(
      chooseSender({
        members: down,
        recipient: '+447900000001',
        sticky: { senderId: 'b', windowOpen: false },
        home: 'a',
      }),
    ).toEqual({ senderId: 'b', why: 'no_healthy_member' })
  })
  it("else on the key's own sender", () => {
    expect(chooseSender({ members: down, recipient: '+447900000001', home: 'a' })).toEqual({
      senderId: 'a',
      why: 'no_healthy_member',
    })
  })
})

describe("a send's own senderId", () => {
  it('is honoured when it is a member, healthy or not', () => {
    const members = [member('a'), member('b', 1, 'quality_red')]
    expect(chooseSender({ members, recipient: '+447900000001', requested: 'b', home: 'a' })).toEqual({
      senderId: 'b',
      why: 'requested',
    })
  })
  it('is refused when it is not', () => {
    expect(chooseSender({ members: pool, recipient: '+447900000001', requested: 'z', home: 'a' })).toEqual({
      senderId: null,
      why: 'not_in_pool',
    })
  })
})
