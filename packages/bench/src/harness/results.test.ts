import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import {
  type BenchResult,
  formatNumber,
  formatRatio,
  judgeAim,
  parseAim,
  readResults,
  recordResult,
  renderTable,
} from './results.ts'

describe('parseAim', () => {
  it('reads plain ratio bounds, in either notation', () => {
    expect(parseAim('≥ 0.9')).toEqual([{ kind: 'ratio', op: '≥', value: 0.9, text: '≥ 0.9' }])
    expect(parseAim('<= 1.1')).toEqual([{ kind: 'ratio', op: '≤', value: 1.1, text: '<= 1.1' }])
    expect(parseAim('ratio ≤ 1.5×')[0]).toMatchObject({ kind: 'ratio', op: '≤', value: 1.5 })
  })

  it('splits a compound aim and tells a ratio of a percentile from an absolute bound', () => {
    expect(parseAim('≥ 1.0, p99 ≤ 1.2×')).toMatchObject([
      { kind: 'ratio', op: '≥', value: 1 },
      { kind: 'ratio', op: '≤', value: 1.2, text: 'p99 ≤ 1.2×' },
    ])
    expect(parseAim('ratio ≤ 1.5, p95 ≤ 25 ms')).toMatchObject([
      { kind: 'ratio', op: '≤', value: 1.5 },
      { kind: 'absolute', op: '≤', value: 25, unit: 'ms' },
    ])
  })

  it('turns "N× better" the way the line is better', () => {
    const aim = 'p99 ≤ 2 s and ratio ≤ 0.05, that is ≥ 20× better'
    expect(parseAim(aim, 'lower')).toMatchObject([
      { kind: 'absolute', value: 2, unit: 's' },
      { kind: 'ratio', op: '≤', value: 0.05 },
      { kind: 'ratio', op: '≤', value: 1 / 20 },
    ])
    expect(parseAim('≥ 20× better', 'higher')).toMatchObject([{ kind: 'ratio', op: '≥', value: 20 }])
  })

  it('keeps words as words', () => {
    expect(parseAim('reported (the issue sets none)')).toEqual([
      { kind: 'other', text: 'reported (the issue sets none)' },
    ])
  })
})

describe('judgeAim', () => {
  const line = (
    ratio: number | null,
    aim: string | undefined,
    extra: Partial<{ name: string; unit: string }> = {},
  ) => ({
    name: 'delivery throughput',
    figure: 10,
    unit: 'msg/s',
    better: 'higher' as const,
    ratio,
    aim,
    ...extra,
  })

  it('judges a ratio bound on the ratio, the bound itself included', () => {
    for (const ratio of [0.5, 0.79, 0.8, 0.81, 1.3]) {
      expect(judgeAim(line(ratio, '≥ 0.8')).met).toBe(ratio >= 0.8)
      expect(judgeAim(line(ratio, '≤ 0.8')).met).toBe(ratio <= 0.8)
    }
  })

  it('judges a percentile ratio only on the line of that percentile', () => {
    const aim = '≥ 1.0, p99 ≤ 1.2×'
    expect(judgeAim(line(1.1, aim, { name: 'send-text p99 latency' }))).toEqual({ met: true })
    expect(judgeAim(line(1.3, aim, { name: 'send-text p99 latency' })).met).toBe(false)
    // On the throughput line the p99 clause is another figure's: the ratio part alone is judged.
    const throughput = judgeAim(line(1.1, aim, { name: 'send-text throughput' }))
    expect(throughput.met).toBeNull()
    expect(throughput.note).toContain('p99 ≤ 1.2×')
    expect(judgeAim(line(0.9, aim, { name: 'send-text throughput' })).met).toBe(false)
  })

  it('leaves an absolute bound on a comparison unjudged, unless a ratio bound already fails', () => {
    const aim = 'ratio ≤ 1.5, p95 ≤ 25 ms'
    const held = judgeAim(line(1.2, aim, { unit: 'ms' }))
    expect(held.met).toBeNull()
    expect(held.note).toMatch(/p95 ≤ 25 ms/)
    expect(judgeAim(line(1.6, aim, { unit: 'ms' })).met).toBe(false)
    const only = judgeAim(line(0.4, 'p99 ≤ 15 ms at 100 connections', { unit: 'ms' }))
    expect(only).toEqual({
      met: null,
      note: 'not a plain ratio bound, not judged: p99 ≤ 15 ms at 100 connections',
    })
  })

  it('judges a figure without a baseline on its absolute bound in the same unit only', () => {
    const p99 = (figure: number, unit = 'ms') =>
      judgeAim({
        name: 'webhook latency p99',
        figure,
        unit,
        better: 'lower',
        ratio: null,
        aim: 'p99 ≤ 250 ms',
      })
    expect(p99(249).met).toBe(true)
    expect(p99(671).met).toBe(false)
    expect(p99(0.2, 's').met).toBeNull()
  })

  it('has nothing to judge without an aim or with words', () => {
    expect(judgeAim(line(2, undefined)).met).toBeNull()
    expect(judgeAim(line(2, 'ratio near 1')).met).toBeNull()
  })
})

