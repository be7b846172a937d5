import { describe, expect, it } from 'vitest'
import { KnownReaches, REACH_TTL_MS } from './known-reach.ts'

describe('KnownReaches', () => {
  it('knows nothing before a read: every send reads', () => {
    const reaches = new KnownReaches()
    expect(reaches.fits('p', 10, 1, 0)).toBe(false)
    expect(reaches.take('p', 10, 1, 0)).toBe(false)
  })

  it('lets sends through while the read reach and those let through since stay within the limit', () => {
    const reaches = new KnownReaches()
    reaches.remember('p', 7, 1, 1000)
    expect(reaches.take('p', 10, 2, 1001)).toBe(true)
    // 7 read + 1 with that read + 2 since: full, so the next reads again (without taking room).
    expect(reaches.fits('p', 10, 1, 1002)).toBe(false)
    expect(reaches.take('p', 10, 1, 1002)).toBe(false)
    // Another portfolio, or the same under a higher limit, is judged on its own numbers.
    expect(reaches.take('q', 10, 1, 1002)).toBe(false)
    expect(reaches.take('p', 11, 1, 1002)).toBe(true)
  })

  it('forgets a read after a second', () => {
    const reaches = new KnownReaches()
    reaches.remember('p', 0, 0, 1000)
    expect(reaches.take('p', 10, 1, 1000 + REACH_TTL_MS - 1)).toBe(true)
    expect(reaches.take('p', 10, 1, 1000 + REACH_TTL_MS)).toBe(false)
  })
})
