/**
 * Redis commands per message, counted rather than timed: on a redis-server of the benchmark's own
 * (no other client, so `INFO commandstats` sees only this), the calls of every command before and
 * after BENCH_MESSAGES messages go from accept to `sent` (the real API in process, then the real
 * messages worker with the sandbox platform draining them), for send-text and for batches, each
 * with and without an Idempotency-Key, versus a bare BullMQ `addBulk` and a no-op worker measured
 * the same way. Since issue 13 the API stores each message in its sender's fair-admission keys and
 * the worker's admitter moves it into the sender's BullMQ queue, so the job's add is counted in the
 * delivery phase (the worker's), with the admission itself; a case ends only once every message is
 * `sent`, so nothing it stored is left for the next. Commandstats counts the commands a Lua script runs as well as the EVAL/EVALSHA
 * itself, so a script costs 1 + what it calls. Prints totals, ratios and the count per command,
 * and, as an indication only (timed, so as noisy as the machine), the CPU per message of the
 * redis-server and of this process.
 *
 *   pnpm --filter @dispatch/bench bench:redis    (BENCH_MESSAGES, BENCH_BATCH_SIZE, REDIS_SERVER: the binary)
 */
import { randomUUID } from 'node:crypto'
import { buildApp, createDeps, createLogger, parseApiConfig } from '@dispatch/api'
import type { MessageJob } from '@dispatch/contracts'
import { suppressionsLoadedKey } from '@dispatch/runtime'
import { MESSAGE_JOB_OPTIONS } from '@dispatch/runtime/message-handoff'
import { createWorkerLogger, parseWorkerConfig, startWorker } from '@dispatch/worker'
import { Queue, Worker } from 'bullmq'
import type { FastifyInstance } from 'fastify'
import { Redis } from 'ioredis'
import postgres from 'postgres'
import {
  type Counts,
  commandCounts,
  printCountTable,
  redisCpuSeconds,
  startRedisServer,
} from '../harness/redis-server.ts'
import { printComparison } from '../harness/report.ts'
import { createBenchWorld } from '../harness/world.ts'
import { approvedKey } from './inject.ts'

const messages = Number(process.env.BENCH_MESSAGES ?? 3000)
const batchSize = Number(process.env.BENCH_BATCH_SIZE ?? 100)
/** Requests in flight: send-text as a busy sender's, batches fewer. */
const sendsInFlight = 50
const batchesInFlight = 5
const body = { phone: '+5511987654321', text: 'Your code is 123456' }

const redisServer = await startRedisServer()
const world = await createBenchWorld('redis_commands')
const observer = new Redis(redisServer.url)
const sql = postgres(world.databaseUrl, { max: 1, onnotice: () => {} })
const apiConfig = parseApiConfig({
  DATABASE_URL: world.databaseUrl,
  REDIS_URL: redisServer.url,
  QUEUE_PREFIX: world.queuePrefix,
  LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
  MESSAGE_RATE_PER_SECOND: '1000000000',
})
const workerConfig = parseWorkerConfig({
  DATABASE_URL: world.databaseUrl,
  REDIS_URL: redisServer.url,
  QUEUE_PREFIX: world.queuePrefix,
  LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
  WORKER_QUEUES: 'messages',
  PLATFORM: 'sandbox',
  // The sender's pace stays on (admission keeps it), far above the load.
  PLATFORM_RATE_PER_SECOND: '1000000',
})
const concurrency = workerConfig.MESSAGES_CONCURRENCY

/** Runs `one(i)` for i < total with `inFlight` running at once. */
async function pool(total: number, inFlight: number, one: (i: number) => Promise<void>) {
  let next = 0
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < total) await one(next++)
    }),
  )
}

interface Phase {
  counts: Counts
  /** CPU seconds of the redis-server, and of this process (the API or producer, and the worker). */
  redisCpu: number
  nodeCpu: number
}
interface Measured {
  name: string
  /** The case's column heading in the table of commands. */
  label: string
  accept: Phase
  delivery: Phase
}

