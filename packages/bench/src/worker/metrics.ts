/**
 * The cost of metrics on delivery (issue 14): the real worker (`startWorker`, `messages` role,
 * sandbox platform, every outcome recorded in Postgres) draining BENCH_JOBS (20,000) messages stored
 * as the API stores them, with metrics on (METRICS_PORT set, scraped every BENCH_SCRAPE_MS, 1,000)
 * versus off (no METRICS_PORT: nothing counted). 20,000 makes a run of a few seconds: since
 * bundles, 5,000 took about one, and its first admission and the end's poll weighed as much as the
 * metrics. Each run is a fresh worker process (`metrics-worker.ts`); messages per second from the
 * first stored to the last recorded `sent`, and the worker's CPU per message. A warm-up run of
 * each, then BENCH_ROUNDS (3) alternating rounds, medians compared. Aim ≥ 0.95×.
 *
 *   pnpm --filter @dispatch/bench bench:worker-metrics    (BENCH_JOBS, BENCH_ROUNDS, BENCH_SCRAPE_MS)
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { createDb } from '@dispatch/db'
import { Redis } from 'ioredis'
import { MessageStore } from '../../../../apps/api/src/sending/message-store.ts'
import { forkChild } from '../harness/child.ts'
import { textJob } from '../harness/jobs.ts'
import { insertBenchKey } from '../harness/keys.ts'
import { printComparison } from '../harness/report.ts'
import { median } from '../harness/stats.ts'
import { createBenchWorld } from '../harness/world.ts'

const jobs = Number(process.env.BENCH_JOBS ?? 20_000)
const rounds = Number(process.env.BENCH_ROUNDS ?? 3)
const scrapeMs = Number(process.env.BENCH_SCRAPE_MS ?? 1000)

const world = await createBenchWorld('metrics_delivery')
const { db, sql, close: closeDb } = createDb(world.databaseUrl)
const redis = new Redis(world.redisUrl, { maxRetriesPerRequest: null })
const store = new MessageStore(redis, { QUEUE_PREFIX: world.queuePrefix, REDIS_CLUSTER: false })

/** A worker process with the benchmark's settings, its metrics server on or off. */
function startChild(metrics: boolean) {
  return forkChild<{ metricsUrl: string | null }>(new URL('./metrics-worker.ts', import.meta.url), {
    what: 'worker',
    env: {
      DATABASE_URL: world.databaseUrl,
      REDIS_URL: world.redisUrl,
      QUEUE_PREFIX: world.queuePrefix,
      WORKER_QUEUES: 'messages',
      PLATFORM: 'sandbox',
      PLATFORM_RATE_PER_SECOND: '1000000',
      LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
      METRICS_PORT: metrics ? '0' : undefined,
    },
  })
}

const newKey = async () => (await insertBenchKey(db, 'Bench metrics')).id

/** A run's messages recorded `sent`: a key of its own per run keeps this an index-only count. */
const sentCount = async (key: string) => {
  const [row] = await sql<{ n: number }[]>`
    select count(*)::int as n from messages where api_key_id = ${key} and status = 'sent'`
  return row?.n ?? 0
}

interface Drained {
  perSecond: number
  /** The worker process's CPU per message, µs. */
  cpuPerMessage: number
  scrapes: number
  scrapeBytes: number
}

async function run(metrics: boolean, count = jobs): Promise<Drained> {
  const child = await startChild(metrics)
  try {
    await sleep(500)
    let scrapes = 0
    let scrapeBytes = 0
    let scraping = true
    // As Prometheus would, only more often than its usual 15 s: the cost of being read is metrics' cost.
    const scraper = (async () => {
      while (scraping && child.ready.metricsUrl) {
        const res = await fetch(`${child.ready.metricsUrl}/metrics`)
        scrapeBytes = (await res.text()).length
        scrapes++
        await sleep(scrapeMs)
      }
    })()
    const key = await newKey()
    const batch = Array.from({ length: count }, () => textJob(key))
    const cpuBefore = (await child.cpuSeconds()) ?? Number.NaN
    const began = performance.now()
    for (let i = 0; i < batch.length; i += 1000)
      await Promise.all(batch.slice(i, i + 1000).map((j) => store.add(j)))
    while ((await sentCount(key)) < count) {
      if (performance.now() - began > 300_000) throw new Error(`${count} messages not sent in 5 minutes`)
      await sleep(50)
    }
    const seconds = (performance.now() - began) / 1000
    const cpu = ((await child.cpuSeconds()) ?? Number.NaN) - cpuBefore
    scraping = false
    await scraper
    return { perSecond: count / seconds, cpuPerMessage: (cpu * 1e6) / count, scrapes, scrapeBytes }
  } finally {
    await child.stop()
  }
}

const describe = (r: Drained) =>
  `${Math.round(r.perSecond)} msg/s, ${Math.round(r.cpuPerMessage)} µs worker CPU per message` +
  (r.scrapes ? `, scraped ${r.scrapes}× (${Math.round(r.scrapeBytes / 1024)} KiB each)` : '')

try {
  console.log(
    `metrics cost on delivery: ${jobs} messages stored as the API stores them, drained by a fresh worker` +
      ` process (messages role, sandbox, records in Postgres), metrics on (METRICS_PORT, scraped every` +
      ` ${scrapeMs} ms) vs off; ${rounds} alternating rounds after a warm-up of each`,
  )
  await run(true, Math.min(jobs, 2000))
  await run(false, Math.min(jobs, 2000))
  const on: Drained[] = []
  const off: Drained[] = []
  for (let round = 1; round <= rounds; round++) {
    const order = round % 2 === 1 ? [true, false] : [false, true]
    const line: string[] = []
    for (const metrics of order) {
      const result = await run(metrics)
      ;(metrics ? on : off).push(result)
      line.push(`metrics ${metrics ? 'on' : 'off'} ${describe(result)}`)
    }
    console.log(`  round ${round}/${rounds}: ${line.join('; ')}`)
  }
  printComparison({
    name: 'delivery throughput, metrics on vs off',
    figure: median(on.map((r) => r.perSecond)),
    baseline: median(off.map((r) => r.perSecond)),
    unit: 'msg/s',
    better: 'higher',
    aim: '≥ 0.95',
  })
  printComparison({
    name: 'worker CPU per message, metrics on vs off',
    figure: median(on.map((r) => r.cpuPerMessage)),
    baseline: median(off.map((r) => r.cpuPerMessage)),
    unit: 'µs',
    better: 'lower',
  })
} finally {
  await store.close()
  redis.disconnect()
  await closeDb()
  await world.drop()
}
