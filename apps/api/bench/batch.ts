/**
 * Batch benchmark: messages per second accepted through POST /api/third-party/messages/batch
 * (BENCH_BATCH_SIZE items per request, default 100) versus the single send-text path, on the same
 * API process (its own, with autocannon in another), alternating rounds, medians compared.
 *
 *   pnpm --filter @dispatch/api bench:batch
 *   (BENCH_CONNECTIONS for send-text, BENCH_BATCH_CONNECTIONS for batches, BENCH_DURATION_S, BENCH_ROUNDS)
 */
import { QueueNames } from '@dispatch/contracts'
import { createBenchWorld, median, printComparison } from '@dispatch/testing/bench'
import { Queue } from 'bullmq'
import { Redis } from 'ioredis'
import { assertClean, autocannon, settle, startServer } from './load.ts'

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
const queue = new Queue(QueueNames.messages, { connection: redis, prefix: world.queuePrefix })
/** Removes the round's jobs, so no round runs against a fuller Redis; answers how many there were. */
const drain = async () => {
  await settle()
  const jobs = await queue.count()
  await queue.obliterate({ force: true })
  return jobs
}

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

/** One timed run; messages per second, with how many jobs it left in the queue as a check. */
async function measure(load: typeof single, seconds: number) {
  const run = await autocannon({ ...load, seconds })
  assertClean(load.url, run)
  const queued = await drain()
  return { ...run, messagesPerSecond: run.requestsPerSecond * load.perRequest, queued }
}

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
    const first = round % 2 === 1
    const s = first ? await measure(single, duration) : undefined
    const b = await measure(batch, duration)
    const s2 = s ?? (await measure(single, duration))
    singles.push(s2.messagesPerSecond)
    batches.push(b.messagesPerSecond)
    console.log(
      `  round ${round}/${rounds}: batch ${Math.round(b.requestsPerSecond)} req/s = ${Math.round(b.messagesPerSecond)} msg/s` +
        ` (p99 ${b.p99} ms, ${b.queued} jobs queued); send-text ${Math.round(s2.messagesPerSecond)} msg/s` +
        ` (p99 ${s2.p99} ms, ${s2.queued} jobs queued)`,
    )
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
  await drain().catch(() => {})
  await queue.close()
  redis.disconnect()
  await world.drop()
}
