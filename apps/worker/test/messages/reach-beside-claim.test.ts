import { portfolioReachKey, portfolioRecentKey, serviceWindowKey } from '@dispatch/runtime'
import { testQueuePrefix, testRedisUrl } from '@dispatch/testing'
import { Redis } from 'ioredis'
import { afterAll, describe, expect, it } from 'vitest'
import { countBesideClaim } from '../../src/messages/delivery/reach-beside-claim.ts'
import type { MessageDelivery } from '../../src/messages/delivery/types.ts'

/**
 * The worker's count beside the claim (apps/worker/src/messages/delivery/reach-beside-claim.ts):
 * the counts of one turn gathered into one script call per portfolio and limit, each delivery
 * answered its own recipient's count.
 */
const redis = new Redis(testRedisUrl())
afterAll(() => redis.disconnect())

/**
 * A template delivery to `phone` through a number of `portfolio` under `limit`: what the count reads
 * of it; `accepted`: its job's acceptance, `accepted.windowClosesAt` the window the accept path read.
 */
function delivery(
  prefix: string,
  portfolio: string,
  limit: number,
  phone: string,
  accepted: { at?: number; windowClosesAt?: number } = {},
  claims: Redis = redis,
) {
  return {
    data: {
      message: { type: 'template', body: { phone } },
      acceptedAt: new Date(accepted.at ?? Date.now()).toISOString(),
      ...(accepted.windowClosesAt === undefined ? {} : { windowClosesAt: accepted.windowClosesAt }),
    },
    lane: {
      platform: { phoneNumberId: `number-of-${portfolio}` },
      settings: { messagingLimit: { limit, portfolio, policy: 'hold', tracked: true, source: 'admin' } },
    },
    deps: { claims, prefix },
  } as unknown as MessageDelivery
}

