/**
 * Batch benchmark: messages per second accepted through POST /api/third-party/messages/batch
 * (BENCH_BATCH_SIZE items per request, default 100) versus the single send-text path, on the same
 * API process (its own, with autocannon in another), alternating rounds, medians compared.
 *
 *   pnpm --filter @dispatch/bench bench:batch
 *   (BENCH_CONNECTIONS for send-text, BENCH_BATCH_CONNECTIONS for batches, BENCH_DURATION_S, BENCH_ROUNDS)
 */

import { Redis } from 'ioredis'
import { assertClean, autocannon, settle } from '../harness/load.ts'
import { printComparison } from '../harness/report.ts'
import { median } from '../harness/stats.ts'
import { clearFairAdmission, createBenchWorld } from '../harness/world.ts'
import { startServer } from './child-server.ts'

const connections = Number(process.env.BENCH_CONNECTIONS ?? 100)
const batchConnections = Number(process.env.BENCH_BATCH_CONNECTIONS ?? 10)
const batchSize = Number(process.env.BENCH_BATCH_SIZE ?? 100)
const duration = Number(process.env.BENCH_DURATION_S ?? 5)
const rounds = Number(process.env.BENCH_ROUNDS ?? 3)
const message = { phone: '+5511987654321', text: 'Your code is 123456' }

const world = await createBenchWorld('batch')
const api = await startServer('app', {
  DATABASE_URL: world.databaseUrl,
  REDIS_URL: world.redisUrl,
  QUEUE_PREFIX: world.queuePrefix,
})
const redis = new Redis(world.redisUrl, { maxRetriesPerRequest: null })
/**
 * Removes the run's messages, so no run meets a fuller Redis; answers how many there were. The API
 * stores them in their sender's fair-admission keys (no worker runs here to admit them).
 */
const drain = () => clearFairAdmission(redis, world.queuePrefix)

const headers = { 'x-api-key': api.key }
const single = {
  url: `${api.url}/api/third-party/messages/send-text`,
  headers,
  body: JSON.stringify(message),
  connections,
  perRequest: 1,
}
const batch = {
  url: `${api.url}/api/third-party/messages/batch`,
  headers,
  body: JSON.stringify({ messages: Array.from({ length: batchSize }, () => ({ type: 'text', ...message })) }),
  connections: batchConnections,
  perRequest: batchSize,
}

/**
 * One timed run: messages per second, the API process's CPU per message (a batch spreads the
 * per-request work over its items), and how many messages it stored as a check.
 */
async function measure(load: typeof single, seconds: number) {
  const cpuBefore = await api.cpuSeconds()
  const run = await autocannon({ ...load, seconds })
  assertClean(load.url, run)
  await settle()
  const cpuAfter = await api.cpuSeconds()
  const queued = await drain()
  const cpuPerMessage =
    cpuBefore === undefined || cpuAfter === undefined
      ? 'n/a'
      : `${Math.round(((cpuAfter - cpuBefore) * 1e6) / queued)} µs`
  return { ...run, messagesPerSecond: run.requestsPerSecond * load.perRequest, queued, cpuPerMessage }
}
type Measured = Awaited<ReturnType<typeof measure>>
const describe = (m: Measured) =>
  `${Math.round(m.messagesPerSecond)} msg/s (p99 ${m.p99} ms, API CPU ${m.cpuPerMessage} per message, ${m.queued} messages stored)`

try {
  console.log(
    `batch accept: ${batchSize} text messages per batch on ${batchConnections} connections vs send-text on` +
      ` ${connections}; ${rounds} alternating rounds of ${duration} s; same API process`,
  )
  await measure(single, 2)
  await measure(batch, 2)
  const singles: number[] = []
  const batches: number[] = []
  for (let round = 1; round <= rounds; round++) {
    // Alternating which goes first: load that drifts during the run moves both alike.
    const order = round % 2 === 1 ? [single, batch] : [batch, single]
    const measured = new Map<typeof single, Measured>()
    for (const load of order) measured.set(load, await measure(load, duration))
    const s = measured.get(single) as Measured
    const b = measured.get(batch) as Measured
    singles.push(s.messagesPerSecond)
    batches.push(b.messagesPerSecond)
    console.log(`  round ${round}/${rounds}: batch ${describe(b)}; send-text ${describe(s)}`)
  }
  printComparison({
    name: `batch accept (${batchSize} per request) vs send-text`,
    figure: median(batches),
    baseline: median(singles),
    unit: 'msg/s',
    better: 'higher',
    aim: '≥ 5',
  })
} finally {
  await api.stop()
  await settle()
  await drain().catch(() => {})
  redis.disconnect()
  await world.drop()
}
