/**
 * Delivery benchmark: messages per second through the real messages worker (sandbox adapter, no
 * latency, records written to Postgres, outcomes counted in its metrics), as it runs by default (messages in bundles of
 * MESSAGES_BUNDLE_SIZE, 20), versus a BullMQ worker with a no-op processor, a job per message, on
 * the same messages and the same concurrency, in this process. Prints figure, baseline, ratio, and
 * where the worker's time goes: CPU per message of this process and of the database's Postgres
 * backends. Beside it: the worker on a job per message (MESSAGES_BUNDLE_SIZE=1), the mean time of
 * each step of such a job (timed around the dependencies the worker is handed), and a worker that
 * does the least any delivery could (the floor: BullMQ's fetch and completion, one platform call,
 * the outcome written in batches).
 *
 * With BENCH_BREAKDOWN=1 each round also runs the floor on bundles, bare and with a claim and a
 * sent-log append per message (each one pipelined write per job), and the delivery worker without
 * the revoked-key check (messages/revoked-keys.ts), beside the same worker with it.
 *
 *   pnpm --filter @dispatch/bench bench:delivery    (BENCH_JOBS, BENCH_CONCURRENCY, BENCH_ROUNDS, BENCH_BREAKDOWN, BENCH_BUNDLE)
 *   BENCH_ONLY=revocation: only the delivery worker with and without the revoked-key check, paired.
 *   BENCH_ONLY=claims: only the delivery worker with and without the claims' release, paired.
 *   BENCH_ONLY=fallback: texts carrying an SMS fallback (no afterSeconds: its SMS kept with the
 *   sent record) against the same texts without one, paired; and, for comparison, the same with
 *   their content discarded (each then holds its SMS in Redis, fallback-timer.ts).
 *   BENCH_ONLY=pool: texts of a key bound to a sender pool (the number chosen and the pool on each
 *   job, as the API stores them; the pool's numbers as a worker holds them) against the same texts
 *   of a single-sender key, paired.
 */
import { randomUUID } from 'node:crypto'
import { type MessageJob, QueueNames } from '@dispatch/contracts'
import { createDb, type DeliveryOutcome, type Sql } from '@dispatch/db'
import {
  type MessagingLimit,
  portfolioReachKey,
  portfolioRecentKey,
  recipientHasher,
  SERVICE_WINDOW_MS,
  serviceWindowKey,
  serviceWindowsLoadedKey,
} from '@dispatch/runtime'
import {
  fairKeys,
  MESSAGE_CLAIM_KEEP_MS,
  MESSAGE_JOB_OPTIONS,
  type MessageBundleJob,
  type MessageBundleResult,
} from '@dispatch/runtime/message-handoff'
import { parseWorkerConfig } from '@dispatch/worker'
import { Queue, Worker } from 'bullmq'
import { Redis } from 'ioredis'
import pino from 'pino'
import { deliverBundle } from '../../../../apps/worker/src/messages/bundle.ts'
import { OptOutWatch } from '../../../../apps/worker/src/messages/consent/watch.ts'
import { deliverMessage } from '../../../../apps/worker/src/messages/deliver.ts'
import type { DeliveryResult, RotationWatch } from '../../../../apps/worker/src/messages/delivery/types.ts'
import { DeliveryRecorder } from '../../../../apps/worker/src/messages/delivery-recorder.ts'
import { SmsFallbackTimers } from '../../../../apps/worker/src/messages/fallback-timer.ts'
import { batchedLogSent } from '../../../../apps/worker/src/messages/sent-log.ts'
import { WorkerMetrics } from '../../../../apps/worker/src/metrics/registry.ts'
import { createSandboxPlatform } from '../../../../apps/worker/src/platforms/sandbox.ts'
import type { Delivery } from '../../../../apps/worker/src/platforms/types.ts'
import { deliveryOutcome } from '../../../../apps/worker/src/shared/message-outcome.ts'
import { Permits } from '../../../../apps/worker/src/shared/permits.ts'
import { backendsCpuDelta, databaseBackendsCpu } from '../harness/cpu.ts'
import { insertBenchKey } from '../harness/keys.ts'
import { redisCpuSeconds } from '../harness/redis-server.ts'
import { printComparison } from '../harness/report.ts'
import { median } from '../harness/stats.ts'
import { createBenchWorld } from '../harness/world.ts'