describe('the results file and its table', () => {
  let dir: string | undefined
  afterEach(() => {
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  const result = (over: Partial<BenchResult>): BenchResult => {
    const base = {
      name: 'delivery throughput',
      figure: 4000,
      baseline: 10000,
      unit: 'msg/s',
      better: 'higher' as const,
      aim: '≥ 0.8',
      benchmark: 'packages/bench/src/worker/delivery.ts',
      timestamp: '2026-11-26T10:00:00.000Z',
      machine: '2 cores, 24 GiB, linux, Node v24.0.0',
      ...over,
    }
    const ratio = base.baseline === null ? null : base.figure / base.baseline
    return { ...base, ratio, ...judgeAim({ ...base, ratio }) }
  }

  it('renders the latest line of each figure, judged, with the run and the machine', () => {
    dir = mkdtempSync(join(tmpdir(), 'bench-results-'))
    const file = join(dir, 'latest.jsonl')
    recordResult(result({ figure: 3000 }), file)
    recordResult(
      result({ name: 'webhook fan-out throughput', figure: 900, baseline: 1000, aim: '≥ 0.7' }),
      file,
    )
    recordResult(result({ figure: 9000 }), file) // the same figure again: the later line counts
    const read = readResults(file)
    expect(read).toHaveLength(3)

    const table = renderTable(read).split('\n')
    expect(table[0]).toBe('Results of 2026-11-26 on 2 cores, 24 GiB, linux, Node v24.0.0.')
    const rows = table.filter((l) => l.startsWith('| worker/'))
    expect(rows).toHaveLength(2)
    expect(rows[0]).toContain('webhook fan-out throughput')
    expect(rows[0]).toContain('| 0.90 (higher is better) | ≥ 0.7 | yes |')
    expect(rows[1]).toContain('| 9,000 msg/s | 10,000 msg/s | 0.90 (higher is better) | ≥ 0.8 | yes |')
    expect(table.some((l) => l.includes('| Run |'))).toBe(false)
  })

  it('gives each row its date when the lines come from different days, and says why a figure is unjudged', () => {
    const table = renderTable([
      result({ figure: 1000 }),
      result({
        benchmark: 'packages/bench/src/api/webhook-latency.ts',
        name: 'webhook latency p99 at 200/s',
        figure: 671.1,
        baseline: null,
        unit: 'ms',
        better: 'lower',
        aim: 'p99 ≤ 250 ms',
        timestamp: '2026-11-23T09:00:00.000Z',
      }),
      result({
        name: 'list p95',
        unit: 'ms',
        better: 'lower',
        figure: 12,
        baseline: 9,
        aim: 'ratio ≤ 1.5, p95 ≤ 25 ms',
      }),
    ])
    expect(table).toContain('Results of 2026-11-23 to 2026-11-26')
    expect(table).toContain('| Run |')
    expect(table).toContain('| 0.10 (higher is better) | ≥ 0.8 | **no** | 2026-11-26 |')
    expect(table).toContain(
      '| api/webhook-latency | webhook latency p99 at 200/s | 671.1 ms | – | – | p99 ≤ 250 ms | **no** | 2026-11-23 |',
    )
    expect(table).toContain(
      '| 1.33 (lower is better) | ratio ≤ 1.5, p95 ≤ 25 ms | – (the ratio bound holds; not judged: p95 ≤ 25 ms) |',
    )
  })

  it('says when there is nothing to show', () => {
    expect(renderTable([])).toMatch(/No benchmark results/)
  })
})

describe('formatting', () => {
  it('keeps small ratios and figures readable', () => {
    expect(formatRatio(0.00005)).toBe('0.000050')
    expect(formatRatio(0.0441)).toBe('0.044')
    expect(formatRatio(1.234)).toBe('1.23')
    expect(formatNumber(0.017)).toBe('0.017')
    expect(formatNumber(8446.784)).toBe('8,446.78')
  })
})
