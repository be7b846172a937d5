/**
 * Senders benchmark (issue 13): the real worker (`startWorker`, the `messages` role: a lane per
 * sender, the admitter, the delivery recorder) in this process, messages stored as the API stores
 * them (`MessageStore`: the sender's fair-admission lists), three parts, each printing its figures
 * beside a baseline from the same run and the aim:
 *
 * - isolation: two senders X and Y at BENCH_ISOLATION_RATE (500) msg/s each on the fake Cloud API.
 *   X's throughput over a backlog of BENCH_ISOLATION_SECONDS (4) of its rate, alone, versus while
 *   Y's number answers 130429 to every send and Y has a backlog; alternating rounds
 *   (BENCH_ISOLATION_ROUNDS, 3), medians compared. Aim ≥ 0.9×.
 * - fairness: one sender at BENCH_FAIR_RATE (200) msg/s; key A has BENCH_FAIR_BACKLOG (20,000)
 *   waiting, key B sends BENCH_FAIR_B_RATE (5) msg/s for BENCH_FAIR_SECONDS (15; the issue says 30);
 *   B's p99 from stored to accepted by the fake. Baseline: plain FIFO, the same messages added
 *   straight into the sender's BullMQ queue as the service did before fair admission, delivered by
 *   the same worker. A run ends when B's last message is sent or BENCH_FAIR_GRACE_S (10) after B
 *   stopped; an unsent message counts until then (a lower bound), and the jobs still ahead of it
 *   in the queue give an estimate. Aim: p99 ≤ 2 s, and ≥ 20× better than FIFO.
 * - scale: the same BENCH_SCALE_MESSAGES (5,000) spread evenly over 1, 10 and 100 senders
 *   (BENCH_SCALE_SENDERS) on the sandbox platform, rates far above the load, one worker process;
 *   messages per second from the first stored to the last recorded `sent`, each versus 1 sender,
 *   in two variants: each lane at the service's concurrency (`per-sender`: 100 senders run 100×
 *   the jobs at once), and BENCH_SCALE_IN_FLIGHT (200) shared out over the lanes (`same-total`: the
 *   cost of the lanes themselves). BENCH_SCALE_ROUNDS (2), the order alternating, medians. Also
 *   what each sender costs the process at rest: start time, Redis connections, idle CPU. Aim:
 *   100 senders ≥ 0.8× of 1.
 *
 *   pnpm --filter @dispatch/bench bench:senders    (BENCH_PARTS=isolation,fairness,scale)
 *
 * The worker's own settings pass through: ADMISSION_INTERVAL_MS, SENDER_QUEUE_WINDOW_MS,
 * MESSAGES_CONCURRENCY, MESSAGES_BUNDLE_SIZE; LOG_LEVEL (warn) sets its level, and its lines are
 * counted, not printed.
 */
import { readdir, readFile, readlink } from 'node:fs/promises'
import { setTimeout as sleep } from 'node:timers/promises'
import { DEFAULT_SENDER_ID, type MessageJob, senderQueueName } from '@dispatch/contracts'
import { createDb } from '@dispatch/db'
import { bullQueueKeys, createSecretBox, lastFour } from '@dispatch/runtime'
import { MESSAGE_JOB_OPTIONS } from '@dispatch/runtime/message-handoff'
import { type CloudApiRequest, graphError, startFakeWhatsApp, waitFor } from '@dispatch/testing'
import { createWorkerLogger, parseWorkerConfig, type RunningWorker, startWorker } from '@dispatch/worker'
import { Queue } from 'bullmq'
import { Redis } from 'ioredis'
import { MessageStore } from '../../../../apps/api/src/sending/message-store.ts'
import { textJob } from '../harness/jobs.ts'
import { insertBenchKey } from '../harness/keys.ts'
import { printComparison } from '../harness/report.ts'
import { median, percentile } from '../harness/stats.ts'
import { clearFairAdmission, createBenchWorld } from '../harness/world.ts'

const num = (name: string, fallback: number) => Number(process.env[name] ?? fallback)
const parts = new Set((process.env.BENCH_PARTS ?? 'isolation,fairness,scale').split(','))