const jobs = Number(process.env.BENCH_JOBS ?? 10_000)
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 50)
const rounds = Number(process.env.BENCH_ROUNDS ?? 3)
const breakdown = process.env.BENCH_BREAKDOWN === '1'
/** Messages per job: the worker's MESSAGES_BUNDLE_SIZE default unless set. */
const bundleSize = Number(process.env.BENCH_BUNDLE ?? parseWorkerConfig({}).MESSAGES_BUNDLE_SIZE)

const world = await createBenchWorld('delivery')
const { db, sql, close: closeDb } = createDb(world.databaseUrl)
const connections: Redis[] = []
const connection = (options: { pipelined?: boolean } = {}) => {
  const client = new Redis(world.redisUrl, {
    maxRetriesPerRequest: null,
    ...(options.pipelined ? { enableAutoPipelining: true } : {}),
  })
  connections.push(client)
  return client
}
/** INFO cpu, for the Redis server's share of each drain. */
const redisInfo = connection()
const logger = pino({ level: 'silent' })
/** Metrics on, as a worker serving METRICS_PORT counts them: every outcome counted. */
const metrics = new WorkerMetrics()

const key = await insertBenchKey(db, 'Bench')

/** A running mean of durations, in milliseconds. */
class Span {
  count = 0
  totalMs = 0
  add(ms: number) {
    this.count++
    this.totalMs += ms
  }
  get mean() {
    return `${(this.count ? this.totalMs / this.count : 0).toFixed(2)} ms`
  }
  async time<T>(work: Promise<T>): Promise<T> {
    const began = performance.now()
    try {
      return await work
    } finally {
      this.add(performance.now() - began)
    }
  }
}
const spans = {
  /** Active to completed: the whole of a job in the worker, BullMQ's completion included. */
  job: new Span(),
  noopJob: new Span(),
  claim: new Span(),
  platform: new Span(),
  /** Per statement: the recorder writes the outcomes of many jobs in each. */
  record: new Span(),
}

const textMessage = (): MessageJob => ({
  messageId: randomUUID(),
  apiKeyId: key.id,
  acceptedAt: new Date().toISOString(),
  message: { type: 'text', body: { phone: '+5511987654321', text: 'Your code is 123456' } },
})

/** The same text, carrying an SMS fallback without afterSeconds (kept with its sent record). */
const fallbackMessage = (): MessageJob => ({
  ...textMessage(),
  fallback: { sms: { text: 'Your code is 123456 (by SMS)' } },
})
/** …its content discarded: its SMS held in Redis a day instead (its 131026 hold). */
const heldFallbackMessage = (): MessageJob => ({ ...fallbackMessage(), discardContent: true })

/**
 * The same text from a key bound to a sender pool: its chosen number and its pool on the job, as the
 * API stores them; the pool's three numbers (whose opt-outs stop it: read only when one may have
 * come since it was accepted) as a worker's pool mover holds them (`rotation`).
 */
const POOL_ID = randomUUID()
const POOL_NUMBERS = ['100000000000001', '100000000000002', '100000000000003']
const pooledMessage = (): MessageJob => ({ ...textMessage(), senderId: 'default', senderPoolId: POOL_ID })

/** The pool mover as a lane asks it (pool-mover.ts): the pool read, no number out of rotation. */
const rotation: RotationWatch = {
  leftRotation: () => false,
  handOver: async () => new Set<string>(),
  rateLimited: () => {},
  poolNumbers: (poolId) => (poolId === POOL_ID ? POOL_NUMBERS : undefined),
}

let recipients = 0
/**
 * A template to a recipient never reached before, whose window is closed (none recorded, the
 * copy of the windows complete): under a finite messaging limit, each is counted in the reach.
 */
const templateMessage = (): MessageJob => ({
  messageId: randomUUID(),
  apiKeyId: key.id,
  acceptedAt: new Date().toISOString(),
  message: {
    type: 'template',
    body: {
      phone: `+5521${String(recipients++).padStart(9, '0')}`,
      templateId: 'order_shipped',
      language: 'pt_BR',
      variables: { '1': 'Ana' },
    },
  },
})

/** A template under a counted messaging limit, as the API stores it: its window read closed at accept. */
const countedTemplateMessage = (): MessageJob => ({ ...templateMessage(), windowClosesAt: 0 })

/** Fills a queue with `jobs` text messages, as the API adds them (`per` > 1: that many to a job). */
async function fill(queue: Queue, per = 1, make: () => MessageJob = textMessage) {
  for (let start = 0; start < jobs; start += 1000) {
    const batch = Array.from({ length: Math.min(1000, jobs - start) }, make)
    if (per === 1) {
      await queue.addBulk(
        batch.map((data) => ({
          name: 'text',
          data,
          opts: { ...MESSAGE_JOB_OPTIONS, jobId: data.messageId },
        })),
      )
      continue
    }
    const bundles = []
    for (let i = 0; i < batch.length; i += per) {
      const messages = batch.slice(i, i + per)
      bundles.push({
        name: 'bundle',
        data: { messages },
        opts: { ...MESSAGE_JOB_OPTIONS, jobId: messages[0]?.messageId },
      })
    }
    await queue.addBulk(bundles)
  }
}

