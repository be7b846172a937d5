import { portfolioReachKey, portfolioRecentKey } from '@dispatch/runtime'
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

/** A template delivery to `phone` through a number of `portfolio` under `limit`: what the count reads of it. */
function delivery(prefix: string, portfolio: string, limit: number, phone: string) {
  return {
    data: { message: { type: 'template', body: { phone } } },
    lane: {
      platform: { phoneNumberId: `number-of-${portfolio}` },
      settings: { messagingLimit: { limit, portfolio, policy: 'hold', tracked: true, source: 'admin' } },
    },
    deps: { claims: redis, prefix },
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
})