describe('the count beside the claim', () => {
  it('answers each delivery of a turn, over two portfolios and two limits, from its own call', async () => {
    const prefix = testQueuePrefix()
    // One turn: three recipients of portfolio a (limit 10, far: appended), two of b (limit 1:
    // the second held until the first leaves the 24 hours).
    const counts = [
      countBesideClaim(delivery(prefix, 'a', 10, '+5511900000001'), '+5511900000001', 'h1'),
      countBesideClaim(delivery(prefix, 'b', 1, '+5511900000002'), '+5511900000002', 'h2'),
      countBesideClaim(delivery(prefix, 'a', 10, '+5511900000003'), '+5511900000003', 'h3'),
      countBesideClaim(delivery(prefix, 'b', 1, '+5511900000004'), '+5511900000004', 'h4'),
      countBesideClaim(delivery(prefix, 'a', 10, '+5511900000005'), '+5511900000005', 'h5'),
    ]
    const answers = await Promise.all(counts)
    expect(answers.map((a) => a?.kind)).toEqual(['reached', 'reached', 'reached', 'held', 'reached'])
    expect(answers.map((a) => (a?.kind === 'reached' ? a.added : undefined))).toEqual([
      true,
      true,
      true,
      undefined,
      true,
    ])
    const entries = await redis.lrange(portfolioRecentKey(prefix, 'a'), 0, -1)
    expect(entries.map((e) => e.split(' ')[1])).toEqual(['h1', 'h3', 'h5'])
    // b at a limit of 1: counted exactly (its set), its second recipient not counted.
    expect(await redis.zrange(portfolioReachKey(prefix, 'b'), '0', '-1')).toEqual(['h2'])
    await redis.del(
      portfolioRecentKey(prefix, 'a'),
      portfolioReachKey(prefix, 'a'),
      portfolioRecentKey(prefix, 'b'),
      portfolioReachKey(prefix, 'b'),
    )
  })

  it('counts by the window the accept path read while that read stands, and reads it again after', async () => {
    const prefix = testQueuePrefix()
    const now = Date.now()
    const number = 'number-of-c'
    // Each of the three wrote a minute ago: their windows are open now.
    for (const phone of ['+5511900000011', '+5511900000012', '+5511900000013']) {
      await redis.set(serviceWindowKey(prefix, number, phone), String(now - 60_000), 'PX', 120_000)
    }
    // A portfolio's first turn goes through the script, which reads every window it is given.
    const warm = await countBesideClaim(
      delivery(prefix, 'c', 10, '+5511900000010', { windowClosesAt: 0 }),
      '+5511900000010',
      'h10',
    )
    expect(warm?.kind).toBe('reached')
    // Accepted just now with the window closed (they wrote since): appended, nothing read.
    const known = await countBesideClaim(
      delivery(prefix, 'c', 10, '+5511900000011', { windowClosesAt: 0 }),
      '+5511900000011',
      'h11',
    )
    expect(known).toMatchObject({ kind: 'reached', added: true })
    const counts = [
      // Accepted two minutes ago with the window closed: past WINDOW_KNOWN_AT_ACCEPT_MS, read again: open.
      countBesideClaim(
        delivery(prefix, 'c', 10, '+5511900000012', { at: now - 120_000, windowClosesAt: 0 }),
        '+5511900000012',
        'h12',
      ),
      // No read at accept: read now, open.
      countBesideClaim(delivery(prefix, 'c', 10, '+5511900000013'), '+5511900000013', 'h13'),
      // Accepted with a window open for another hour (no window in Redis): not counted, no call.
      countBesideClaim(
        delivery(prefix, 'c', 10, '+5511900000014', { windowClosesAt: now + 3_600_000 }),
        '+5511900000014',
        'h14',
      ),
    ]
    const answers = await Promise.all(counts)
    expect(answers.map((a) => a?.kind)).toEqual(['open', 'open', 'open'])
    const entries = await redis.lrange(portfolioRecentKey(prefix, 'c'), 0, -1)
    expect(entries.map((e) => e.split(' ')[1])).toEqual(['h10', 'h11'])
    await redis.del(portfolioRecentKey(prefix, 'c'), portfolioReachKey(prefix, 'c'))
  })

  it('appends recipients known outside their window without the script, and at the limit takes them back and holds them', async () => {
    const prefix = testQueuePrefix()
    const closed = { windowClosesAt: 0 }
    // The first turn of a portfolio goes through the script (it trims the list); the next ones append.
    const first = await countBesideClaim(
      delivery(prefix, 'd', 4, '+5511900000021', closed),
      '+5511900000021',
      'h21',
    )
    expect(first).toMatchObject({ kind: 'reached', added: true })
    const second = await Promise.all([
      countBesideClaim(delivery(prefix, 'd', 4, '+5511900000022', closed), '+5511900000022', 'h22'),
      countBesideClaim(delivery(prefix, 'd', 4, '+5511900000023', closed), '+5511900000023', 'h23'),
    ])
    expect(second.map((a) => a?.kind === 'reached' && a.added)).toEqual([true, true])
    const recent = portfolioRecentKey(prefix, 'd')
    expect((await redis.lrange(recent, 0, -1)).map((e) => e.split(' ')[1])).toEqual(['h21', 'h22', 'h23'])
    // Another process counted one more in the exact set: the portfolio is at its limit of 4.
    await redis.zadd(portfolioReachKey(prefix, 'd'), String(Date.now()), 'h-other')
    const past = await countBesideClaim(
      delivery(prefix, 'd', 4, '+5511900000024', closed),
      '+5511900000024',
      'h24',
    )
    expect(past?.kind).toBe('held')
    expect(past?.kind === 'held' && past.roomAt).toBeGreaterThan(Date.now())
    // Taken back from the list, counted nowhere.
    const reach = [
      ...(await redis.lrange(recent, 0, -1)).map((e) => e.split(' ')[1]),
      ...(await redis.zrange(portfolioReachKey(prefix, 'd'), '0', '-1')),
    ]
    expect(reach).not.toContain('h24')
    expect(reach.sort()).toEqual(['h-other', 'h21', 'h22', 'h23'])
    await redis.del(recent, portfolioReachKey(prefix, 'd'))
  })

  it('never lets more recipients through than the limit while appends and scripts race over several connections', async () => {
    const prefix = testQueuePrefix()
    const limit = 25
    const connections = Array.from(
      { length: 4 },
      () => new Redis(testRedisUrl(), { enableAutoPipelining: true }),
    )
    try {
      const closed = { windowClosesAt: 0 }
      let n = 0
      const countOne = (claims: Redis) => {
        const phone = `+55119100${String(n++).padStart(5, '0')}`
        return countBesideClaim(delivery(prefix, 'e', limit, phone, closed, claims), phone, `h-${phone}`)
      }
      // Each connection's first turn goes through the script; then waves, some in one callback, some a
      // microtask or a turn apart, over every connection at once.
      const answers = await Promise.all(connections.map((c) => countOne(c)))
      for (let wave = 0; wave < 12; wave++) {
        const counts: unknown[] = []
        for (const c of connections) {
          counts.push(countOne(c), countOne(c))
          counts.push(Promise.resolve().then(() => countOne(c)))
          counts.push(new Promise((r) => setImmediate(r)).then(() => countOne(c)))
        }
        answers.push(...((await Promise.all(counts)) as typeof answers))
      }
      const letThrough = answers.filter((a) => a?.kind === 'reached').length
      expect(letThrough).toBe(limit)
      expect(answers.filter((a) => a?.kind === 'held')).toHaveLength(answers.length - limit)
      // What the reach holds is exactly who was let through.
      const members = new Set([
        ...(await redis.lrange(portfolioRecentKey(prefix, 'e'), 0, -1)).map((e) => e.split(' ')[1]),
        ...(await redis.zrange(portfolioReachKey(prefix, 'e'), '0', '-1')),
      ])
      expect(members.size).toBe(limit)
    } finally {
      for (const c of connections) c.disconnect()
      await redis.del(portfolioRecentKey(prefix, 'e'), portfolioReachKey(prefix, 'e'))
    }
  })
})