interface Drained {
  perSecond: number
  /** CPU per message in µs: this process, and the database's Postgres backends (when local). */
  processCpu: number
  postgresCpu: number | undefined
  /** The Redis server's CPU per message in µs (`INFO cpu`: every client of the server, this run's most). */
  redisCpu: number
}

/**
 * Starts `start()` on a full queue and times it until every job has completed and (the delivery
 * worker's) every outcome is in Postgres.
 */
async function timeDrain(
  queueName: string,
  jobSpan: Span,
  start: () => Worker,
  per = 1,
  make?: () => MessageJob,
): Promise<Drained> {
  const queue = new Queue(queueName, { connection: connection(), prefix: world.queuePrefix })
  await fill(queue, per, make)
  const jobCount = Math.ceil(jobs / per)
  const pgBefore = await databaseBackendsCpu(sql)
  const redisBefore = await redisCpuSeconds(redisInfo)
  const cpuBefore = process.cpuUsage()
  const began = performance.now()
  const worker = start()
  const activeAt = new Map<string | undefined, number>()
  let done = 0
  await new Promise<void>((resolve, reject) => {
    worker.on('active', (job) => activeAt.set(job.id, performance.now()))
    worker.on('completed', (job) => {
      jobSpan.add(performance.now() - (activeAt.get(job.id) ?? began))
      if (++done === jobCount) resolve()
    })
    worker.on('failed', (_job, error) => reject(error))
  })
  await recording?.drain()
  recording = undefined
  const seconds = (performance.now() - began) / 1000
  const cpu = process.cpuUsage(cpuBefore)
  const pgAfter = await databaseBackendsCpu(sql)
  const redisSeconds = (await redisCpuSeconds(redisInfo)) - redisBefore
  await worker.close()
  await queue.obliterate({ force: true })
  await queue.close()
  // No backend readable: Postgres is not on this machine, its CPU is not ours to read.
  const pgSeconds = pgBefore.size > 0 ? backendsCpuDelta(pgBefore, pgAfter) : undefined
  return {
    perSecond: jobs / seconds,
    processCpu: (cpu.user + cpu.system) / jobs,
    postgresCpu: pgSeconds === undefined ? undefined : (pgSeconds * 1e6) / jobs,
    redisCpu: (redisSeconds * 1e6) / jobs,
  }
}

const baselineRun = () =>
  timeDrain(
    'bench-noop',
    spans.noopJob,
    () =>
      new Worker('bench-noop', async () => ({ platformMessageId: 'noop' }), {
        connection: connection(),
        prefix: world.queuePrefix,
        concurrency,
      }),
  )

/** The recorder of the delivery worker running now: a run ends once it has written everything. */
let recording: DeliveryRecorder | undefined

/** The claim connection, its one command (the claim's `SET … NX GET`) timed. */
function timedClaims() {
  // Auto-pipelined, as the worker's claim connection is.
  const client = connection({ pipelined: true })
  const set = client.set.bind(client) as (...args: unknown[]) => Promise<unknown>
  Object.assign(client, { set: (...args: unknown[]) => spans.claim.time(set(...args)) })
  return client
}

/** The driver, each statement timed: the recorder's upserts are a round's only statements. */
const timedSql = new Proxy(sql, {
  apply(target, thisArg, args) {
    const query = Reflect.apply(target, thisArg, args)
    spans.record.time(Promise.resolve(query)).catch(() => {})
    return query
  },
}) as Sql

const sandbox = createSandboxPlatform({ latencyMs: 0, failureRate: 0, phoneNumberId: '100000000000001' })
/**
 * A portfolio under Meta's largest finite tier (100,000 a day), its reach emptied before each
 * counted run (`templateRun`): no run reaches it, so each is counted as a portfolio below its tier
 * is (appended to the recent list, packages/runtime/src/messaging-limit.ts). Near the limit the
 * count is exact, as every count was before the list (docs/benchmarks-messaging-limit.md).
 */
const BENCH_LIMIT: MessagingLimit = {
  limit: 100_000,
  source: 'admin',
  portfolio: 'bench',
  policy: 'hold',
  tracked: true,
}

