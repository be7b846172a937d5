import { poolStickyKey } from '@dispatch/runtime'
import { freePort, testQueuePrefix, testRedisUrl } from '@dispatch/testing'
import { Redis } from 'ioredis'
import { afterAll, describe, expect, it } from 'vitest'
import { StickyRead, StickyStore } from '../../src/sending/pools/sticky.ts'

// A pooled single send's early sticky read (pools/on-accept.ts `prefetchSticky`): taken from the
// object as the turn's MGET lands, or waited for when the send's checks read nothing.
const DAY = 86_400_000
const redis = new Redis(testRedisUrl())
afterAll(() => redis.disconnect())

describe('StickyRead', () => {
  it('takes the record as the MGET lands, and a send that asks before then waits for it', async () => {
    const prefix = testQueuePrefix()
    const store = new StickyStore(redis, prefix, 30 * DAY)
    await store.write([
      { poolId: 'p1', recipient: '+5511900000001', senderId: 'b', inboundAt: 5, writtenAt: 1000 },
    ])
    const read = new StickyRead('p1', '+5511900000001', 'a')
    const none = new StickyRead('p1', '+5511900000002', 'a')
    store.prefetch(read)
    store.prefetch(none)
    expect(read.settled).toBe(false)
    // Asked before the turn's MGET went out: answered once it lands.
    const waited = await read.wait()
    expect(waited).toEqual({ senderId: 'b', inboundAt: 5, writtenAt: 1000 })
    expect(read.settled).toBe(true)
    expect(read.record).toEqual(waited)
    expect(await read.wait()).toEqual(waited)
    // No record: undefined, settled in the same MGET.
    expect(none.settled).toBe(true)
    expect(none.record).toBeUndefined()
    expect(await redis.exists(poolStickyKey(prefix, 'p1', '+5511900000001'))).toBe(1)
  })

  it('is null, not a rejection, when Redis cannot be read', async () => {
    const down = new Redis(`redis://127.0.0.1:${await freePort()}`, {
      enableOfflineQueue: false,
      lazyConnect: true,
      maxRetriesPerRequest: 0,
    })
    const store = new StickyStore(down, testQueuePrefix(), 30 * DAY)
    const read = new StickyRead('p1', '+5511900000001', 'a')
    store.prefetch(read)
    expect(await read.wait()).toBeNull()
    expect(read.settled).toBe(true)
    down.disconnect()
  })
})
