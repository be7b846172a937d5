/**
 * A pooled key's accept against a single-sender key's, in slices a second long: one load whose API
 * key switches (harness/switched-load.ts) while the API's CPU is read to the nanosecond, the keys in
 * blocks (forward, then backward), each block's ratio paired. Where `bench:accept` sets five-second
 * runs side by side, a shared machine's drift over a second is smaller. And the run is split over
 * API processes of their own (forks), as a ratio moves from one process to the next by more than
 * within one (JIT and heap state): the figure is the median of the forks' ratios
 * (docs/benchmarks-failover.md, "A pooled key's accept"). Each comparison also prints the two
 * sides' CPU by thread of the API (`main`, `V8Worker`: V8's collector and compiler), to say where
 * a difference is.
 *
 *   pnpm --filter @dispatch/bench bench:accept-paired
 *     BENCH_FORKS (5: odd, so the median is one of them), BENCH_BLOCKS a fork (30), BENCH_SLICE_MS (1000), BENCH_CONNECTIONS (100)
 *
 * BENCH_SIDES: the keys, of `single` (a single-sender key), `pooled` (a key of a three-number
 * pool), `number` (a key of that pool's first number alone) and `one` (a key of a pool of that
 * number alone), as `bench:accept`'s BENCH_ONLY=pool; all four unless set.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { Redis } from 'ioredis'
import { settle } from '../harness/load.ts'
import { printComparison } from '../harness/report.ts'
import { median, medianInterval } from '../harness/stats.ts'
import { compareSlices, pairedSlices, type Slice, startSwitchedLoad } from '../harness/switched-load.ts'
import { clearFairAdmission, createBenchWorld } from '../harness/world.ts'
import { sideNames, startPooledApp } from './child-server.ts'

const forks = Number(process.env.BENCH_FORKS ?? 5)
const blocks = Number(process.env.BENCH_BLOCKS ?? 30)
const sliceMs = Number(process.env.BENCH_SLICE_MS ?? 1000)
const connections = Number(process.env.BENCH_CONNECTIONS ?? 100)
const body = JSON.stringify({ phone: '+5511987654321', text: 'Your code is 123456' })
const sideList = 'single,pooled,number,one'
const names: string[] = sideNames(sideList)
const has = (...wanted: string[]) => wanted.every((name) => names.includes(name))

/**
 * One fork: an API process of its own, with a database and key prefix of its own (nothing a fork
 * made weighs on the next: its keys, pools, limits), warmed up, then its blocks.
 */
async function fork(): Promise<Slice[][]> {
  const world = await createBenchWorld('accept-paired')
  const redis = new Redis(world.redisUrl, { maxRetriesPerRequest: null })
  // What a segment stored is removed before the next (no worker runs here to admit it).
  const empty = async () => {
    await settle()
    await clearFairAdmission(redis, world.queuePrefix)
  }
  const { api, sides } = await startPooledApp(world, sideList)
  const load = await startSwitchedLoad({
    url: `${api.url}/api/third-party/messages/send-text`,
    body,
    connections,
    key: api.key,
  })
  try {
    // Warm-up: each key for two slices' length, unmeasured.
    for (const side of sides) {
      await load.key(side.key)
      await sleep(2 * sliceMs)
    }
    await load.pause()
    await empty()
    await load.resume()
    return await pairedSlices({ load, serverPid: api.pid, sides, blocks, sliceMs, between: empty })
  } finally {
    await load.stop()
    await api.stop()
    redis.disconnect()
    await world.drop()
  }
}

const comparisons = [
  ['pooled', 'single', 'a pooled key vs a single-sender key'],
  ['pooled', 'number', "a pooled key vs a key of one of the pool's numbers alone"],
  ['one', 'number', 'a key of a pool of one vs a key of its number alone'],
  ['number', 'single', "a key of one of the pool's numbers alone vs a single-sender key"],
].filter(([figure, baseline]) => has(figure as string, baseline as string)) as Array<[string, string, string]>

console.log(
  `accept, paired slices: ${forks} API processes, each ${blocks} blocks of ${names.length} slices of` +
    ` ${sliceMs} ms (${names.join(', ')}), ${connections} connections; the API's CPU from` +
    ' /proc/<pid>/task/*/schedstat',
)
const runs: Slice[][][] = []
for (let f = 1; f <= forks; f++) {
  const slices = await fork()
  runs.push(slices)
  const line = comparisons.map(([figure, baseline]) => {
    const c = compareSlices(slices, figure, baseline)
    return `${figure}/${baseline} ${(c.figureUs / c.baselineUs).toFixed(3)} (median ${c.median.toFixed(3)})`
  })
  console.log(`  fork ${f}/${forks}: ${line.join('; ')}`)
}
for (const [figure, baseline, what] of comparisons) {
  // Each fork's ratio of totals (its every slice's CPU over its requests, a side against the other).
  const perFork = runs.map((slices) => {
    const c = compareSlices(slices, figure, baseline)
    return c.figureUs / c.baselineUs
  })
  const all = compareSlices(runs.flat(), figure, baseline)
  const ratio = median(perFork)
  printComparison({
    name: `send-text from ${what} (CPU per request, paired slices)`,
    // The forks' median, in µs of the baseline's: the ratio printed is that median.
    figure: all.baselineUs * ratio,
    baseline: all.baselineUs,
    unit: 'µs',
    better: 'lower',
    // No aim: the sticky record's read is the feature's price (docs/benchmarks-failover.md, "The
    // accept hop's aim, withdrawn"); the figure is printed to show a change.
  })
  const interval = medianInterval(all.ratios)
  console.log(
    `  forks ${perFork.map((r) => r.toFixed(3)).join(', ')} (median ${ratio.toFixed(3)});` +
      ` every block of every fork: median ${all.median.toFixed(3)}` +
      `${interval ? ` (90 % interval ${interval[0].toFixed(3)}–${interval[1].toFixed(3)}, within the forks only)` : ''}`,
  )
  // Which of the API's threads the difference is on (V8Worker: V8's collector and compiler).
  const byThread = all.threads
    .filter((t) => t.figureUs >= 0.05 || t.baselineUs >= 0.05)
    .map((t) => `${t.name} ${t.figureUs.toFixed(2)} vs ${t.baselineUs.toFixed(2)} µs`)
  console.log(`  by thread, every fork: ${byThread.join('; ')}`)
}