/** One sender's lane, without rate limit: its platform calls timed; `limited`: under a messaging limit. */
const lane = (serviceWindowPolicy: 'off' | 'enforce', limited = false) => ({
  senderId: 'default',
  platform: { ...sandbox, deliver: (delivery: Delivery) => spans.platform.time(sandbox.deliver(delivery)) },
  settings: { serviceWindowPolicy, ...(limited ? { messagingLimit: BENCH_LIMIT } : {}) },
  rateLimit: async () => ({ pauseMs: 0, newPause: false }),
  limitedUntil: 0,
  holdForLimit: async () => false,
  spendPace: async () => {},
  tokenRefused: async () => {},
})

/**
 * What a lane hands its worker: the claims connection, the recorder (sharing its batches), the sent
 * log on the connection the worker completes jobs on, the opt-out announcements followed (the
 * opt-out read skipped for recipients nobody opted out since accept), the revoked keys and the pool
 * mover.
 */
function laneDeps(
  claims: Redis,
  workerConnection: Redis,
  recordSql: Sql = sql,
  releaseClaims = true,
  fallbackTimers: SmsFallbackTimers = sharedFallbackTimers,
) {
  return {
    db,
    claims,
    logger,
    prefix: world.queuePrefix,
    hash: recipientHasher({}),
    // As a lane's: a committed outcome releases its message's claim (message-claims.ts).
    recorder: new DeliveryRecorder(recordSql, {
      redis: claims,
      ...(releaseClaims ? { claims: { prefix: world.queuePrefix, keepMs: MESSAGE_CLAIM_KEEP_MS } } : {}),
    }),
    sentLog: { stream: fairKeys(world.queuePrefix, 'default').sentLog, redis: workerConnection },
    optOuts,
    // As a worker holds them: every revoked key's id in memory, none of them this key.
    revokedKeys,
    metrics,
    // As a lane has them: a message WhatsApp took with a fallback arms its timer, or, without
    // `afterSeconds`, its sent record keeps the SMS (a hold only when its content is discarded).
    fallbackTimers,
    rotation,
  }
}

/**
 * The messages worker of one sender, as a lane runs it, without rate limit; under `enforce`, each
 * text reads its recipient's window in Redis first (open here, so every message still goes).
 */
function startDeliveryWorker(
  serviceWindowPolicy: 'off' | 'enforce' = 'off',
): Worker<MessageJob, DeliveryResult> {
  const workerConnection = connection()
  const deps = {
    ...laneDeps(timedClaims(), workerConnection, timedSql),
    // BENCH_RECORD=sync: each job waits for its row, as before the sent log.
    ...(process.env.BENCH_RECORD === 'sync' ? { sentLog: undefined } : {}),
  }
  recording = deps.recorder
  return new Worker<MessageJob, DeliveryResult>(
    QueueNames.messages,
    (job, token) => deliverMessage(job, token, lane(serviceWindowPolicy), deps),
    { connection: workerConnection, prefix: world.queuePrefix, concurrency },
  )
}

/**
 * The least work delivery could do (issue 26's floor): BullMQ's fetch and completion, one platform
 * call, and the outcome written to Postgres in the recorder's batches without the job waiting. No
 * claim, no checks, no log: what every message costs whatever the design.
 */
let floorRecorder: DeliveryRecorder | undefined
function startFloorWorker(): Worker<MessageJob> {
  const recorder = new DeliveryRecorder(sql)
  floorRecorder = recorder
  const lane = { senderId: 'default', platform: sandbox }
  return new Worker<MessageJob>(
    'bench-floor',
    async (job) => {
      const { platformMessageId } = await sandbox.deliver({
        messageId: job.data.messageId,
        message: job.data.message,
      })
      recorder
        .record(deliveryOutcome(job.data, lane, 'sent', { attempts: 1, platformMessageId }))
        .catch(() => {})
      return { platformMessageId }
    },
    { connection: connection(), prefix: world.queuePrefix, concurrency },
  )
}
const floorRun = async () => {
  const drained = await timeDrain('bench-floor', new Span(), startFloorWorker)
  await floorRecorder?.drain()
  return drained
}

/**
 * The floor on jobs of `bundleSize` messages each, at the same messages in flight; `perMessage`
 * adds a claim (`SET … NX GET`) and a sent-log append (`XADD`) per message, each one pipelined
 * write per job.
 */
