/**
 * The cost of metrics on the accept path (issue 14): autocannon against
 * POST /api/third-party/messages/send-text on two API processes of the same build, one with
 * metrics on (the default; its /metrics scraped every BENCH_SCRAPE_MS, 1,000) and one with
 * METRICS_ENABLED=false (no hook, no counter), same database, Redis and connections; a warm-up of
 * each, then BENCH_ROUNDS (3) alternating rounds of BENCH_DURATION_S (5) s, medians compared.
 * Aim ≥ 0.95×.
 *
 * Then, because two processes on a shared machine drift apart by more than metrics cost, the same
 * comparison in one process: an app with metrics and one without (`buildApp`, `inject`, 50 in
 * flight), BENCH_PAIRS (12) pairs of BENCH_BATCH (2,000) sends each, the order alternating; the
 * process's CPU per request of each batch, medians and the median of the paired differences.
 *
 *   pnpm --filter @dispatch/bench bench:api-metrics    (BENCH_CONNECTIONS, BENCH_DURATION_S, BENCH_ROUNDS,
 *   BENCH_SCRAPE_MS, BENCH_PAIRS, BENCH_BATCH)
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { buildApp, createDeps, createLogger, parseApiConfig } from '@dispatch/api'
import { Redis } from 'ioredis'
import { keepAliveGet } from '../harness/http.ts'
import { assertClean, autocannon, medianRun, type Run, settle } from '../harness/load.ts'
import { printComparison } from '../harness/report.ts'
import { median } from '../harness/stats.ts'
import { clearFairAdmission, createBenchWorld } from '../harness/world.ts'
import { startServer } from './child-server.ts'
import { approvedKey, pairedCpuPerSend } from './inject.ts'

const connections = Number(process.env.BENCH_CONNECTIONS ?? 100)
const duration = Number(process.env.BENCH_DURATION_S ?? 5)
const rounds = Number(process.env.BENCH_ROUNDS ?? 3)
const scrapeMs = Number(process.env.BENCH_SCRAPE_MS ?? 1000)
const pairs = Number(process.env.BENCH_PAIRS ?? 12)
const batch = Number(process.env.BENCH_BATCH ?? 2000)
const body = JSON.stringify({ phone: '+5511987654321', text: 'Your code is 123456' })

const world = await createBenchWorld('metrics_accept')
const env = { DATABASE_URL: world.databaseUrl, REDIS_URL: world.redisUrl, QUEUE_PREFIX: world.queuePrefix }
const [on, off] = await Promise.all([
  startServer('app', { ...env, METRICS_ENABLED: 'true' }),
  startServer('app', { ...env, METRICS_ENABLED: 'false' }),
])
const redis = new Redis(world.redisUrl, { maxRetriesPerRequest: null })
// No worker runs here: what each run stored waits in the fair-admission keys, removed between runs.
const drain = async () => {
  await settle()
  return clearFairAdmission(redis, world.queuePrefix)
}

/** Scrapes the metrics server's /metrics every `scrapeMs` while `work` runs. */
async function whileScraped<T>(url: string, work: Promise<T>) {
  const client = keepAliveGet()
  let running = true
  let scrapes = 0
  let bytes = 0
  const loop = (async () => {
    while (running) {
      const res = await client.get(`${url}/metrics`, {})
      if (res.status !== 200) throw new Error(`/metrics answered ${res.status}`)
      bytes = res.body.length
      scrapes++
      await sleep(scrapeMs)
    }
  })()
  try {
    return { result: await work, scrapes, bytes }
  } finally {
    running = false
    await loop
    client.close()
  }
}

/** An API in this process, metrics on or off, with an approved key. */
async function inProcessApp(metrics: boolean) {
  const config = parseApiConfig({
    ...env,
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
    MESSAGE_RATE_PER_SECOND: '1000000000',
    METRICS_ENABLED: String(metrics),
  })
  const app = await buildApp(createDeps(config, { logger: createLogger(config) }))
  await app.ready()
  return { app, key: await approvedKey(app) }
}

