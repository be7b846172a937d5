import {
  currentBenchmark,
  describeMachine,
  formatNumber,
  formatRatio,
  judgeAim,
  recordResult,
} from './results.ts'

export interface BenchLine {
  name: string
  figure: number
  baseline: number
  unit: string
  /** `higher` when more is better (throughput), `lower` when less is (latency). */
  better: 'higher' | 'lower'
  aim?: string
}

/**
 * Prints one comparison: the figure, its baseline from the same run, and the ratio; and appends it,
 * with its aim judged (`judgeAim`), to the results file `pnpm bench:table` reads.
 */
export function printComparison(line: BenchLine) {
  const ratio = line.figure / line.baseline
  const fmt = formatNumber
  console.log(
    `${line.name}: ${fmt(line.figure)} ${line.unit} vs baseline ${fmt(line.baseline)} ${line.unit}` +
      ` → ratio ${formatRatio(ratio)} (${line.better} is better${line.aim ? `; aim ${line.aim}` : ''})`,
  )
  record({ ...line, ratio })
  return ratio
}

/**
 * Prints a figure that has no baseline, only an absolute aim in its own unit (a latency p99 at a
 * given load, say), whether the aim holds, and records it as `printComparison` does.
 */
export function printFigure(line: Omit<BenchLine, 'baseline'>) {
  const fmt = formatNumber
  const { met } = judgeAim({ ...line, ratio: null })
  const verdict = met === null ? '' : met ? ': met' : ': not met'
  console.log(
    `${line.name}: ${fmt(line.figure)} ${line.unit}${line.aim ? ` (aim ${line.aim}${verdict})` : ''}`,
  )
  record({ ...line, baseline: null, ratio: null })
  return met
}

function record(line: Omit<BenchLine, 'baseline'> & { baseline: number | null; ratio: number | null }) {
  const name = line.name.trim()
  recordResult({
    name,
    figure: line.figure,
    baseline: line.baseline,
    unit: line.unit,
    better: line.better,
    ratio: line.ratio,
    aim: line.aim ?? null,
    ...judgeAim({ ...line, name }),
    benchmark: currentBenchmark(),
    timestamp: new Date().toISOString(),
    machine: describeMachine(),
  })
}