function startBundledFloorWorker(perMessage: boolean): Worker<{ messages: MessageJob[] }> {
  const recorder = new DeliveryRecorder(sql)
  floorRecorder = recorder
  const lane = { senderId: 'default', platform: sandbox }
  const redis = connection({ pipelined: true })
  const sentLog = `${world.queuePrefix}:bench-bundled:sent`
  return new Worker<{ messages: MessageJob[] }>(
    'bench-bundled',
    async (job) => {
      const { messages } = job.data
      if (perMessage) {
        const claims = redis.pipeline()
        for (const m of messages) {
          claims.set(
            `${world.queuePrefix}:bench-bundled:claim:${m.messageId}`,
            'worker',
            'PX',
            60_000,
            'NX',
            'GET',
          )
        }
        await claims.exec()
      }
      const outcomes = await Promise.all(
        messages.map(async (m) => {
          const { platformMessageId } = await sandbox.deliver({ messageId: m.messageId, message: m.message })
          return deliveryOutcome(m, lane, 'sent', { attempts: 1, platformMessageId })
        }),
      )
      if (perMessage) {
        const log = redis.pipeline()
        for (const o of outcomes) log.xadd(sentLog, '*', 'o', JSON.stringify(o))
        await log.exec()
      }
      for (const o of outcomes) recorder.record(o).catch(() => {})
    },
    { connection: connection(), prefix: world.queuePrefix, concurrency: Math.ceil(concurrency / bundleSize) },
  )
}
const bundledFloorRun = async (perMessage: boolean) => {
  const drained = await timeDrain(
    'bench-bundled',
    new Span(),
    () => startBundledFloorWorker(perMessage),
    bundleSize,
  )
  await floorRecorder?.drain()
  return drained
}

/**
 * The messages worker on bundles of `bundleSize` (MESSAGES_BUNDLE_SIZE), as a lane runs it: each
 * message delivered as a message's own job delivers it, `concurrency` platform calls in flight.
 */
function startBundledDeliveryWorker(
  serviceWindowPolicy: 'off' | 'enforce' = 'off',
  revocationCheck = true,
  releaseClaims = true,
  limited = false,
): Worker<MessageBundleJob, MessageBundleResult> {
  const claims = connection({ pipelined: true })
  const workerConnection = connection()
  // As a lane has them: the queue (BullMQ's scripts) on a connection apart from the claims'.
  const queue = new Queue<MessageJob>(QueueNames.messages, {
    connection: connection(),
    prefix: world.queuePrefix,
  })
  // As a lane's: the holds on the claims' connection (lanes.ts), beside the sent log's appends.
  const lanes = laneDeps(claims, workerConnection, sql, releaseClaims, fallbackTimersOn(claims))
  const appendSent = batchedLogSent(claims)
  const deps = {
    ...lanes,
    sentLog: {
      ...lanes.sentLog,
      append: (outcome: DeliveryOutcome) => appendSent(lanes.sentLog.stream, outcome),
    },
    queue: async () => queue,
    permits: new Permits(concurrency),
    index: { redis: claims, key: fairKeys(world.queuePrefix, 'default').bundled },
    backoffMs: 1000,
    ...(revocationCheck ? {} : { revokedKeys: undefined }),
  }
  recording = deps.recorder
  return new Worker<MessageBundleJob, MessageBundleResult>(
    QueueNames.messages,
    (job) => deliverBundle(job, lane(serviceWindowPolicy, limited), deps),
    { connection: workerConnection, prefix: world.queuePrefix, concurrency },
  )
}

/** A job per message (MESSAGES_BUNDLE_SIZE=1). */
const singleRun = () => timeDrain(QueueNames.messages, spans.job, () => startDeliveryWorker())
/** As Dispatch runs by default: bundles of `bundleSize` (MESSAGES_BUNDLE_SIZE). */
const deliveryRun = () =>
  timeDrain(QueueNames.messages, new Span(), () => startBundledDeliveryWorker(), bundleSize)
/** The same, without the revoked-key check at delivery (BENCH_BREAKDOWN): what the check costs. */
const uncheckedRun = () =>
  timeDrain(QueueNames.messages, new Span(), () => startBundledDeliveryWorker('off', false), bundleSize)
/** The same, its claims kept their day as before issue 46 (BENCH_ONLY=claims): what the release costs. */
const unreleasedRun = () =>
  timeDrain(QueueNames.messages, new Span(), () => startBundledDeliveryWorker('off', true, false), bundleSize)
const enforcedRun = () =>
  timeDrain(QueueNames.messages, new Span(), () => startBundledDeliveryWorker('enforce'), bundleSize)
/**
 * Templates to new recipients outside their window, with the portfolio's messaging limit counted
 * (each: its window read beside the claim, then reachPortfolio-2.lua) and without (policy `off`).
 */