const world = await createBenchWorld('senders')
const { db, sql, close: closeDb } = createDb(world.databaseUrl)
const redis = new Redis(world.redisUrl, { maxRetriesPerRequest: null })
const store = new MessageStore(redis, { QUEUE_PREFIX: world.queuePrefix, REDIS_CLUSTER: false })
const box = createSecretBox({ APP_ENV: 'development' })

/** The worker's log lines, formatted as in service and counted by level instead of printed. */
const logged = new Map<string, number>()
const logStream = {
  write(line: string) {
    const { level, msg } = JSON.parse(line) as { level: number; msg?: string }
    const what = `${level >= 50 ? 'error' : level >= 40 ? 'warn' : 'info'}: ${msg ?? line}`
    logged.set(what, (logged.get(what) ?? 0) + 1)
  },
}

/** The real worker, `messages` role only, on the benchmark's database and prefix. */
function startBenchWorker(env: Record<string, string>): Promise<RunningWorker> {
  const passed = [
    'ADMISSION_INTERVAL_MS',
    'SENDER_QUEUE_WINDOW_MS',
    'MESSAGES_CONCURRENCY',
    'MESSAGES_BUNDLE_SIZE',
  ].flatMap((name) => (process.env[name] ? [[name, process.env[name]]] : []))
  const config = parseWorkerConfig({
    DATABASE_URL: world.databaseUrl,
    REDIS_URL: world.redisUrl,
    QUEUE_PREFIX: world.queuePrefix,
    WORKER_QUEUES: 'messages',
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
    SHUTDOWN_GRACE_MS: '10000',
    ...Object.fromEntries(passed),
    ...env,
  })
  return startWorker(config, createWorkerLogger(config, logStream))
}

/** A sender row as the admin API writes it (token sealed), without the API. */
async function insertSender(id: string, phoneNumberId: string, ratePerSecond: number, token?: string) {
  await sql`
    insert into senders (id, phone_number_id, display_name, access_token_ciphertext, access_token_last4, rate_per_second)
    values (${id}, ${phoneNumberId}, ${`Bench ${id}`}, ${token ? box.seal(token) : null},
            ${token ? lastFour(token) : null}, ${ratePerSecond})`
}

const newKey = async (clientName: string) => (await insertBenchKey(db, clientName)).id

/** Stores jobs as the API does, 1,000 per turn of the event loop (the store pipelines a turn's adds). */
async function storeAll(jobs: MessageJob[]) {
  for (let i = 0; i < jobs.length; i += 1000)
    await Promise.all(jobs.slice(i, i + 1000).map((j) => store.add(j)))
}

type Check = () => boolean | Promise<boolean>

