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
 *   pnpm --filter @dispatch/worker bench:metrics    (BENCH_JOBS, BENCH_ROUNDS, BENCH_SCRAPE_MS)
 */
import { type ChildProcess, fork } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { setTimeout as sleep } from 'node:timers/promises'
import type { MessageJob } from '@dispatch/contracts'
import { createDb, generateApiKey, insertApiKey } from '@dispatch/db'
import { createBenchWorld, median, printComparison } from '@dispatch/testing/bench'
import { Redis } from 'ioredis'
import { MessageStore } from '../../api/src/sending/message-store.ts'

const jobs = Number(process.env.BENCH_JOBS ?? 20_000)
const rounds = Number(process.env.BENCH_ROUNDS ?? 3)
const scrapeMs = Number(process.env.BENCH_SCRAPE_MS ?? 1000)

const world = await createBenchWorld('metrics_delivery')
const { db, sql, close: closeDb } = createDb(world.databaseUrl)
const redis = new Redis(world.redisUrl, { maxRetriesPerRequest: null })
const store = new MessageStore(redis, { QUEUE_PREFIX: world.queuePrefix, REDIS_CLUSTER: false })

interface Child {
  metricsUrl: string | null
  cpuSeconds(): Promise<number>
  stop(): Promise<void>
}

/** A worker process with `env` on top of the benchmark's settings. */
function startChild(metrics: boolean): Promise<Child> {
  const env: Record<string, string | undefined> = {
    ...process.env,
    DATABASE_URL: world.databaseUrl,
    REDIS_URL: world.redisUrl,
    QUEUE_PREFIX: world.queuePrefix,
    WORKER_QUEUES: 'messages',
    PLATFORM: 'sandbox',
    PLATFORM_RATE_PER_SECOND: '1000000',
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
    METRICS_PORT: metrics ? '0' : undefined,
  }
  const child: ChildProcess = fork(new URL('./metrics-worker.ts', import.meta.url), [], {
    env,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  return new Promise((resolve, reject) => {
    child.once('error', reject)
    child.once('exit', (code) => reject(new Error(`worker exited with ${code} before starting`)))
    child.once('message', (message) => {
      resolve({
        metricsUrl: (message as { metricsUrl: string | null }).metricsUrl,
        async cpuSeconds() {
          const fields = (await readFile(`/proc/${child.pid}/stat`, 'utf8')).split(') ')[1]?.split(' ') ?? []
          return (Number(fields[11]) + Number(fields[12])) / 100
        },
        async stop() {
          if (child.exitCode === null) child.kill('SIGTERM')
          await exited
        },
      })
    })
  })
}

async function newKey(): Promise<string> {
  const { keyHash, keyPrefix } = generateApiKey('development')
  const key = await insertApiKey(db, {
    keyHash,
    keyPrefix,
    environment: 'development',
    clientName: 'Bench metrics',
    email: 'bench@dispatch.test',
    scopes: ['send:free-text'],
    requestedTenantId: null,
    createdAt: new Date(),
  })
  return key.id
}

const textJob = (apiKeyId: string): MessageJob => ({
  messageId: randomUUID(),
  apiKeyId,
  acceptedAt: new Date().toISOString(),
  priority: 'normal',
  expiresAt: new Date(Date.now() + 4 * 3600_000).toISOString(),
  message: { type: 'text', body: { phone: '+5511987654321', text: 'Your code is 123456' } },
})

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
      while (scraping && child.metricsUrl) {
        const res = await fetch(`${child.metricsUrl}/metrics`)
        scrapeBytes = (await res.text()).length
        scrapes++
        await sleep(scrapeMs)
      }
    })()
    const key = await newKey()
    const batch = Array.from({ length: count }, () => textJob(key))
    const cpuBefore = await child.cpuSeconds()
    const began = performance.now()
    for (let i = 0; i < batch.length; i += 1000)
      await Promise.all(batch.slice(i, i + 1000).map((j) => store.add(j)))
    while ((await sentCount(key)) < count) {
      if (performance.now() - began > 300_000) throw new Error(`${count} messages not sent in 5 minutes`)
      await sleep(50)
    }
    const seconds = (performance.now() - began) / 1000
    const cpu = (await child.cpuSeconds()) - cpuBefore
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
