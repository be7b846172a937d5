import { describe, expect, it } from 'vitest'
import { KnownReaches, REACH_TTL_MS } from './known-reach.ts'

const DAY = 86_400_000

describe('KnownReaches', () => {
  it('knows nothing before a read: every send reads', () => {
    const reaches = new KnownReaches()
    expect(reaches.free('p', 'n1', 'ana', 0)).toBe(false)
    expect(reaches.fits('p', 10, 0)).toBe(false)
    expect(reaches.take('p', 10, ['ana'], 0)).toBe(false)
  })

  it('lets sends through while the read reach and those let through since stay within the limit', () => {
    const reaches = new KnownReaches()
    reaches.remember('p', 7, ['ana'], 1000)
    expect(reaches.take('p', 10, ['bia', 'caio'], 1001)).toBe(true)
    // 7 read + 1 with that read + 2 since: full, so the next new one reads again (without taking room).
    expect(reaches.fits('p', 10, 1002)).toBe(false)
    expect(reaches.take('p', 10, ['davi'], 1002)).toBe(false)
    // Another portfolio, or the same under a higher limit, is judged on its own numbers.
    expect(reaches.take('q', 10, ['davi'], 1002)).toBe(false)
    expect(reaches.take('p', 11, ['davi'], 1002)).toBe(true)
  })

  it('takes no more room for a recipient let through already, nor twice for one named twice', () => {
    const reaches = new KnownReaches()
    reaches.remember('p', 8, ['ana'], 1000)
    expect(reaches.free('p', 'n1', 'ana', 1001)).toBe(true)
    expect(reaches.take('p', 10, ['bia', 'bia'], 1001)).toBe(true)
    // Full (8 + ana + bia), yet ana and bia again take nothing: free, no read.
    expect(reaches.free('p', 'n1', 'bia', 1002)).toBe(true)
    expect(reaches.take('p', 10, ['ana', 'bia'], 1002)).toBe(true)
    expect(reaches.take('p', 10, ['caio'], 1002)).toBe(false)
    // What was let through is known only with the read it follows.
    expect(reaches.free('p', 'n1', 'ana', 1000 + REACH_TTL_MS)).toBe(false)
  })

  it('keeps a recipient the reach held free until 24 hours after it was counted, in its portfolio only', () => {
    const reaches = new KnownReaches()
    reaches.countedUntil('p', 'ana', 5000 + DAY)
    expect(reaches.free('p', 'n1', 'ana', 5000 + DAY - 1)).toBe(true)
    expect(reaches.free('p', 'n2', 'ana', 5000 + DAY - 1)).toBe(true)
    expect(reaches.free('p', 'n1', 'ana', 5000 + DAY)).toBe(false)
    expect(reaches.free('q', 'n1', 'ana', 6000)).toBe(false)
  })

  it('keeps a recipient whose window was open free with that number only, until the window closes', () => {
    const reaches = new KnownReaches()
    reaches.openUntil('n1', 'ana', 5000 + DAY)
    expect(reaches.free('p', 'n1', 'ana', 5000 + DAY - 1)).toBe(true)
    expect(reaches.free('q', 'n1', 'ana', 5000 + DAY - 1)).toBe(true)
    expect(reaches.free('p', 'n2', 'ana', 6000)).toBe(false)
    expect(reaches.free('p', 'n1', 'ana', 5000 + DAY)).toBe(false)
  })

  it('forgets a read after a second', () => {
    const reaches = new KnownReaches()
    reaches.remember('p', 0, [], 1000)
    expect(reaches.take('p', 10, ['ana'], 1000 + REACH_TTL_MS - 1)).toBe(true)
    expect(reaches.take('p', 10, ['bia'], 1000 + REACH_TTL_MS)).toBe(false)
  })
})