async function pairedInProcess() {
  const apps = { on: await inProcessApp(true), off: await inProcessApp(false) }
  try {
    const cpu = await pairedCpuPerSend(apps, {
      body,
      count: batch,
      pairs,
      between: () => clearFairAdmission(redis, world.queuePrefix),
    })
    const differences = cpu.on.map((value, i) => value - (cpu.off[i] ?? 0))
    console.log(
      `in one process, ${pairs} pairs of ${batch} sends (inject, 50 in flight): CPU per send with metrics` +
        ` ${cpu.on.map(Math.round).join(', ')} µs; without ${cpu.off.map(Math.round).join(', ')} µs;` +
        ` median of the paired differences ${median(differences).toFixed(1)} µs`,
    )
    printComparison({
      name: 'CPU per send in one process, metrics on vs off',
      figure: median(cpu.on),
      baseline: median(cpu.off),
      unit: 'µs',
      better: 'lower',
    })
  } finally {
    await apps.on.app.close()
    await apps.off.app.close()
  }
}

const targets = [
  { name: 'metrics on', server: on },
  { name: 'metrics off', server: off },
] as const

try {
  console.log(
    `metrics cost on the accept path: send-text, ${connections} connections, ${rounds} rounds of ${duration} s` +
      ` per server, each server and autocannon in a process of its own; metrics on (scraped every` +
      ` ${scrapeMs} ms) vs METRICS_ENABLED=false; log level ${process.env.LOG_LEVEL ?? 'warn'}`,
  )
  for (const { server } of targets) {
    const url = `${server.url}/api/third-party/messages/send-text`
    await autocannon({ url, headers: { 'x-api-key': server.key }, body, connections, seconds: 2 })
  }
  await drain()
  const runs = new Map<string, Run[]>(targets.map((t) => [t.name, []]))
  const cpu = new Map<string, number[]>(targets.map((t) => [t.name, []]))
  for (let round = 1; round <= rounds; round++) {
    const order = round % 2 === 1 ? targets : [...targets].reverse()
    const line: string[] = []
    for (const { name, server } of order) {
      const load = autocannon({
        url: `${server.url}/api/third-party/messages/send-text`,
        headers: { 'x-api-key': server.key },
        body,
        connections,
        seconds: duration,
      })
      const cpuBefore = await server.cpuSeconds()
      const {
        result: run,
        scrapes,
        bytes,
      } = server === on ? await whileScraped(server.url, load) : { result: await load, scrapes: 0, bytes: 0 }
      const cpuAfter = await server.cpuSeconds()
      assertClean(name, run)
      runs.get(name)?.push(run)
      const perRequest =
        cpuBefore === undefined || cpuAfter === undefined
          ? undefined
          : ((cpuAfter - cpuBefore) * 1e6) / (run.requestsPerSecond * duration)
      if (perRequest !== undefined) cpu.get(name)?.push(perRequest)
      line.push(
        `${name} ${Math.round(run.requestsPerSecond)} req/s, p99 ${run.p99} ms` +
          (perRequest === undefined ? '' : `, ${Math.round(perRequest)} µs CPU`) +
          (scrapes ? `, scraped ${scrapes}× (${Math.round(bytes / 1024)} KiB each)` : ''),
      )
    }
    const stored = await drain()
    console.log(`  round ${round}/${rounds}: ${line.join('; ')} (${stored} messages stored, then removed)`)
  }
  const [withMetrics, without] = targets.map((t) => medianRun(runs.get(t.name) ?? [])) as [Run, Run]
  printComparison({
    name: 'send-text throughput, metrics on vs off',
    figure: withMetrics.requestsPerSecond,
    baseline: without.requestsPerSecond,
    unit: 'req/s',
    better: 'higher',
    aim: '≥ 0.95',
  })
  printComparison({
    name: 'send-text p99 latency, metrics on vs off',
    figure: withMetrics.p99,
    baseline: without.p99,
    unit: 'ms',
    better: 'lower',
  })
  const cpuOn = cpu.get('metrics on') ?? []
  const cpuOff = cpu.get('metrics off') ?? []
  if (cpuOn.length && cpuOff.length) {
    printComparison({
      name: 'API CPU per request, metrics on vs off',
      figure: median(cpuOn),
      baseline: median(cpuOff),
      unit: 'µs',
      better: 'lower',
    })
  }
  await pairedInProcess()
} finally {
  await Promise.all([on.stop(), off.stop()])
  await drain().catch(() => {})
  redis.disconnect()
  await world.drop()
}