/** Commands and Redis CPU spent by `work`; the observer's own INFO calls are left out. */
async function phase(work: () => Promise<void>): Promise<Phase> {
  const [countsBefore, cpuBefore] = [await commandCounts(observer), await redisCpuSeconds(observer)]
  const nodeBefore = process.cpuUsage()
  await work()
  const node = process.cpuUsage(nodeBefore)
  const [countsAfter, cpuAfter] = [await commandCounts(observer), await redisCpuSeconds(observer)]
  const counts: Counts = new Map()
  for (const [name, calls] of countsAfter) {
    const delta = calls - (countsBefore.get(name) ?? 0)
    if (name !== 'info' && delta > 0) counts.set(name, delta)
  }
  return { counts, redisCpu: cpuAfter - cpuBefore, nodeCpu: (node.user + node.system) / 1e6 }
}

const sentCount = async () => {
  const [row] = await sql<{ n: number }[]>`select count(*)::int as n from messages where status = 'sent'`
  return row?.n ?? 0
}

/**
 * Starts the real messages worker, waits until `count` more messages are `sent` (and `settled`, if
 * given, says so), closes it.
 */
async function deliver(count: number, settled: () => Promise<boolean> = async () => true) {
  const target = (await sentCount()) + count
  const worker = await startWorker(workerConfig, createWorkerLogger(workerConfig))
  // Postgres is polled, not Redis: the figure must hold the worker's commands only. A job is
  // recorded before it is completed; close() waits for the in-flight completions.
  while ((await sentCount()) < target || !(await settled())) {
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  await worker.close()
}

async function sendTexts(app: FastifyInstance, key: string, count: number, idempotent: boolean) {
  await pool(count, sendsInFlight, async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/api/third-party/messages/send-text',
      headers: { 'x-api-key': key, ...(idempotent ? { 'idempotency-key': randomUUID() } : {}) },
      payload: body,
    })
    if (res.statusCode !== 202) throw new Error(`send-text answered ${res.statusCode}: ${res.body}`)
  })
}

async function sendBatches(app: FastifyInstance, key: string, count: number, idempotent: boolean) {
  const payload = { messages: Array.from({ length: batchSize }, () => ({ type: 'text', ...body })) }
  await pool(Math.ceil(count / batchSize), batchesInFlight, async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/api/third-party/messages/batch',
      headers: { 'x-api-key': key, ...(idempotent ? { 'idempotency-key': randomUUID() } : {}) },
      payload,
    })
    if (res.statusCode !== 202 || res.json().accepted !== batchSize) {
      throw new Error(`batch answered ${res.statusCode}: ${res.body.slice(0, 200)}`)
    }
  })
}

/** Bare BullMQ: the same jobs added `batchSize` at a time, drained by a no-op worker. */
async function bare(count: number): Promise<Measured> {
  const connection = new Redis(redisServer.url, { maxRetriesPerRequest: null })
  const queue = new Queue<MessageJob>('bare', { connection, prefix: world.queuePrefix })
  const jobs = (n: number) =>
    Array.from({ length: n }, () => {
      const messageId = randomUUID()
      const data: MessageJob = {
        messageId,
        apiKeyId: randomUUID(),
        acceptedAt: new Date().toISOString(),
        expiresAt: new Date(Date.now() + 4 * 3600_000).toISOString(),
        message: { type: 'text', body },
      }
      return { name: 'text', data, opts: { ...MESSAGE_JOB_OPTIONS, jobId: messageId } }
    })
  const drain = async (n: number) => {
    const worker = new Worker('bare', async () => ({ platformMessageId: 'noop' }), {
      connection: new Redis(redisServer.url, { maxRetriesPerRequest: null }),
      prefix: world.queuePrefix,
      concurrency,
    })
    let done = 0
    await new Promise<void>((resolve, reject) => {
      worker.on('completed', () => {
        if (++done === n) resolve()
      })
      worker.on('failed', (_job, error) => reject(error))
    })
    await worker.close()
    await worker.disconnect()
  }
  const add = async (n: number) => {
    for (let start = 0; start < n; start += batchSize)
      await queue.addBulk(jobs(Math.min(batchSize, n - start)))
  }
  // Warm-up: scripts loaded and connections up before anything is counted.
  await add(batchSize)
  await drain(batchSize)
  const accept = await phase(() => add(count))
  const delivery = await phase(() => drain(count))
  await queue.close()
  connection.disconnect()
  return { name: 'bare BullMQ', label: 'bare', accept, delivery }
}