/** BENCH_CONTROL=1: the counted side runs with the limit `off` too (the pairing's own noise). */
const limitControl = process.env.BENCH_CONTROL === '1'
const templateRun = async (limited: boolean) => {
  if (limited) {
    const redis = connection()
    await redis.del(
      portfolioReachKey(world.queuePrefix, BENCH_LIMIT.portfolio),
      portfolioRecentKey(world.queuePrefix, BENCH_LIMIT.portfolio),
    )
  }
  return timeDrain(
    QueueNames.messages,
    new Span(),
    () => startBundledDeliveryWorker('off', true, true, limited && !limitControl),
    bundleSize,
    // Counted, a template's job carries its recipient's window as the accept path read it (closed).
    limited && !limitControl ? countedTemplateMessage : templateMessage,
  )
}

/**
 * Texts (BENCH_ONLY=fallback) with an SMS fallback, its SMS kept with the sent record; the same
 * with their content discarded, their SMS held in Redis (`held`); or without a fallback.
 */
const fallbackRun = (kind: 'with' | 'held' | 'without') =>
  timeDrain(
    QueueNames.messages,
    new Span(),
    () => startBundledDeliveryWorker(),
    bundleSize,
    kind === 'with' ? fallbackMessage : kind === 'held' ? heldFallbackMessage : textMessage,
  )
const held: Drained[] = []

/** Texts of a pooled key (BENCH_ONLY=pool) or of a single-sender one. */
const pooledRun = (pooled: boolean) =>
  timeDrain(
    QueueNames.messages,
    new Span(),
    () => startBundledDeliveryWorker(),
    bundleSize,
    pooled ? pooledMessage : textMessage,
  )

/** The fallback timers' producer, as a lane holds it: a job per message's on a connection of their own. */
const sharedFallbackTimers = new SmsFallbackTimers(
  connection(),
  world.queuePrefix,
  connection({ pipelined: true }),
)
const timersQueue = connection()
/** The timers of a bundled worker, its holds written on its claims' connection as a lane's are. */
const fallbackTimersOn = (claims: Redis) => new SmsFallbackTimers(timersQueue, world.queuePrefix, claims)

/** A thousand revoked keys, held as a worker process holds them (messages/revoked-keys.ts). */
const revokedKeys = new Set(Array.from({ length: 1000 }, () => randomUUID()))

/** The opt-out announcements, followed as a worker process does (messages/consent/watch.ts). */
const optOuts = new OptOutWatch(connection(), world.queuePrefix, logger)
optOuts.start()
await optOuts.caughtUp(5_000)

const us = (n: number | undefined) => (n === undefined ? 'n/a' : `${Math.round(n)} µs`)

