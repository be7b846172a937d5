import { describe, expect, it } from 'vitest'
import { median, medianInterval } from './stats.ts'

describe('medianInterval', () => {
  it('is the 5th and 12th smallest of 16 rounds at 90 %, in any order', () => {
    const rounds = [9, 3, 16, 1, 12, 7, 5, 14, 2, 11, 8, 4, 15, 6, 10, 13]
    expect(medianInterval(rounds)).toEqual([5, 12])
    expect(median(rounds)).toBe(9)
  })

  it('widens with the confidence asked and narrows with more rounds', () => {
    const sixteen = Array.from({ length: 16 }, (_, i) => i + 1)
    // 99 %: P(B ≤ 2) = 0.0021 ≤ 0.005 < P(B ≤ 3): the 3rd and the 14th.
    expect(medianInterval(sixteen, 0.99)).toEqual([3, 14])
    const sixtyFour = Array.from({ length: 64 }, (_, i) => i + 1)
    const [low, high] = medianInterval(sixtyFour) as [number, number]
    // A smaller share of the rounds: 25th–40th of 64 against 5th–12th of 16.
    expect((high - low) / 64).toBeLessThan((12 - 5) / 16)
    expect(low).toBeLessThan(32.5)
    expect(high).toBeGreaterThan(32.5)
  })

  it('is undefined for too few rounds to hold the median at that confidence', () => {
    expect(medianInterval([1, 2, 3, 4])).toBeUndefined()
    expect(medianInterval([1, 2, 3, 4, 5])).toEqual([1, 5])
    expect(medianInterval([])).toBeUndefined()
  })
})
