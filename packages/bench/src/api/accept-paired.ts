/**
 * A pooled key's accept against a single-sender key's, in slices a second long: one load whose API
 * key switches (harness/switched-load.ts) while the API's CPU is read to the nanosecond, the four
 * keys in blocks (forward, then backward), each block's ratio paired. Where `bench:accept` sets
 * five-second runs side by side, a shared machine's drift over a second is smaller: the interval on
 * the median narrows with the blocks (docs/benchmarks-failover.md, "A pooled key's accept").
 *
 *   pnpm --filter @dispatch/bench bench:accept-paired   (BENCH_BLOCKS, BENCH_SLICE_MS, BENCH_CONNECTIONS)
 *
 * The keys: a single-sender key, a key of a three-number pool, a key of that pool's first number
 * alone, and a key of a pool of that number alone (as `bench:accept`'s BENCH_ONLY=pool).
 */
import { Redis } from 'ioredis'
import { settle } from '../harness/load.ts'
import { printComparison } from '../harness/report.ts'
import { compareSlices, pairedSlices, startSwitchedLoad } from '../harness/switched-load.ts'
import { clearFairAdmission, createBenchWorld } from '../harness/world.ts'
import { startServer } from './child-server.ts'

const blocks = Number(process.env.BENCH_BLOCKS ?? 120)
const sliceMs = Number(process.env.BENCH_SLICE_MS ?? 1000)
const connections = Number(process.env.BENCH_CONNECTIONS ?? 100)
const body = JSON.stringify({ phone: '+5511987654321', text: 'Your code is 123456' })

const world = await createBenchWorld('accept-paired')
const api = await startServer('app', {
  DATABASE_URL: world.databaseUrl,
  REDIS_URL: world.redisUrl,
  QUEUE_PREFIX: world.queuePrefix,
  MESSAGE_OUTSTANDING_MAX: '100000000',
  BENCH_POOLED_KEY: 'true',
})
const redis = new Redis(world.redisUrl, { maxRetriesPerRequest: null })
// What a segment stored is removed before the next (no worker runs here to admit it).
const empty = async () => {
  await settle()
  await clearFairAdmission(redis, world.queuePrefix)
}
const sides = [
  { name: 'single', key: api.key },
  { name: 'pooled', key: api.pooled },
  { name: 'number', key: api.poolNumber },
  { name: 'one', key: api.pooledOne },
]
const load = await startSwitchedLoad({
  url: `${api.url}/api/third-party/messages/send-text`,
  body,
  connections,
  key: api.key,
})
try {
  console.log(
    `accept, paired slices: ${blocks} blocks of ${sides.length} slices of ${sliceMs} ms (${sides.map((s) => s.name).join(', ')}),` +
      ` ${connections} connections; the API's CPU from /proc/<pid>/task/*/schedstat`,
  )
  // Warm-up: each key for two slices' length, unmeasured.
  for (const side of sides) {
    await load.key(side.key)
    await new Promise((resolve) => setTimeout(resolve, 2 * sliceMs))
  }
  await load.pause()
  await empty()
  await load.resume()
  const slices = await pairedSlices({
    load,
    serverPid: api.pid,
    sides,
    blocks,
    sliceMs,
    between: empty,
    progress: (done, all) => {
      if (done % 10 === 0) console.log(`  ${done}/${all} blocks`)
    },
  })
  const compare = (figure: string, baseline: string, what: string) => {
    const c = compareSlices(slices, figure, baseline)
    printComparison({
      name: `send-text from ${what} (CPU per request, paired slices)`,
      // The paired median, in µs of the baseline's: the ratio printed is the median's.
      figure: c.baselineUs * c.median,
      baseline: c.baselineUs,
      unit: 'µs',
      better: 'lower',
      aim: '≤ 1.03',
    })
    console.log(
      `  paired median ${c.median.toFixed(3)}` +
        `${c.interval ? ` (90 % interval ${c.interval[0].toFixed(3)}–${c.interval[1].toFixed(3)})` : ''}` +
        `; totals ${c.figureUs.toFixed(1)} / ${c.baselineUs.toFixed(1)} µs = ${(c.figureUs / c.baselineUs).toFixed(3)}`,
    )
  }
  compare('pooled', 'single', 'a pooled key vs a single-sender key')
  compare('pooled', 'number', "a pooled key vs a key of one of the pool's numbers alone")
  compare('one', 'number', 'a key of a pool of one vs a key of its number alone')
} finally {
  await load.stop()
  await api.stop()
  await empty().catch(() => {})
  redis.disconnect()
  await world.drop()
}
