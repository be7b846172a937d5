/**
 * The cost of tracing on the accept path (issue 14): in one process, an API with tracing on
 * (`@fastify/otel`, every request a span with its hooks' and handler's, the trace context put in
 * each message; spans batched over OTLP/HTTP to a collector on localhost that reads and drops them)
 * and one without, same database and Redis; BENCH_PAIRS (12) pairs of BENCH_BATCH (2,000) sends
 * each (inject, 50 in flight), the order alternating; the process's CPU per send of each batch,
 * medians compared, and the spans the collector received.
 *
 *   pnpm --filter @dispatch/bench bench:tracing    (BENCH_PAIRS, BENCH_BATCH)
 */
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { buildApp, createDeps, createLogger, parseApiConfig } from '@dispatch/api'
import { startTracing } from '@dispatch/runtime/tracing'
import { Redis } from 'ioredis'
import { printComparison } from '../harness/report.ts'
import { median } from '../harness/stats.ts'
import { clearFairAdmission, createBenchWorld } from '../harness/world.ts'
import { approvedKey, pairedCpuPerSend } from './inject.ts'

const pairs = Number(process.env.BENCH_PAIRS ?? 12)
const batch = Number(process.env.BENCH_BATCH ?? 2000)
const body = JSON.stringify({ phone: '+5511987654321', text: 'Your code is 123456' })

/** An OTLP/HTTP collector that takes every export and keeps only its size. */
let exports = 0
let exportedBytes = 0
const collector = createServer((req, res) => {
  req.on('data', (chunk: Buffer) => {
    exportedBytes += chunk.length
  })
  req.on('end', () => {
    exports++
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
  })
})
await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve))
const endpoint = `http://127.0.0.1:${(collector.address() as AddressInfo).port}`

const world = await createBenchWorld('tracing_accept')
const env = { DATABASE_URL: world.databaseUrl, REDIS_URL: world.redisUrl, QUEUE_PREFIX: world.queuePrefix }
const redis = new Redis(world.redisUrl, { maxRetriesPerRequest: null })
const tracing = startTracing({ serviceName: 'dispatch-bench', endpoint })

async function inProcessApp(traced: boolean) {
  const config = parseApiConfig({
    ...env,
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
    MESSAGE_RATE_PER_SECOND: '1000000000',
  })
  const deps = createDeps(config, { logger: createLogger(config) })
  const app = await buildApp({ ...deps, tracing: traced ? tracing : undefined })
  await app.ready()
  return { app, key: await approvedKey(app) }
}

const apps = { on: await inProcessApp(true), off: await inProcessApp(false) }
try {
  console.log(
    `tracing: in one process, ${pairs} pairs of ${batch} sends (inject, 50 in flight), an app with` +
      ' tracing (batched OTLP/HTTP export to a local collector) and one without; CPU per send',
  )
  const cpu = await pairedCpuPerSend(apps, {
    body,
    count: batch,
    pairs,
    between: () => clearFairAdmission(redis, world.queuePrefix),
  })
  await tracing?.provider.forceFlush()
  console.log(
    `  with tracing ${cpu.on.map(Math.round).join(', ')} µs; without ${cpu.off.map(Math.round).join(', ')} µs;` +
      ` the collector took ${exports} exports, ${(exportedBytes / 1e6).toFixed(1)} MB`,
  )
  printComparison({
    name: 'CPU per send in one process, tracing on vs off',
    figure: median(cpu.on),
    baseline: median(cpu.off),
    unit: 'µs',
    better: 'lower',
    aim: 'reported (the issue sets none)',
  })
} finally {
  await apps.on.app.close()
  await apps.off.app.close()
  await tracing?.shutdown()
  await clearFairAdmission(redis, world.queuePrefix)
  redis.disconnect()
  collector.close()
  await world.drop()
}