/** Polls `done` every `everyMs`; answers whether it came true within `timeoutMs`. */
async function waitUntil(done: Check, timeoutMs: number, everyMs = 20): Promise<boolean> {
  const deadline = performance.now() + timeoutMs
  while (!(await done())) {
    if (performance.now() > deadline) return false
    await sleep(everyMs)
  }
  return true
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`
const phoneOf = (request: CloudApiRequest) => request.path.split('/').at(-2) ?? ''

/** Every send the fake accepted goes to the part running, with when (this process's clock). */
let onSent: (request: CloudApiRequest, at: number) => void = () => {}
const fake =
  parts.has('isolation') || parts.has('fairness')
    ? await startFakeWhatsApp({
        latencyMs: num('BENCH_FAKE_LATENCY_MS', 3),
        onAccepted: (request) => onSent(request, performance.now()),
      })
    : undefined

// ---------------------------------------------------------------------------------------------
// a. Isolation: X's throughput alone vs while Y is answered 130429.

async function isolation(platform: NonNullable<typeof fake>) {
  const rate = num('BENCH_ISOLATION_RATE', 500)
  const windowS = num('BENCH_ISOLATION_SECONDS', 4)
  const rounds = num('BENCH_ISOLATION_ROUNDS', 3)
  const yBacklog = num('BENCH_ISOLATION_Y_BACKLOG', rate * 2)
  const x = { id: 'bench-x', phone: '300000000000001', token: 'EAAG-bench-sender-x-token' }
  const y = { id: 'bench-y', phone: '300000000000002', token: 'EAAG-bench-sender-y-token' }
  for (const s of [x, y]) {
    await insertSender(s.id, s.phone, rate, s.token)
    platform.number(s.phone, { token: s.token })
  }
  const key = await newKey('Bench isolation')
  const backlog = rate * windowS + 1
  console.log(
    `isolation: senders X and Y at ${rate} msg/s each, fake Cloud API (${platform.latencyMs} ms), one worker;` +
      ` X's time to send ${backlog} messages (${windowS} s of its rate), alone vs while every send of Y` +
      ` is answered 130429 and Y has ${yBacklog} waiting; ${rounds} alternating rounds`,
  )
  const worker = await startBenchWorker({
    WHATSAPP_API_URL: platform.url,
    WHATSAPP_ACCESS_TOKEN: 'EAAG-bench-default-token',
    WHATSAPP_PHONE_NUMBER_ID: '300000000000000',
    WORKER_SENDERS: `${x.id},${y.id}`,
  })
  let xTimes: number[] = []
  let ySent = 0
  onSent = (request, at) => {
    const phone = phoneOf(request)
    if (phone === x.phone) xTimes.push(at)
    else if (phone === y.phone) ySent++
  }
  const yRequests = (from: number, to = platform.requests.length) =>
    platform.requests.slice(from, to).filter((r) => phoneOf(r) === y.phone).length

  /**
   * X's messages per second: from its backlog stored (every message in Redis) to its last send,
   * `(backlog - 1) / elapsed`, admission and every wait included. Admission paces X: one window of
   * its rate (SENDER_QUEUE_WINDOW_MS, 500 ms) at once from a full bucket, then `rate` a second.
   */
  const measureX = async () => {
    // X's pace refills in one window: every round starts from a full bucket.
    await sleep(600)
    xTimes = []
    await storeAll(Array.from({ length: backlog }, () => textJob(key, x.id)))
    const stored = performance.now()
    await waitFor(() => xTimes.length >= backlog, {
      timeoutMs: (windowS * 4 + 30) * 1000,
      what: "X's backlog to be sent",
    })
    // How evenly X went: how long each successive `rate` of its sends took (1,000 ms at its pace).
    const bursts = Array.from(
      { length: windowS },
      (_, k) => (xTimes[(k + 1) * rate - 1] ?? 0) - (xTimes[k * rate] ?? 0),
    )
    return {
      perSecond: ((backlog - 1) * 1000) / ((xTimes.at(-1) ?? 0) - stored),
      burstMs: median(bursts),
    }
  }
  const describeX = (m: { burstMs: number }) => `each ${rate} sent in ${Math.round(m.burstMs)} ms`
  const alone = async () => {
    const measured = await measureX()
    return { ...measured, note: describeX(measured) }
  }
  const limited = async () => {
    platform.number(y.phone, { answer: graphError(130429, '(#130429) Rate limit hit') })
    ySent = 0
    const from = platform.requests.length
    await storeAll(Array.from({ length: yBacklog }, () => textJob(key, y.id)))
    await waitFor(() => yRequests(from) > 0, { timeoutMs: 10_000, what: "Y's first send (to be refused)" })
    const windowFrom = platform.requests.length
    const began = performance.now()
    const measured = await measureX()
    const refused = yRequests(windowFrom)
    const ms = performance.now() - began
    if (ySent > 0) throw new Error(`Y had ${ySent} messages accepted while its number answered 130429`)
    // Y's number recovers; its backlog drains before the next round, so X is alone again then.
    platform.number(y.phone, { answer: undefined })
    await waitFor(() => ySent >= yBacklog, {
      timeoutMs: (yBacklog / rate + 30) * 1000,
      what: "Y's backlog to drain",
    })
    return {
      ...measured,
      note: `${describeX(measured)}; Y refused ${refused} times in it, ${Math.round((refused * 1000) / ms)}/s`,
    }
  }

  const results = { alone: [] as number[], limited: [] as number[] }
  try {
    // Warm-up, not measured: connections to the fake opened, code compiled.
    await measureX()
    for (let round = 1; round <= rounds; round++) {
      platform.requests.length = 0
      const order = round % 2 === 1 ? (['alone', 'limited'] as const) : (['limited', 'alone'] as const)
      const line: string[] = []
      for (const side of order) {
        const measured = side === 'alone' ? await alone() : await limited()
        results[side].push(measured.perSecond)
        line.push(
          `${side === 'alone' ? 'X alone' : 'X with Y at 130429'} ${Math.round(measured.perSecond)} msg/s (${measured.note})`,
        )
      }
      console.log(`  round ${round}/${rounds}: ${line.join('; ')}`)
    }
  } finally {
    await worker.close()
    onSent = () => {}
  }
  console.log(`  X alone ran at ${(median(results.alone) / rate).toFixed(3)} of its rate (${rate} msg/s)`)
  printComparison({
    name: "sender X's throughput while Y is rate-limited (130429) vs X alone",
    figure: median(results.limited),
    baseline: median(results.alone),
    unit: 'msg/s',
    better: 'higher',
    aim: '≥ 0.9',
  })
}

