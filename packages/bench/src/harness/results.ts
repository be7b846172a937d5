/**
 * The benchmarks' results file and the table `pnpm bench:table` prints from it. Every comparison a
 * benchmark prints (`printComparison`, `printFigure` in report.ts) is also appended here as one JSON
 * line; `pnpm bench` empties the file first and prints the table last. Nothing here touches a
 * database or Redis, so the table can be printed (and tested) without the services.
 */
import { appendFileSync, existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs'
import { cpus, platform, totalmem } from 'node:os'
import { dirname, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { benchEnv } from './env.ts'

/** The repository's root (this file is packages/bench/src/harness/results.ts). */
export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../../../..')

/** Where results go: `BENCH_RESULTS_FILE`, else bench-results/latest.jsonl at the root (git-ignored). */
export const resultsFile = () => benchEnv().resultsFile ?? resolve(repoRoot, 'bench-results/latest.jsonl')

export type Better = 'higher' | 'lower'

export interface BenchResult {
  name: string
  figure: number
  /** null for a figure judged against an absolute aim alone (a latency p99 at a given load). */
  baseline: number | null
  unit: string
  better: Better
  ratio: number | null
  aim: string | null
  /** Whether the aim holds; null when the aim cannot be judged from what was measured (see `note`). */
  met: boolean | null
  /** Why `met` is null, or which part of the aim was not judged. */
  note?: string
  /** The benchmark's script, relative to the repository root (packages/bench/src/worker/delivery.ts). */
  benchmark: string
  /** ISO 8601, when the line was printed. */
  timestamp: string
  machine: string
}

type Op = '≥' | '≤'
/** One clause of an aim: a bound on the ratio, a bound on the figure itself, or words. */
export type AimClause =
  | { kind: 'ratio'; op: Op; value: number; text: string }
  | { kind: 'absolute'; op: Op; value: number; unit: string; text: string }
  | { kind: 'other'; text: string }

const OP = '(≥|>=|≤|<=)'
const NUM = String.raw`(\d+(?:\.\d+)?)`
const normalOp = (op: string): Op => (op === '≥' || op === '>=' ? '≥' : '≤')

/**
 * Splits an aim into clauses (on commas, semicolons and "and") and reads each:
 * - `≥ 0.9`, `ratio ≤ 1.5`, `≤ 1.2×`, `p99 ≤ 1.2×`: a bound on the ratio (a percentile named with
 *   `×` is a ratio of that percentile, so it bounds a line whose name names the same percentile);
 * - `≥ 20× better`: the ratio's bound turned the way the line is better (`lower`: ratio ≤ 1/20);
 * - `p95 ≤ 25 ms`, `p99 ≤ 2 s at 200/s`: a bound on the figure in that unit;
 * - anything else (`near 1`, `reported`): words, never judged.
 */
export function parseAim(aim: string, better: Better = 'higher'): AimClause[] {
  const clauses = aim
    .split(/\s*(?:,|;|\band\b)\s*/)
    .map((c) => c.trim())
    .filter(Boolean)
  return clauses.map((text): AimClause => {
    const bare = text.replace(/^that is\s+/i, '')
    const timesBetter = new RegExp(String.raw`^${OP}\s*${NUM}\s*[×x]\s+better$`).exec(bare)
    if (timesBetter) {
      const value = Number(timesBetter[2])
      // "≥ N× better": higher-is-better means ratio ≥ N, lower-is-better ratio ≤ 1/N.
      return better === 'higher'
        ? { kind: 'ratio', op: '≥', value, text }
        : { kind: 'ratio', op: '≤', value: 1 / value, text }
    }
    const ratio = new RegExp(String.raw`^(?:ratio\s*|(p\d+)\s*)?${OP}\s*${NUM}\s*([×x])?$`, 'i').exec(bare)
    // A percentile without × is an absolute bound with no unit (kept as words); with × a ratio.
    if (ratio && (!ratio[1] || ratio[4])) {
      return { kind: 'ratio', op: normalOp(ratio[2] as string), value: Number(ratio[3]), text }
    }
    const absolute = new RegExp(String.raw`^(?:p\d+\s*)?${OP}\s*${NUM}\s*(ms|s|µs|%|[A-Za-z/]+)\b`).exec(bare)
    if (absolute) {
      return {
        kind: 'absolute',
        op: normalOp(absolute[1] as string),
        value: Number(absolute[2]),
        unit: absolute[3] as string,
        text,
      }
    }
    return { kind: 'other', text }
  })
}

const holds = (value: number, op: Op, bound: number) => (op === '≥' ? value >= bound : value <= bound)

/**
 * Whether an aim is met. A comparison (with a baseline) is judged on its ratio: every ratio bound
 * must hold. A bound on the figure itself (`p95 ≤ 25 ms`) or words cannot be judged from a ratio:
 * then `met` is null unless a ratio bound already fails (false is certain), and `note` names the
 * clauses left unjudged. A figure without a baseline is judged on its absolute bounds in its own
 * unit.
 */
export function judgeAim(line: {
  name: string
  figure: number
  ratio: number | null
  unit: string
  better: Better
  aim?: string | null
}): { met: boolean | null; note?: string } {
  if (!line.aim) return { met: null, note: 'no aim' }
  const judged: boolean[] = []
  const unjudged: string[] = []
  for (const clause of parseAim(line.aim, line.better)) {
    if (clause.kind === 'ratio' && line.ratio !== null) {
      const percentile = /^(?:that is\s+)?(p\d+)/i.exec(clause.text)?.[1]
      if (percentile && !new RegExp(`\\b${percentile}\\b`, 'i').test(line.name)) unjudged.push(clause.text)
      else judged.push(holds(line.ratio, clause.op, clause.value))
    } else if (clause.kind === 'absolute' && line.ratio === null && clause.unit === line.unit) {
      judged.push(holds(line.figure, clause.op, clause.value))
    } else unjudged.push(clause.text)
  }
  if (judged.includes(false)) {
    return unjudged.length ? { met: false, note: `not judged: ${unjudged.join('; ')}` } : { met: false }
  }
  if (unjudged.length) {
    const what = judged.length ? 'the ratio bound holds; not judged' : 'not a plain ratio bound, not judged'
    return { met: null, note: `${what}: ${unjudged.join('; ')}` }
  }
  return { met: true }
}

/** The machine, once per process: cores and their model, memory, OS and Node. */
let machine: string | undefined
export function describeMachine() {
  if (machine) return machine
  const cores = cpus()
  const model = cores[0]?.model.replace(/\s+/g, ' ').trim()
  machine = `${cores.length} cores${model ? ` (${model})` : ''}, ${Math.round(totalmem() / 2 ** 30)} GiB, ${platform()}, Node ${process.version}`
  return machine
}

/** The running benchmark's script, relative to the root (the script node was started with). */
export const currentBenchmark = () =>
  process.argv[1] ? relative(repoRoot, resolve(process.argv[1])) : 'unknown'

/** Appends one line to the results file (`BENCH_RESULTS_FILE=off` records nothing). */
export function recordResult(result: BenchResult, file = resultsFile()) {
  if (file === 'off') return
  mkdirSync(dirname(file), { recursive: true })
  appendFileSync(file, `${JSON.stringify(result)}\n`)
}

export function resetResults(file = resultsFile()) {
  rmSync(file, { force: true })
}

export function readResults(file = resultsFile()): BenchResult[] {
  if (!existsSync(file)) return []
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as BenchResult)
}

/** A figure: two decimals, or three significant digits below 1 (0.017 µs stays 0.017). */
export const formatNumber = (n: number) =>
  Math.abs(n) < 1 && n !== 0
    ? n.toLocaleString('en-US', { maximumSignificantDigits: 3 })
    : n.toLocaleString('en-US', { maximumFractionDigits: 2 })
/** A ratio: two decimals, or two significant digits below 0.1 (a share of 0.00005 is not 0.00). */
export const formatRatio = (r: number) => (Math.abs(r) < 0.1 && r !== 0 ? r.toPrecision(2) : r.toFixed(2))
const fmt = formatNumber
const cell = (s: string) => s.replace(/\|/g, '\\|').replace(/\s+/g, ' ').trim()
const day = (iso: string) => iso.slice(0, 10)

/**
 * The Markdown table of the results: the latest line of each (benchmark, name), in the order
 * first printed. The header gives the run's date and machine; when lines come from different days
 * (a benchmark re-run alone) each row gives its own.
 */
export function renderTable(results: BenchResult[]): string {
  if (!results.length) return 'No benchmark results recorded (run `pnpm bench`, or one benchmark, first).\n'
  const latest = new Map<string, BenchResult>()
  for (const r of results) {
    const key = `${r.benchmark}\u0000${r.name.trim()}`
    latest.delete(key) // re-inserted: a re-run line moves to where it was last printed
    latest.set(key, r)
  }
  const rows = [...latest.values()]
  const days = [...new Set(rows.map((r) => day(r.timestamp)))].sort()
  const machines = [...new Set(rows.map((r) => r.machine))]
  const perRowDate = days.length > 1
  const out: string[] = []
  out.push(
    `Results of ${days.length > 1 ? `${days[0]} to ${days.at(-1)}` : days[0]} on ${machines.join('; ')}.`,
    '',
  )
  const header = ['Benchmark', 'Figure', 'Measured', 'Baseline', 'Ratio', 'Aim', 'Met']
  if (perRowDate) header.push('Run')
  out.push(`| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`)
  for (const r of rows) {
    const met = r.met === true ? 'yes' : r.met === false ? '**no**' : '–'
    const cells = [
      r.benchmark.replace(/^packages\/bench\/src\/([^/]+)\/(.+)\.ts$/, '$1/$2'),
      r.name,
      `${fmt(r.figure)} ${r.unit}`,
      r.baseline === null ? '–' : `${fmt(r.baseline)} ${r.unit}`,
      r.ratio === null ? '–' : `${formatRatio(r.ratio)} (${r.better} is better)`,
      r.aim ?? '–',
      r.note && r.met !== true ? `${met} (${r.note})` : met,
    ]
    if (perRowDate) cells.push(day(r.timestamp))
    out.push(`| ${cells.map(cell).join(' | ')} |`)
  }
  return `${out.join('\n')}\n`
}