try {
  console.log(`delivery: ${jobs} queued jobs, concurrency ${concurrency}, ${rounds} alternating rounds`)
  // The recipient's window open, and the copy of the windows complete: the check under enforce reads both.
  const windows = connection()
  await windows.set(serviceWindowsLoadedKey(world.queuePrefix), '1')
  await windows.set(
    serviceWindowKey(world.queuePrefix, '100000000000001', '+5511987654321'),
    String(Date.now()),
    'PX',
    SERVICE_WINDOW_MS,
  )
  const base: Drained[] = []
  const real: Drained[] = []
  const enforced: Drained[] = []
  const floor: Drained[] = []
  const bundled: Drained[] = []
  const bundledChecked: Drained[] = []
  const single: Drained[] = []
  const unchecked: Drained[] = []
  const checked: Drained[] = []
  const limitCounted: Drained[] = []
  const limitOff: Drained[] = []
  for (let round = 1; round <= rounds; round++) {
    if (process.env.BENCH_ONLY === 'revocation') {
      // The revoked-key check alone, with and without, back to back, alternating which goes first.
      if (round % 2) {
        checked.push(await deliveryRun())
        unchecked.push(await uncheckedRun())
      } else {
        unchecked.push(await uncheckedRun())
        checked.push(await deliveryRun())
      }
      continue
    }
    if (process.env.BENCH_ONLY === 'fallback') {
      // A fallback kept with the record, one held in Redis, no fallback; rotating.
      const sides = [
        async () => checked.push(await fallbackRun('with')),
        async () => held.push(await fallbackRun('held')),
        async () => unchecked.push(await fallbackRun('without')),
      ]
      for (let i = 0; i < sides.length; i++) await sides[(i + round) % sides.length]?.()
      continue
    }
    if (process.env.BENCH_ONLY === 'pool') {
      // A pooled key's texts and a single-sender key's, back to back, alternating which goes first.
      if (round % 2) {
        checked.push(await pooledRun(true))
        unchecked.push(await pooledRun(false))
      } else {
        unchecked.push(await pooledRun(false))
        checked.push(await pooledRun(true))
      }
      continue
    }
    if (process.env.BENCH_ONLY === 'claims') {
      // The claim's release with and without, back to back, alternating which goes first.
      if (round % 2) {
        checked.push(await deliveryRun())
        unchecked.push(await unreleasedRun())
      } else {
        unchecked.push(await unreleasedRun())
        checked.push(await deliveryRun())
      }
      continue
    }
    if (process.env.BENCH_ONLY === 'limit' || !process.env.BENCH_ONLY) {
      // The messaging limit counted or not (`off`), alternating which goes first.
      if (round % 2) {
        limitCounted.push(await templateRun(true))
        limitOff.push(await templateRun(false))
      } else {
        limitOff.push(await templateRun(false))
        limitCounted.push(await templateRun(true))
      }
      if (process.env.BENCH_ONLY === 'limit') continue
    }
    if (process.env.BENCH_ONLY === 'delivery' || process.env.BENCH_ONLY === 'enforce') {
      // For a profile of the delivery worker alone.
      real.push(await (process.env.BENCH_ONLY === 'enforce' ? enforcedRun() : deliveryRun()))
      continue
    }
    const b = await baselineRun()
    floor.push(await floorRun())
    if (breakdown) {
      bundled.push(await bundledFloorRun(false))
      bundledChecked.push(await bundledFloorRun(true))
    }
    // Off and enforce alternate which goes first, so drift between them moves both alike.
    let r: Drained
    let e: Drained
    if (round % 2) {
      r = await deliveryRun()
      e = await enforcedRun()
    } else {
      e = await enforcedRun()
      r = await deliveryRun()
    }
    if (breakdown) {
      // With and without the revoked-key check, back to back, alternating which goes first.
      if (round % 2) {
        checked.push(await deliveryRun())
        unchecked.push(await uncheckedRun())
      } else {
        unchecked.push(await uncheckedRun())
        checked.push(await deliveryRun())
      }
    }
    single.push(await singleRun())
    base.push(b)
    real.push(r)
    enforced.push(e)
    console.log(
      `  round ${round}/${rounds}: sandbox delivery, ${bundleSize} a job, ${Math.round(r.perSecond)} msg/s` +
        ` (CPU per message: this process ${us(r.processCpu)}, Postgres ${us(r.postgresCpu)});` +
        ` no-op ${Math.round(b.perSecond)} jobs/s (this process ${us(b.processCpu)});` +
        ` with the window checked (enforce) ${Math.round(e.perSecond)} msg/s (this process ${us(e.processCpu)})`,
    )
  }
  const [recorded] = await db.execute<{ count: string }>(
    `select count(*) from messages where status = 'sent'`,
  )
  const sides = breakdown ? 10 : 6
  /**
   * Two sides run in paired rounds: the throughput's comparison (its name recorded for the bench
   * table), this process's CPU per message side by side, and the paired ratios per round.
   */
  const printPaired = (
    name: string,
    aim: string,
    [figureLabel, figure]: [string, Drained[]],
    [baselineLabel, baseline]: [string, Drained[]],
  ) => {
    printComparison({
      name,
      figure: median(figure.map((r) => r.perSecond)),
      baseline: median(baseline.map((r) => r.perSecond)),
      unit: 'msg/s',
      better: 'higher',
      aim,
    })
    const pairs = figure.map((c, i) => c.perSecond / (baseline[i]?.perSecond ?? c.perSecond))
    console.log(
      `  CPU per message (this process), ${figureLabel} vs ${baselineLabel}: ${us(median(figure.map((r) => r.processCpu)))}` +
        ` vs ${us(median(baseline.map((r) => r.processCpu)))}; Redis ${us(median(figure.map((r) => r.redisCpu)))}` +
        ` vs ${us(median(baseline.map((r) => r.redisCpu)))}; paired ratios per round:` +
        ` ${pairs.map((p) => p.toFixed(3)).join(', ')} (median ${median(pairs).toFixed(3)})`,
    )
  }
  const printRevocationCheck = (name: string) =>
    printPaired(name, '≥ 0.98', ['the revoked-key check', checked], ['none', unchecked])
  const printLimit = () =>
    printPaired(
      'delivery throughput, templates outside the window: the messaging limit counted vs off',
      '≥ 0.98',
      ['counted', limitCounted],
      ['off', limitOff],
    )
  // A BENCH_ONLY run prints its own sides; the world is dropped below either way.
  if (process.env.BENCH_ONLY === 'limit') {
    printLimit()
  } else if (process.env.BENCH_ONLY === 'revocation') {
    printRevocationCheck('delivery throughput, the revoked-key check vs none')
  } else if (process.env.BENCH_ONLY === 'fallback') {
    printPaired(
      'delivery throughput, texts with an SMS fallback (kept with the sent record) vs without',
      '≥ 0.95',
      ['with', checked],
      ['without', unchecked],
    )
    printPaired(
      'delivery throughput, texts with an SMS fallback and their content discarded (a 131026 hold in Redis) vs without',
      'for comparison',
      ['held', held],
      ['without', unchecked],
    )
  } else if (process.env.BENCH_ONLY === 'pool') {
    printPaired(
      "delivery throughput, a pooled key's texts vs a single-sender key's",
      '≥ 0.97',
      ['pooled', checked],
      ['single', unchecked],
    )
  } else if (process.env.BENCH_ONLY === 'claims') {
    printPaired(
      'delivery throughput, claims released once recorded vs kept a day',
      '≥ 0.95',
      ['released', checked],
      ['kept', unchecked],
    )
  } else if (process.env.BENCH_ONLY) {
    console.log(`delivery only: ${real.map((r) => Math.round(r.perSecond)).join(', ')} msg/s`)
  } else {
    if (Number(recorded?.count) !== sides * jobs * rounds)
      throw new Error(`expected ${sides * jobs * rounds} sent records, found ${recorded?.count}`)
    if (breakdown) {
      for (const [name, runs] of [
        [`the floor, ${bundleSize} messages a job`, bundled],
        [
          `the floor, ${bundleSize} messages a job, with a claim and a sent-log append per message`,
          bundledChecked,
        ],
      ] as const) {
        printComparison({
          name: `  ${name} (breakdown) vs the no-op worker, a job each`,
          figure: median(runs.map((r) => r.perSecond)),
          baseline: median(base.map((b) => b.perSecond)),
          unit: 'msg/s',
          better: 'higher',
        })
      }
    }
    if (breakdown) printRevocationCheck('delivery throughput, the revoked-key check vs none (breakdown)')
    printComparison({
      name: 'delivery throughput (sandbox)',
      figure: median(real.map((r) => r.perSecond)),
      baseline: median(base.map((b) => b.perSecond)),
      unit: 'msg/s',
      better: 'higher',
      aim: '≥ 0.8',
    })
    printComparison({
      name: 'delivery throughput, a job per message (MESSAGES_BUNDLE_SIZE=1, sandbox)',
      figure: median(single.map((r) => r.perSecond)),
      baseline: median(base.map((b) => b.perSecond)),
      unit: 'msg/s',
      better: 'higher',
    })
    printLimit()
    printComparison({
      name: 'delivery throughput, the window checked (enforce) vs not (off)',
      figure: median(enforced.map((r) => r.perSecond)),
      baseline: median(real.map((r) => r.perSecond)),
      unit: 'msg/s',
      better: 'higher',
      aim: '≥ 0.95',
    })
    // CPU per message, this process and Postgres, medians: Dispatch, the least work, the no-op worker.
    const cpu = (runs: Drained[]) =>
      `${us(median(runs.map((r) => r.processCpu)))} + Postgres ${us(median(runs.flatMap((r) => (r.postgresCpu === undefined ? [] : [r.postgresCpu]))))}`
    console.log(
      `  CPU per message: Dispatch ${cpu(real)}; the floor (fetch, platform call, batched record) ${cpu(floor)},` +
        ` ${Math.round(median(floor.map((r) => r.perSecond)))} msg/s; the no-op worker ${cpu(base)}`,
    )
    printComparison({
      name: 'delivery CPU per message (this process), Dispatch vs the floor (fetch, platform call, batched record)',
      figure: median(real.map((r) => r.processCpu)),
      baseline: median(floor.map((r) => r.processCpu)),
      unit: 'µs',
      better: 'lower',
    })
    console.log(
      `  per job (means over the rounds): ${spans.job.mean} from active to completed (no-op ${spans.noopJob.mean});` +
        ` in it the claim ${spans.claim.mean}, the platform ${spans.platform.mean}, and the record:` +
        ` ${spans.record.count} statements of ${Math.round((jobs * rounds) / Math.max(1, spans.record.count))}` +
        ` outcomes on average, ${spans.record.mean} each`,
    )
  }
} finally {
  optOuts.close()
  for (const client of connections) client.disconnect()
  await closeDb()
  await world.drop()
}