const total = (p: Phase) => [...p.counts.values()].reduce((a, b) => a + b, 0)
const perMessage = (m: Measured) => (total(m.accept) + total(m.delivery)) / messages

try {
  console.log(
    `redis commands: ${messages} messages accepted and delivered per case, on a redis-server of our own` +
      ` (${redisServer.version}); send-text ${sendsInFlight} in flight, batches of ${batchSize}` +
      ` ${batchesInFlight} in flight, bare addBulk of ${batchSize}; worker concurrency ${concurrency}`,
  )
  const began = performance.now()
  const results: Measured[] = [await bare(messages)]
  console.log(`  bare BullMQ: added and drained in ${((performance.now() - began) / 1000).toFixed(1)} s`)
  const app = await buildApp(createDeps(apiConfig, { logger: createLogger(apiConfig) }))
  try {
    const key = await approvedKey(app)
    // Warm-up: key cached, scripts loaded, connections up.
    await sendTexts(app, key, sendsInFlight, true)
    await sendBatches(app, key, batchSize, true)
    // The first worker on an empty Redis rebuilds the opt-outs' copy: done before anything is
    // counted (a rebuilt copy also makes deliveries of messages accepted before it read their entry).
    const optOutsCopied = async () => (await observer.exists(suppressionsLoadedKey(world.queuePrefix))) === 1
    await deliver(sendsInFlight + batchSize, optOutsCopied)
    // Messages accepted within the watch's clock margin (2 s) of that rebuild read their entry.
    await new Promise((resolve) => setTimeout(resolve, 2_500))
    for (const [name, label, send, idempotent] of [
      ['send-text', 'send-text', sendTexts, false],
      ['send-text + Idempotency-Key', 'send+key', sendTexts, true],
      [`batch of ${batchSize}`, 'batch', sendBatches, false],
      [`batch of ${batchSize} + Idempotency-Key`, 'batch+key', sendBatches, true],
    ] as const) {
      const began = performance.now()
      const accept = await phase(() => send(app, key, messages, idempotent))
      const delivery = await phase(() => deliver(messages))
      results.push({ name, label, accept, delivery })
      console.log(`  ${name}: accepted and delivered in ${((performance.now() - began) / 1000).toFixed(1)} s`)
    }
  } finally {
    await app.close()
  }

  const [base, ...ours] = results as [Measured, ...Measured[]]
  const µs = (seconds: number) => `${Math.round((seconds * 1e6) / messages)} µs`
  for (const m of results) {
    console.log(
      `  ${m.name}: ${perMessage(m).toFixed(2)} commands per message (accept ${(total(m.accept) / messages).toFixed(2)},` +
        ` delivery ${(total(m.delivery) / messages).toFixed(2)}); CPU per message, accepting: Redis` +
        ` ${µs(m.accept.redisCpu)}, node ${µs(m.accept.nodeCpu)}; delivering: Redis ${µs(m.delivery.redisCpu)},` +
        ` node ${µs(m.delivery.nodeCpu)}`,
    )
  }
  printCountTable(
    results.map((m) => ({ name: m.label, phases: { accept: m.accept.counts, delivery: m.delivery.counts } })),
    messages,
  )
  for (const m of ours) {
    printComparison({
      name: `Redis commands per message, ${m.name}`,
      figure: perMessage(m),
      baseline: perMessage(base),
      unit: 'commands',
      better: 'lower',
      aim: m.name.startsWith('batch') ? '≤ 1.0' : '≤ 1.15',
    })
  }
} finally {
  observer.disconnect()
  await sql.end({ timeout: 5 })
  await redisServer.stop()
  await world.drop()
}
