/**
 * Accept-path benchmark: autocannon against POST /api/third-party/messages/send-text (approved key,
 * valid body) versus two bare Fastify routes: one plain BullMQ `add` per request, and one Redis
 * `INCR` per request; and the same send from a key bound to a three-number sender pool, beside the
 * single-sender one (the sticky lookup and the choice of its number). The API and the bare server each run in a process of their own, autocannon
 * in a third; same connections and duration, alternating rounds, medians compared.
 *
 *   pnpm --filter @dispatch/bench bench:accept    (BENCH_CONNECTIONS, BENCH_DURATION_S, BENCH_ROUNDS)
 *   BENCH_ONLY=pool: only the sends: the pooled one against the single-sender key's and against a
 *   key of one of the pool's numbers alone (the two differ by the pool only), and a key of a pool of
 *   that number alone against it (the sticky lookup and the choice only), rounds rotating.
 */
import { QueueNames } from '@dispatch/contracts'
import { MESSAGE_JOB_OPTIONS } from '@dispatch/runtime/message-handoff'
import { Queue } from 'bullmq'
import { Redis } from 'ioredis'
import { assertClean, autocannon, medianRun, type Run, settle } from '../harness/load.ts'
import { printComparison } from '../harness/report.ts'
import { median, medianInterval } from '../harness/stats.ts'
import { clearFairAdmission, createBenchWorld } from '../harness/world.ts'
import { startServer } from './child-server.ts'

const connections = Number(process.env.BENCH_CONNECTIONS ?? 100)
const duration = Number(process.env.BENCH_DURATION_S ?? 5)
const rounds = Number(process.env.BENCH_ROUNDS ?? 6)
const body = JSON.stringify({ phone: '+5511987654321', text: 'Your code is 123456' })

const world = await createBenchWorld('accept')
// One key stores over 100,000 messages in a round (drained between rounds): a bound far above that
// keeps every send counted against it (the script's cost is measured) and none refused.
const env = {
  DATABASE_URL: world.databaseUrl,
  REDIS_URL: world.redisUrl,
  QUEUE_PREFIX: world.queuePrefix,
  MESSAGE_OUTSTANDING_MAX: '100000000',
  BENCH_POOLED_KEY: 'true',
}
const [api, bare] = await Promise.all([startServer('app', env), startServer('baseline', env)])
// What each round stored is removed before the next, so no round runs against a fuller Redis: the
// API's messages wait in their sender's fair-admission keys (no worker runs here to admit them), the
// bare server's jobs in a BullMQ queue of its own.
const redis = new Redis(world.redisUrl, { maxRetriesPerRequest: null })
const baselineQueue = new Queue(`${QueueNames.messages}-baseline`, {
  connection: redis,
  prefix: world.queuePrefix,
})
const drain = async () => {
  await settle()
  const jobs = await baselineQueue.count()
  await baselineQueue.obliterate({ force: true })
  return jobs + (await clearFairAdmission(redis, world.queuePrefix))
}

const targets = [
  {
    name: 'send-text',
    url: `${api.url}/api/third-party/messages/send-text`,
    headers: { 'x-api-key': api.key },
  },
  // The same send from a key bound to a three-number sender pool: the sticky lookup and the
  // choice of its number on top (docs/benchmarks-failover.md: printed without an aim).
  {
    name: 'send-text (pool)',
    url: `${api.url}/api/third-party/messages/send-text`,
    headers: { 'x-api-key': api.pooled },
  },
  // BENCH_ONLY=pool: a key of one of the pool's numbers alone (no pool), so the pooled send is set
  // against the same number's checks too.
  {
    name: 'send-text (pool number alone)',
    url: `${api.url}/api/third-party/messages/send-text`,
    headers: { 'x-api-key': api.poolNumber },
  },
  // BENCH_ONLY=pool: a key bound to a pool of that number alone: against the number alone, the
  // sticky lookup and the choice only, with no other number's opt-outs to read.
  {
    name: 'send-text (pool of one)',
    url: `${api.url}/api/third-party/messages/send-text`,
    headers: { 'x-api-key': api.pooledOne },
  },
  { name: 'BullMQ add', url: `${bare.url}/add`, headers: {} },
  { name: 'INCR', url: `${bare.url}/incr`, headers: {} },
] as const
type Target = (typeof targets)[number]['name']
/** BENCH_ONLY=pool: the four sends only (the pooled ones against the single-sender keys), more rounds. */
const onlyPool = process.env.BENCH_ONLY === 'pool'
const measured = targets.filter((t) =>
  onlyPool
    ? t.name.startsWith('send-text')
    : t.name !== 'send-text (pool number alone)' && t.name !== 'send-text (pool of one)',
)

