import { describe, expect, it } from 'vitest'
import { blockOrder, compareSlices, type Slice } from './switched-load.ts'

describe('blockOrder', () => {
  it('runs each side as often before any other as after it, at the same distance, over a cycle', () => {
    const sides = ['A', 'B', 'C', 'D']
    const blocks = Array.from({ length: 2 * sides.length }, (_, b) => blockOrder(sides, b))
    expect(blocks.slice(0, 4)).toEqual([
      ['A', 'B', 'C', 'D'],
      ['D', 'C', 'B', 'A'],
      ['B', 'C', 'D', 'A'],
      ['A', 'D', 'C', 'B'],
    ])
    for (const x of sides) {
      for (const y of sides) {
        if (x === y) continue
        // Signed distance of y after x in each block: their sum is 0 when drift cancels.
        const distances = blocks.map((order) => order.indexOf(y) - order.indexOf(x))
        expect(distances.filter((d) => d > 0)).toHaveLength(sides.length)
        expect(distances.reduce((sum, d) => sum + d, 0)).toBe(0)
      }
    }
  })
})

describe('compareSlices', () => {
  // Nine tenths of each slice's CPU on the main thread, the rest on V8's.
  const slice = (side: string, [cpuNs, requests]: [number, number]): Slice => ({
    side,
    cpuNs,
    requests,
    threads: new Map([
      ['main', cpuNs * 0.9],
      ['V8Worker', cpuNs * 0.1],
    ]),
  })
  const block = (pooled: [number, number], single: [number, number]): Slice[] => [
    slice('pooled', pooled),
    slice('single', single),
  ]

  it("pairs each block's CPU a request, and totals every slice's", () => {
    const blocks = [
      block([110_000_000, 1000], [100_000_000, 1000]),
      block([60_000_000, 500], [100_000_000, 1000]),
      block([210_000_000, 2000], [200_000_000, 2000]),
    ]
    const c = compareSlices(blocks, 'pooled', 'single')
    expect(c.ratios.map((r) => r.toFixed(3))).toEqual(['1.100', '1.200', '1.050'])
    expect(c.median).toBeCloseTo(1.1)
    // 380 ms over 3,500 requests against 400 ms over 4,000.
    expect(c.figureUs).toBeCloseTo(380_000 / 3500)
    expect(c.baselineUs).toBeCloseTo(100)
    // And by thread, each on the same requests.
    expect(c.threads).toEqual([
      { name: 'main', figureUs: expect.closeTo((0.9 * 380_000) / 3500), baselineUs: expect.closeTo(90) },
      { name: 'V8Worker', figureUs: expect.closeTo((0.1 * 380_000) / 3500), baselineUs: expect.closeTo(10) },
    ])
  })

  it('drops a block where a side had no answer, rather than pair nothing', () => {
    const c = compareSlices(
      [block([1_000, 0], [1_000, 1]), block([2_000, 1], [1_000, 1])],
      'pooled',
      'single',
    )
    expect(c.ratios).toEqual([2])
  })
})