// ---------------------------------------------------------------------------------------------
// b. Fairness: key B's wait behind key A's backlog, fair admission vs plain FIFO.

async function fairness(platform: NonNullable<typeof fake>) {
  const rate = num('BENCH_FAIR_RATE', 200)
  const backlogA = num('BENCH_FAIR_BACKLOG', 20_000)
  const bRate = num('BENCH_FAIR_B_RATE', 5)
  const bSeconds = num('BENCH_FAIR_SECONDS', 15)
  const graceS = num('BENCH_FAIR_GRACE_S', 10)
  const warmupS = num('BENCH_FAIR_WARMUP_S', 2)
  const rounds = num('BENCH_FAIR_ROUNDS', 1)
  const phone = '400000000000000'
  const token = 'EAAG-bench-fairness-token'
  const [keyA, keyB] = [await newKey('Bench key A'), await newKey('Bench key B')]
  const queueName = senderQueueName(DEFAULT_SENDER_ID)
  const queue = new Queue<MessageJob>(queueName, { connection: redis, prefix: world.queuePrefix })
  const queueKeys = bullQueueKeys({ QUEUE_PREFIX: world.queuePrefix, REDIS_CLUSTER: false }, queueName)
  const bCount = Math.round(bRate * bSeconds)
  console.log(
    `fairness: one sender at ${rate} msg/s, fake Cloud API (${platform.latencyMs} ms); key A has ${backlogA}` +
      ` waiting, then key B sends ${bRate} msg/s for ${bSeconds} s (${bCount} messages), after ${warmupS} s;` +
      ` a run ends when B's last is sent or ${graceS} s after B stops; fair admission vs plain FIFO` +
      ` (the same jobs added straight into the sender's BullMQ queue), same worker; ${rounds} round(s)`,
  )

  /** Jobs ahead of a job in the sender's queue (BullMQ takes the wait list's right end first). */
  const jobsAhead = async (id: string): Promise<number | undefined> => {
    const length = await redis.llen(queueKeys.wait)
    const index = await redis.lpos(queueKeys.wait, id)
    if (index !== null) return length - 1 - index
    const rank = await redis.zrank(queueKeys.prioritized, id)
    return rank === null ? undefined : length + rank
  }

  async function run(mode: 'fair' | 'fifo') {
    const worker = await startBenchWorker({
      WHATSAPP_API_URL: platform.url,
      WHATSAPP_ACCESS_TOKEN: token,
      WHATSAPP_PHONE_NUMBER_ID: phone,
      PLATFORM_RATE_PER_SECOND: String(rate),
      WORKER_SENDERS: DEFAULT_SENDER_ID,
    })
    const bIds = new Set<string>()
    const stored = new Map<string, number>()
    const sent = new Map<string, number>()
    const sendTimes: number[] = []
    onSent = (request, at) => {
      if (phoneOf(request) !== phone) return
      sendTimes.push(at)
      if (request.messageId && bIds.has(request.messageId)) sent.set(request.messageId, at)
    }
    // Plain FIFO at the sender's rate too, as BullMQ keeps a queue's rate: its global limiter
    // (admission keeps the rate of the fair side; the lane sets no limiter of its own).
    if (mode === 'fifo') await queue.setGlobalRateLimit(rate, 1000)
    else await queue.removeGlobalRateLimit()
    const add = async (jobs: MessageJob[]) => {
      if (mode === 'fair') return storeAll(jobs)
      // As the service added them before fair admission: one job per message, its id the job id.
      for (let i = 0; i < jobs.length; i += 1000) {
        await queue.addBulk(
          jobs.slice(i, i + 1000).map((data) => ({
            name: data.message.type,
            data,
            opts: { ...MESSAGE_JOB_OPTIONS, jobId: data.messageId },
          })),
        )
      }
    }
    try {
      await add(Array.from({ length: backlogA }, () => textJob(keyA, DEFAULT_SENDER_ID)))
      await sleep(warmupS * 1000)
      const began = performance.now()
      const adds: Promise<void>[] = []
      for (let i = 0; i < bCount; i++) {
        await sleep(Math.max(0, began + (i * 1000) / bRate - performance.now()))
        const job = textJob(keyB, DEFAULT_SENDER_ID)
        bIds.add(job.messageId)
        adds.push(add([job]).then(() => void stored.set(job.messageId, performance.now())))
      }
      await Promise.all(adds)
      const stopped = performance.now()
      await waitUntil(() => sent.size === bIds.size, graceS * 1000)
      const end = performance.now()
      const waits: number[] = []
      const estimates: number[] = []
      for (const id of bIds) {
        const at = stored.get(id) ?? began
        const wait = (sent.get(id) ?? end) - at
        waits.push(wait)
        const ahead = sent.has(id) ? 0 : await jobsAhead(id)
        estimates.push(ahead === undefined ? wait : wait + (ahead * 1000) / rate)
      }
      // The sender's own rate meanwhile (± one admission window of its rate over the period).
      const during = sendTimes.filter((t) => t >= began && t <= stopped).length
      return {
        waits,
        estimates,
        unsent: bIds.size - sent.size,
        throughput: (during * 1000) / (stopped - began),
      }
    } finally {
      onSent = () => {}
      await worker.close()
      await queue.obliterate({ force: true })
      await clearFairAdmission(redis, world.queuePrefix)
      platform.requests.length = 0
    }
  }
  type Run = Awaited<ReturnType<typeof run>>
  const describe = (r: Run) => {
    const bound = r.unsent > 0 ? '≥ ' : ''
    const sentWord =
      r.unsent > 0
        ? `${bCount - r.unsent} of ${bCount} sent by the run's end, the others counted until then`
        : `all ${bCount} sent`
    const estimate =
      r.unsent > 0
        ? `; estimated from the jobs still ahead of each at the end: p99 ≈ ${seconds(percentile(r.estimates, 0.99))}`
        : ''
    return (
      `B accept→sent p50 ${bound}${seconds(percentile(r.waits, 0.5))}, p99 ${bound}${seconds(percentile(r.waits, 0.99))},` +
      ` max ${bound}${seconds(Math.max(...r.waits))} (${sentWord})${estimate}; the sender sent ${Math.round(r.throughput)} msg/s while B sent`
    )
  }

  const fair: Run[] = []
  const fifo: Run[] = []
  try {
    for (let round = 1; round <= rounds; round++) {
      const order = round % 2 === 1 ? (['fair', 'fifo'] as const) : (['fifo', 'fair'] as const)
      for (const mode of order) {
        const r = await run(mode)
        ;(mode === 'fair' ? fair : fifo).push(r)
        console.log(
          `  round ${round}/${rounds}, ${mode === 'fair' ? 'fair admission' : 'plain FIFO    '}: ${describe(r)}`,
        )
      }
    }
  } finally {
    await queue.close()
  }
  const p99 = (runs: Run[], of: 'waits' | 'estimates') => median(runs.map((r) => percentile(r[of], 0.99)))
  const fairP99 = p99(fair, 'waits')
  const lowerBound = fifo.some((r) => r.unsent > 0)
  const ratio = printComparison({
    name: `key B's accept-to-sent p99, fair admission vs plain FIFO${lowerBound ? ' (FIFO measured until the run ended: a lower bound)' : ''}`,
    figure: fairP99 / 1000,
    baseline: p99(fifo, 'waits') / 1000,
    unit: 's',
    better: 'lower',
    aim: 'p99 ≤ 2 s and ratio ≤ 0.05, that is ≥ 20× better',
  })
  console.log(
    `  fair p99 ${seconds(fairP99)} (${fairP99 <= 2000 ? 'within' : 'over'} 2 s); ${(1 / ratio).toFixed(1)}× better than FIFO` +
      `${lowerBound ? ' at least' : ''}` +
      (lowerBound
        ? `, about ${(p99(fifo, 'estimates') / fairP99).toFixed(0)}× against FIFO's estimated p99`
        : ''),
  )
}