try {
  console.log(
    `accept path: ${connections} connections, ${rounds} rounds of ${duration} s per server, each server` +
      ` and autocannon in a process of its own; log level ${process.env.LOG_LEVEL ?? 'warn'};` +
      ` job options ${JSON.stringify(MESSAGE_JOB_OPTIONS)}`,
  )
  // A short warm-up of each, so none pays for JIT compilation in its measured run.
  for (const target of measured) await autocannon({ ...target, body, connections, seconds: 2 })
  await drain()
  const runs = new Map<Target, Run[]>(targets.map((t) => [t.name, []]))
  const cpus = new Map<Target, number[]>(targets.map((t) => [t.name, []]))
  const cpuOf = (name: Target) => {
    const sorted = [...(cpus.get(name) ?? [])].sort((a, b) => a - b)
    return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN
  }
  for (let round = 1; round <= rounds; round++) {
    // Alternating rounds, each starting one further along: load that drifts moves all alike.
    const order = measured.map(
      (_, i) => measured[(i + round - 1) % measured.length] as (typeof targets)[number],
    )
    const line: string[] = []
    for (const target of order) {
      const server = target.name.startsWith('send-text') ? api : bare
      const cpuBefore = await server.cpuSeconds()
      const run = await autocannon({ ...target, body, connections, seconds: duration })
      const cpuAfter = await server.cpuSeconds()
      assertClean(target.name, run)
      runs.get(target.name)?.push(run)
      // The server's CPU per request: what a request costs where the load is CPU-bound.
      const perRequest =
        cpuBefore === undefined || cpuAfter === undefined
          ? undefined
          : ((cpuAfter - cpuBefore) * 1e6) / (run.requestsPerSecond * duration)
      if (perRequest !== undefined) cpus.get(target.name)?.push(perRequest)
      const cpu = perRequest === undefined ? '' : `, ${Math.round(perRequest)} µs CPU`
      line.push(`${target.name} ${Math.round(run.requestsPerSecond)} req/s, p99 ${run.p99} ms${cpu}`)
    }
    const queued = await drain()
    console.log(`  round ${round}/${rounds}: ${line.join('; ')} (${queued} messages stored, then removed)`)
  }
  const medianOf = (name: Target) => medianRun(runs.get(name) ?? [])
  const send = medianOf('send-text')
  const pooled = medianOf('send-text (pool)')
  printComparison({
    name: 'send-text from a pooled key vs from a single-sender key (throughput)',
    figure: pooled.requestsPerSecond,
    baseline: send.requestsPerSecond,
    unit: 'req/s',
    better: 'higher',
    // No aim: the CPU comparisons below say why (the sticky record's read).
  })
  // Each round's pooled send against a single-sender one of the same round: load that drifts
  // between rounds falls on both of a pair alike.
  const comparePooledCpu = (baseline: Target, what: string, pool: Target = 'send-text (pool)') => {
    const which = pool === 'send-text (pool)' ? 'a pooled key' : 'a key of a pool of one'
    printComparison({
      name: `send-text from ${which} vs ${what} (CPU per request)`,
      figure: cpuOf(pool),
      baseline: cpuOf(baseline),
      unit: 'µs',
      better: 'lower',
      // No aim: a pooled send pays its sticky record's read, the feature's price
      // (docs/benchmarks-failover.md, "The accept hop's aim, withdrawn"); printed to show a change.
    })
    const single = cpus.get(baseline) ?? []
    const paired = (cpus.get(pool) ?? []).map((cpu, i) => cpu / (single[i] ?? cpu))
    // A round's ratio moves by ±10 % on shared cores: the interval says what the median may be off by.
    const interval = medianInterval(paired)
    console.log(
      `  CPU per request, ${which} / ${what}, round by round: ${paired.map((r) => r.toFixed(3)).join(', ')}` +
        ` (median ${median(paired).toFixed(3)}` +
        `${interval ? `, 90 % interval ${interval[0].toFixed(3)}–${interval[1].toFixed(3)}` : ''})`,
    )
  }
  comparePooledCpu('send-text', 'from a single-sender key')
  if (onlyPool) {
    comparePooledCpu('send-text (pool number alone)', "from a key of one of the pool's numbers alone")
    // The sticky lookup and the choice alone: the pool of one against its number alone.
    comparePooledCpu(
      'send-text (pool number alone)',
      'from a key of its number alone',
      'send-text (pool of one)',
    )
  } else {
    const add = medianOf('BullMQ add')
    const incr = medianOf('INCR')
    printComparison({
      name: 'send-text throughput vs one BullMQ add per request',
      figure: send.requestsPerSecond,
      baseline: add.requestsPerSecond,
      unit: 'req/s',
      better: 'higher',
      aim: '≥ 1.0',
    })
    printComparison({
      name: 'send-text p99 latency vs one BullMQ add per request',
      figure: send.p99,
      baseline: add.p99,
      unit: 'ms',
      better: 'lower',
      aim: '≤ 1.2',
    })
    printComparison({
      name: 'send-text throughput vs one INCR per request',
      figure: send.requestsPerSecond,
      baseline: incr.requestsPerSecond,
      unit: 'req/s',
      better: 'higher',
      aim: '≥ 0.6',
    })
    printComparison({
      name: 'send-text p99 latency vs one INCR per request',
      figure: send.p99,
      baseline: incr.p99,
      unit: 'ms',
      better: 'lower',
      aim: `p99 ≤ 15 ms at ${connections} connections`,
    })
  }
} finally {
  await Promise.all([api.stop(), bare.stop()])
  await drain().catch(() => {})
  await baselineQueue.close()
  redis.disconnect()
  await world.drop()
}