// ---------------------------------------------------------------------------------------------
// c. Scale: delivery throughput with 1, 10 and 100 senders in one process.

/** This process's established connections to Redis, from /proc (undefined off Linux). */
async function redisConnections(): Promise<number | undefined> {
  try {
    const port = Number(new URL(world.redisUrl).port || 6379)
    const inodes = new Set<string>()
    for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
      const text = await readFile(file, 'utf8').catch(() => '')
      for (const line of text.split('\n').slice(1)) {
        const fields = line.trim().split(/\s+/)
        const remotePort = Number.parseInt(fields[2]?.split(':')[1] ?? '', 16)
        if (remotePort === port && fields[3] === '01' && fields[9]) inodes.add(fields[9])
      }
    }
    let count = 0
    for (const fd of await readdir('/proc/self/fd')) {
      const link = await readlink(`/proc/self/fd/${fd}`).catch(() => '')
      const inode = /^socket:\[(\d+)\]$/.exec(link)?.[1]
      if (inode && inodes.has(inode)) count++
    }
    return count
  } catch {
    return undefined
  }
}

async function scale() {
  const counts = (process.env.BENCH_SCALE_SENDERS ?? '1,10,100').split(',').map(Number)
  const total = num('BENCH_SCALE_MESSAGES', 5000)
  const rounds = num('BENCH_SCALE_ROUNDS', 2)
  const rate = num('BENCH_SCALE_RATE', 1000)
  const idleS = num('BENCH_SCALE_IDLE_S', 1)
  const inFlight = num('BENCH_SCALE_IN_FLIGHT', 200)
  const variants = (process.env.BENCH_SCALE_VARIANTS ?? 'per-sender,same-total').split(',')
  const ids = [DEFAULT_SENDER_ID]
  for (let i = 1; i < Math.max(...counts); i++) {
    const id = `scale-${String(i).padStart(3, '0')}`
    await insertSender(id, String(500_000_000_000_000 + i), rate)
    ids.push(id)
  }
  /** A run's messages recorded `sent`: a key of its own per run keeps this an index-only count. */
  const sentCount = async (key: string) => {
    const [row] = await sql<{ n: number }[]>`
      select count(*)::int as n from messages where api_key_id = ${key} and status = 'sent'`
    return row?.n ?? 0
  }
  const perSenderConcurrency = process.env.MESSAGES_CONCURRENCY ?? '20 (the default)'
  /** Each lane's concurrency: the service's per-sender setting, or `inFlight` shared out. */
  const concurrencyFor = (variant: string, n: number): Record<string, string> =>
    variant === 'same-total' ? { MESSAGES_CONCURRENCY: String(Math.max(1, Math.round(inFlight / n))) } : {}
  console.log(
    `scale: ${total} messages spread evenly over ${counts.join(', ')} senders (the default at` +
      ` PLATFORM_RATE_PER_SECOND 1,000,000, the others at ${rate} msg/s: no rate binds), sandbox platform,` +
      ` one worker process; each lane's concurrency ${perSenderConcurrency} (per-sender), or ${inFlight}` +
      ` shared out over the lanes (same-total); ${rounds} round(s), the order alternating`,
  )

  async function run(senders: string[], messages: number, env: Record<string, string>) {
    const connectionsBefore = await redisConnections()
    const startBegan = performance.now()
    const worker = await startBenchWorker({
      PLATFORM: 'sandbox',
      PLATFORM_RATE_PER_SECOND: '1000000',
      WORKER_SENDERS: senders.join(','),
      ...env,
    })
    const startMs = performance.now() - startBegan
    try {
      // At rest: every lane's Worker started and blocked on its queue.
      await sleep(500)
      const cpuBefore = process.cpuUsage()
      await sleep(idleS * 1000)
      const idle = process.cpuUsage(cpuBefore)
      const connectionsAfter = await redisConnections()
      const key = await newKey('Bench scale')
      const jobs = Array.from({ length: messages }, (_, i) => textJob(key, senders[i % senders.length] ?? ''))
      const began = performance.now()
      await storeAll(jobs)
      await waitFor(async () => (await sentCount(key)) >= messages, {
        timeoutMs: 300_000,
        intervalMs: 50,
        what: `${messages} messages to be sent`,
      })
      const perSecond = (messages * 1000) / (performance.now() - began)
      return {
        perSecond,
        startMs,
        idleCpu: (idle.user + idle.system) / 1000 / (idleS * 1000),
        connections:
          connectionsBefore === undefined || connectionsAfter === undefined
            ? undefined
            : connectionsAfter - connectionsBefore,
      }
    } finally {
      await worker.close()
    }
  }

  // Warm-up (JIT, scripts loaded), not measured.
  await run(ids.slice(0, counts[0] ?? 1), Math.min(total, 2000), {})
  const results = new Map<string, number[]>()
  for (let round = 1; round <= rounds; round++) {
    const order = round % 2 === 1 ? counts : [...counts].reverse()
    for (const variant of round % 2 === 1 ? variants : [...variants].reverse()) {
      for (const n of order) {
        const env = concurrencyFor(variant, n)
        const r = await run(ids.slice(0, n), total, env)
        results.set(`${variant} ${n}`, [...(results.get(`${variant} ${n}`) ?? []), r.perSecond])
        console.log(
          `  round ${round}/${rounds}, ${variant}, ${n} sender(s)` +
            `${env.MESSAGES_CONCURRENCY ? ` × concurrency ${env.MESSAGES_CONCURRENCY}` : ''}:` +
            ` ${Math.round(r.perSecond)} msg/s; at rest: started in ${Math.round(r.startMs)} ms,` +
            ` ${r.connections ?? 'n/a'} Redis connections, ${(r.idleCpu * 100).toFixed(1)} % of a core idle`,
        )
      }
    }
  }
  for (const variant of variants) {
    const one = median(results.get(`${variant} ${counts[0]}`) ?? [])
    for (const n of counts.slice(1)) {
      printComparison({
        name: `delivery throughput (${variant}), ${total} messages over ${n} senders vs over ${counts[0]}`,
        figure: median(results.get(`${variant} ${n}`) ?? []),
        baseline: one,
        unit: 'msg/s',
        better: 'higher',
        aim: n >= 100 ? '≥ 0.8' : undefined,
      })
    }
  }
}

try {
  if (fake && parts.has('isolation')) await isolation(fake)
  if (fake && parts.has('fairness')) await fairness(fake)
  if (parts.has('scale')) await scale()
  console.log(
    `worker log lines (level ${process.env.LOG_LEVEL ?? 'warn'} and up): ` +
      ([...logged].map(([what, n]) => `${n} × ${what}`).join('; ') || 'none'),
  )
} finally {
  await fake?.close()
  await store.close()
  redis.disconnect()
  await closeDb()
  await world.drop()
}
