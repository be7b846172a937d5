/**
 * Flat at volume (issue 46): does the service cost the same per message after millions of messages
 * as on the first? The service's real entry points (`node apps/api/src/server.ts`, `node
 * apps/worker/src/main.ts`, every worker role, the sandbox platform), one of each kept up for the
 * whole run, on a database of the benchmark's own and a redis-server of its own on a free port (no
 * persistence), so Redis's memory and CPU are the run's alone.
 *
 * - Preload: SOAK_MESSAGES messages sent through the service and drained: the history (rows in
 *   Postgres, whatever Redis keeps of a sent message) the passes run on top of. Sending them is the
 *   only load that leaves exactly the rows and keys the service leaves; measured and printed as
 *   pass 0, not judged.
 * - Three passes, each: SOAK_MESSAGES texts accepted through `POST /messages/batch` (100 a request,
 *   SOAK_CONCURRENCY requests in flight, over SOAK_RECIPIENTS recipients), the worker delivering
 *   meanwhile, then waiting until every one is recorded `sent` in Postgres, then SOAK_DRAIN_WAIT_MS
 *   more before Redis's memory "after the drain" is read (by default the claims' window,
 *   MESSAGE_CLAIM_KEEP_MS, and 5 s: what Redis keeps of a drained message until then is documented).
 *
 * Per pass it prints: CPU per message of the API, the worker, Postgres (the backends serving the
 * database, and the server's own processes: postmaster, checkpointer, WAL writer…, which on a
 * shared Postgres also work for others) and Redis (INFO cpu), all from accept start to the last
 * row recorded; Redis `used_memory` before, at peak (sampled every SOAK_SAMPLE_MS) and after the
 * drain; Postgres bytes per message (`pg_database_size` delta / N), blocks per message read from
 * outside its buffers and found in them (`pg_stat_database`), and the updates of `messages` (and how
 * many were HOT); the API's and worker's resident memory (and V8 heap in use, from their /metrics)
 * at the end of the pass, after the drain wait, as found and after a full collection (through each
 * one's inspector, harness/inspector.ts), and their time in GC; accept and drain times. Then the
 * aims, recorded for `pnpm bench:table`: pass 3 CPU per message ≤ 1.1× pass 1 for each process,
 * Redis after each drain ≤ 1.05× before it, resident memory after a full collection at the end of
 * pass 3 ≤ 1.05× pass 1's (as found, it holds whatever garbage V8 has not collected yet: printed,
 * not judged); and what Redis holds at the end, by kind of key. Progress (accepted and sent counts,
 * Redis memory) every SOAK_PROGRESS_MS.
 *
 *   SOAK_MESSAGES=1000000 pnpm --filter @dispatch/bench bench:soak   (the full run; pnpm bench runs
 *   100,000) — SOAK_MESSAGES (1,000,000) SOAK_RECIPIENTS (100,000) SOAK_CONCURRENCY (4)
 *   SOAK_DRAIN_WAIT_MS (65,000) SOAK_SAMPLE_MS (500) SOAK_PROGRESS_MS (10,000) SOAK_PASSES (3)
 *   SOAK_CPU_PROFILE_DIR (unset): V8's CPU profile of the API and the worker over each pass, written
 *   there as `<api|worker>-<pass>.cpuprofile` (the profiler's cost is in that run's CPU figures).
 *   SOAK_API_NODE_OPTIONS (unset): more of Node's options for the API's process (a V8 heap setting, say).
 *   SOAK_APART (unset): `1` stops the worker (SIGSTOP, between passes, when it holds nothing) while
 *   the API accepts, and lets it go once all are accepted: each process's CPU per message is then
 *   its own, not what it costs beside the others on the same cores (the aims read the same way).
 *   SOAK_PLATFORM_INDEX (hash): `text` undoes migration 0040 in the run's database, the platform id
 *   itself indexed instead of its hash, to compare the two; each pass prints the index's growth.
 */
import { randomBytes } from 'node:crypto'
import { mkdir, writeFile } from 'node:fs/promises'
import { loadavg } from 'node:os'
import { setTimeout as sleep } from 'node:timers/promises'
import { createDb } from '@dispatch/db'
import { MESSAGE_CLAIM_KEEP_MS } from '@dispatch/runtime/message-handoff'
import { freePort } from '@dispatch/testing'
import { Redis } from 'ioredis'
import { exitCleanups } from '../harness/cleanups.ts'
import {
  backendsCpuDelta,
  databaseBackendsCpu,
  machineBusySeconds,
  residentBytes,
  serverProcessesCpu,
} from '../harness/cpu.ts'
import {
  type CollectedMemory,
  inspectorOptions,
  memoryAfterCollection,
  openInspector,
  startCpuProfile,
} from '../harness/inspector.ts'
import { type ServiceProcess, startApiProcess, startWorkerProcess } from '../harness/processes.ts'
import { commandCounts, redisCpuSeconds, startRedisServer } from '../harness/redis-server.ts'
import { printComparison, printFigure } from '../harness/report.ts'
import { percentile } from '../harness/stats.ts'
import { createBenchWorld } from '../harness/world.ts'

const intEnv = (name: string, fallback: number) => {
  const value = Number(process.env[name] ?? fallback)
  if (!Number.isInteger(value) || value < 0)
    throw new Error(`${name} must be a whole number, got ${process.env[name]}`)
  return value
}
const messages = intEnv('SOAK_MESSAGES', 1_000_000)
const recipients = Math.max(1, intEnv('SOAK_RECIPIENTS', 100_000))
const concurrency = Math.max(1, intEnv('SOAK_CONCURRENCY', 4))
/**
 * A drained message's claim stays MESSAGE_CLAIM_KEEP_MS after its outcome is recorded
 * (message-claims.ts): Redis is read "after the drain" once that window has passed, and 5 s more.
 */
const drainWaitMs = intEnv('SOAK_DRAIN_WAIT_MS', MESSAGE_CLAIM_KEEP_MS + 5_000)
const sampleMs = Math.max(50, intEnv('SOAK_SAMPLE_MS', 500))
const progressMs = intEnv('SOAK_PROGRESS_MS', 10_000)
const passes = Math.max(2, intEnv('SOAK_PASSES', 3))
const profileDir = process.env.SOAK_CPU_PROFILE_DIR
/** The worker stopped while the API accepts (SOAK_APART=1): each process measured on its own. */
const apart = process.env.SOAK_APART === '1'
/** `text`: 0040 undone, the platform id itself indexed instead of its hash (to compare the two). */
const platformIndex = process.env.SOAK_PLATFORM_INDEX === 'text' ? 'text' : 'hash'
/** The machine's probe (`probeMicros`): 20,000 doubles, the same every time, sorted. */
const PROBE_INPUT = Float64Array.from({ length: 20_000 }, (_, i) => Math.sin(i * 7919))
/** The memory probe (`chaseMicros`): one random cycle through 64 MB, far past the caches (Sattolo). */
const CHASE = (() => {
  const next = Int32Array.from({ length: 16 * 2 ** 20 }, (_, i) => i)
  let seed = 7919
  for (let i = next.length - 1; i > 0; i--) {
    seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0
    const j = seed % i
    const swap = next[i] as number
    next[i] = next[j] as number
    next[j] = swap
  }
  return next
})()
let chaseAt = 0
/** The work probe (`jsonMicros`): a batch request's body like the soak's, written and read back. */
const JSON_INPUT = {
  messages: Array.from({ length: 100 }, (_, i) => ({
    phone: `+55119${String(10_000_000 + i).padStart(8, '0')}`,
    text: `Soak message ${i}: your order is on its way`,
  })),
}
const PLATFORM_INDEX = {
  hash: 'messages_platform_message_id_hash_idx',
  text: 'messages_platform_message_id_idx',
}[platformIndex]
const batchSize = 100
/** A pass whose sent count does not move for this long has failed (a worker that cannot reach Redis logs why). */
const stuckMs = 120_000

// Everything started is stopped, in reverse, on the way out: normally, on an error, or on Ctrl-C.
const { cleanups, cleanUp } = exitCleanups()

const int = (n: number) => Math.round(n).toLocaleString('en-US')
const mb = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MB`
const secs = (ms: number) => `${(ms / 1000).toFixed(1)} s`
const load = () =>
  `load average ${loadavg()
    .map((n) => n.toFixed(1))
    .join(' ')}`

/** V8's heap in use of a service, from its /metrics (prom-client's default metrics); NaN without. */
const heapUsed = async (url: string) => {
  const res = await fetch(url).catch(() => undefined)
  if (res?.status !== 200) return Number.NaN
  return counterSum(await res.text(), 'nodejs_heap_size_used_bytes')
}

/** V8's time in garbage collection so far, every kind, of a service (its /metrics); NaN without. */
const gcSeconds = async (url: string) => {
  const res = await fetch(url).catch(() => undefined)
  if (res?.status !== 200) return Number.NaN
  return counterSum(await res.text(), 'nodejs_gc_duration_seconds_sum')
}

/** Sums a counter's samples (every label set) in a Prometheus text exposition. */
const counterSum = (text: string, name: string) => {
  let sum = 0
  for (const match of text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? ([\\d.e+]+)$`, 'gm')))
    sum += Number(match[1])
  return sum
}

interface Snapshot {
  at: number
  api: number
  worker: number
  /** V8's time in garbage collection so far (prom-client's `nodejs_gc_duration_seconds_sum`). */
  gc: { api: number; worker: number }
  /** The database's blocks read (not in Postgres' buffers) and found there, so far. */
  blocks: { read: number; hit: number }
  /**
   * Updates of `messages`' partitions so far, those of them that were HOT, and the autovacuum and
   * autoanalyze runs on them (a pass's CPU per message rises with the runs that fall in it).
   */
  updates: { all: number; hot: number; vacuums: number; analyzes: number }
  /** The server's WAL so far (`pg_stat_wal`): bytes and full-page images; and its checkpoints. Every database's. */
  wal: { bytes: number; fpi: number; checkpoints: number }
  backends: Map<number, number>
  server: Map<number, number>
  redis: number
  machine: number
  /** This process's own CPU so far (the load: requests, sampling). */
  bench: number
}

interface Pass {
  name: string
  acceptMs: number
  drainMs: number
  /**
   * The API's CPU split where accepting ended: while it accepted, and after (its timers only, no
   * request: what a longer drain adds to the pass's figure without any message costing more).
   */
  apiSplit: { accepting: number; after: number }
  cpu: {
    api: number
    worker: number
    backends: number
    server: number
    redis: number
    machine: number
    bench: number
  }
  gc: { api: number; worker: number }
  blocks: { read: number; hit: number }
  updates: { all: number; hot: number; vacuums: number; analyzes: number }
  wal: { bytes: number; fpi: number; checkpoints: number }
  /** Growth of the platform-id index (every partition's) over the pass. */
  platformIndexDelta: number
  /** The machine's speed over the pass: the fixed probe's tenth percentile (`probeMicros`), µs. */
  probeMicros: number
  /**
   * The machine over the pass as a busy service meets it: the median of each probe (the sort, the
   * memory chase, the JSON work), µs; a neighbour sharing the host's cores and caches raises them.
   */
  probeMedians: { sort: number; chase: number; json: number }
  seconds: number
  redisBefore: number
  redisPeak: number
  /** Messages accepted and not yet recorded sent when the peak was sampled. */
  inFlightAtPeak: number
  redisAfter: number
  /** `used_memory_dataset` and the clients' buffers, before and after the drain. */
  redisParts: { before: { dataset: number; clients: number }; after: { dataset: number; clients: number } }
  redisKeysBefore: number
  /**
   * Commands Redis ran over the pass (`INFO commandstats`, a script's own commands with it): the
   * same a message in every pass, since Redis holds nothing of the history. Its CPU a command is
   * then the machine's speed as a memory-bound server meets it.
   */
  redisCalls: number
  redisKeysAfter: number
  databaseDelta: number
  rss: { api: number; worker: number }
  /** V8's heap in use (prom-client's `nodejs_heap_size_used_bytes`), read with the resident memory. */
  heap: { api: number; worker: number }
  /** What each keeps once V8 has collected (two full collections, through the inspector), read after. */
  collected: { api: CollectedMemory; worker: CollectedMemory }
}

const world = await createBenchWorld('soak')
cleanups.push(() => world.drop())
const { sql, close: closeDb } = createDb(world.databaseUrl, { max: 1 })
cleanups.push(closeDb)
if (platformIndex === 'text') {
  // The lookups name the id too (platformIdIs), so they read this index as they did before 0040.
  await sql`drop index messages_platform_message_id_hash_idx`
  await sql`create index messages_platform_message_id_idx on messages (platform_message_id)
    where platform_message_id is not null`
}

try {
  const began = performance.now()
  const redisServer = await startRedisServer()
  cleanups.push(() => redisServer.stop())
  const redis = new Redis(redisServer.url, { maxRetriesPerRequest: 1 })
  cleanups.push(async () => redis.disconnect())
  const adminToken = randomBytes(24).toString('hex')
  const env = { DATABASE_URL: world.databaseUrl, QUEUE_PREFIX: world.queuePrefix, REDIS_URL: redisServer.url }
  // Each with its inspector's port set, opened before the preload: resident memory is also read
  // after a full collection (harness/inspector.ts), the only reading that says what a process keeps.
  const inspectorPorts = { api: await freePort(), worker: await freePort() }
  const api = await startApiProcess('api', {
    ...env,
    NODE_OPTIONS: [inspectorOptions(inspectorPorts.api), process.env.SOAK_API_NODE_OPTIONS ?? '']
      .join(' ')
      .trim(),
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
    ADMIN_TOKENS: `bench=${adminToken}`,
    // The key's limits stay in the path, set never to refuse: a pass stores N messages in seconds.
    MESSAGE_RATE_PER_SECOND: '1000000000',
    MESSAGE_OUTSTANDING_MAX: '1000000000',
  })
  const metricsPort = await freePort()
  const worker = await startWorkerProcess('worker', {
    ...env,
    NODE_OPTIONS: inspectorOptions(inspectorPorts.worker),
    PLATFORM: 'sandbox',
    // The default sender's rate (80/s) would be the figure: raised so the service is.
    PLATFORM_RATE_PER_SECOND: '1000000',
    METRICS_PORT: String(metricsPort),
  })
  const key = await approvedKey(api, adminToken)
  if (api.pid === undefined || worker.pid === undefined) throw new Error('a service has no process id')
  const pids = { api: api.pid, worker: worker.pid }
  await openInspector(pids.api, inspectorPorts.api)
  await openInspector(pids.worker, inspectorPorts.worker)
  const apiMetricsUrl = `${api.url}/metrics`
  const workerMetricsUrl = `http://127.0.0.1:${metricsPort}/metrics`

  const sentSoFar = async () => {
    // Asked again once on a dropped connection: a worker let go after SIGSTOP (SOAK_APART) first
    // closes the kept-alive sockets whose idle time ran out while it was stopped.
    const res = await fetch(workerMetricsUrl).catch(() => fetch(workerMetricsUrl))
    if (res.status !== 200) throw new Error(`worker /metrics answered ${res.status}`)
    return counterSum(await res.text(), 'dispatch_messages_sent_total')
  }
  const usedMemory = async () => Number(/^used_memory:(\d+)/m.exec(await redis.info('memory'))?.[1] ?? 0)
  const redisCalls = async () => [...(await commandCounts(redis)).values()].reduce((a, b) => a + b, 0)
  /** What `used_memory` holds beside the data: the keys' own (`used_memory_dataset`) and the clients' buffers. */
  const memoryParts = async () => {
    const info = await redis.info('memory')
    const field = (name: string) => Number(new RegExp(`^${name}:(\\d+)`, 'm').exec(info)?.[1] ?? 0)
    return { dataset: field('used_memory_dataset'), clients: field('mem_clients_normal') }
  }
  /** The platform-id index's bytes, every partition's. */
  const platformIndexSize = async () => {
    const [row] = await sql<{ bytes: string }[]>`
      select coalesce(sum(pg_relation_size(relid)), 0)::text as bytes
      from pg_partition_tree(${PLATFORM_INDEX}::regclass)`
    return Number(row?.bytes ?? 0)
  }
  const databaseSize = async () => {
    const [row] = await sql<{ bytes: string }[]>`select pg_database_size(current_database())::text as bytes`
    return Number(row?.bytes ?? 0)
  }
  /** Rows recorded sent for the key, accepted since `since`: a range of its status index. */
  const sentRows = async (since: Date) => {
    const [row] = await sql<{ n: number }[]>`
      select count(*)::int as n from messages
      where api_key_id = ${key.id}::uuid and status = 'sent' and accepted_at >= ${since.toISOString()}::timestamptz`
    return row?.n ?? 0
  }
  const blocks = async () => {
    const [row] = await sql<{ read: string; hit: string }[]>`
      select blks_read::text as read, blks_hit::text as hit from pg_stat_database where datname = current_database()`
    return { read: Number(row?.read ?? 0), hit: Number(row?.hit ?? 0) }
  }
  const updates = async () => {
    const [row] = await sql<{ all: string; hot: string; vacuums: string; analyzes: string }[]>`
      select coalesce(sum(n_tup_upd), 0)::text as all, coalesce(sum(n_tup_hot_upd), 0)::text as hot,
        coalesce(sum(autovacuum_count), 0)::text as vacuums, coalesce(sum(autoanalyze_count), 0)::text as analyzes
      from pg_stat_user_tables where relid in (select inhrelid from pg_inherits where inhparent = 'messages'::regclass)`
    return {
      all: Number(row?.all ?? 0),
      hot: Number(row?.hot ?? 0),
      vacuums: Number(row?.vacuums ?? 0),
      analyzes: Number(row?.analyzes ?? 0),
    }
  }
  const walSoFar = async () => {
    const [row] = await sql<{ bytes: string; fpi: string; checkpoints: string }[]>`
      select wal_bytes::text as bytes, wal_fpi::text as fpi,
        (select checkpoints_timed + checkpoints_req from pg_stat_bgwriter)::text as checkpoints
      from pg_stat_wal`
    return {
      bytes: Number(row?.bytes ?? 0),
      fpi: Number(row?.fpi ?? 0),
      checkpoints: Number(row?.checkpoints ?? 0),
    }
  }
  const snapshot = async (): Promise<Snapshot> => {
    const [
      apiCpu,
      workerCpu,
      backends,
      server,
      redisCpu,
      machine,
      apiGc,
      workerGc,
      blocksSoFar,
      updatesSoFar,
    ] = await Promise.all([
      api.cpuSeconds(),
      worker.cpuSeconds(),
      databaseBackendsCpu(sql),
      serverProcessesCpu(sql),
      redisCpuSeconds(redis),
      machineBusySeconds(),
      gcSeconds(apiMetricsUrl),
      gcSeconds(workerMetricsUrl),
      blocks(),
      updates(),
    ])
    const wal = await walSoFar()
    return {
      at: performance.now(),
      api: apiCpu,
      worker: workerCpu,
      gc: { api: apiGc, worker: workerGc },
      blocks: blocksSoFar,
      updates: updatesSoFar,
      wal,
      backends,
      server,
      redis: redisCpu,
      machine,
      bench: ownCpuSeconds(),
    }
  }

  console.log(
    `soak: ${int(messages)} messages of history, then ${passes} passes of ${int(messages)} texts each` +
      ` (batches of ${batchSize}, ${concurrency} in flight, over ${int(recipients)} recipients); one API, one worker` +
      ` (every role, sandbox); ${redisServer.version} of its own at ${redisServer.url}; database ${world.databaseUrl.replace(/^.*\//, '')};` +
      ` drain wait ${secs(drainWaitMs)}; platform-id index ${PLATFORM_INDEX};` +
      `${apart ? ' the worker stopped while the API accepts (SOAK_APART);' : ''} ${load()}`,
  )

  let sentBase = 0
  let phoneSeq = 0
  const results: Pass[] = []
  for (let p = 0; p <= passes; p++) {
    const name = p === 0 ? 'preload' : `pass ${p}`
    const since = new Date(Date.now() - 1000)
    const redisBefore = await usedMemory()
    const partsBefore = await memoryParts()
    const redisKeysBefore = await redis.dbsize()
    const callsBefore = await redisCalls()
    const dbBefore = await databaseSize()
    const platformIndexBefore = await platformIndexSize()
    const profiling = profileDir
      ? {
          api: await startCpuProfile(inspectorPorts.api),
          worker: await startCpuProfile(inspectorPorts.worker),
        }
      : undefined
    const before = await snapshot()
    const target = sentBase + messages

    // Accepting, while the worker delivers (or stopped, SOAK_APART): SOAK_CONCURRENCY batch requests
    // in flight. The worker is stopped only here, after the last pass's drain and wait: it holds no
    // job and no lock, so nothing of it lapses while it is stopped.
    if (apart) process.kill(pids.worker, 'SIGSTOP')
    let accepted = 0
    let next = 0
    let acceptedAt: number | undefined
    let apiAtAccepted: number | undefined
    const accepting = Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < messages) {
          const size = Math.min(batchSize, messages - next)
          next += size
          const items = Array.from({ length: size }, () => {
            const n = phoneSeq++
            return {
              type: 'text',
              phone: `+5511${900_000_000 + (n % recipients)}`,
              text: `Soak ${name}: your code is ${String(n % 1_000_000).padStart(6, '0')}`,
            }
          })
          const res = await fetch(`${api.url}/api/third-party/messages/batch`, {
            method: 'POST',
            headers: { 'x-api-key': key.key, 'content-type': 'application/json' },
            body: JSON.stringify({ messages: items }),
          })
          const text = await res.text()
          if (res.status !== 202) throw new Error(`batch answered ${res.status}: ${text}`)
          const body = JSON.parse(text) as { accepted: number; rejected: number }
          if (body.accepted !== size) throw new Error(`batch accepted ${body.accepted} of ${size}: ${text}`)
          accepted += size
        }
      }),
    ).then(async () => {
      acceptedAt = performance.now()
      apiAtAccepted = await api.cpuSeconds()
      if (apart) process.kill(pids.worker, 'SIGCONT')
    })
    let acceptError: unknown
    accepting.catch((error) => {
      acceptError = error
      if (apart) process.kill(pids.worker, 'SIGCONT')
    })

    // Sampling until the worker has counted every message sent, then until Postgres has every row.
    let peak = redisBefore
    let inFlightAtPeak = 0
    let sent = 0
    let lastProgress = before.at
    let moved = { sent: -1, at: before.at }
    const probes: number[] = []
    const chases: number[] = []
    const jsons: number[] = []
    for (;;) {
      if (acceptError) throw acceptError
      probes.push(probeMicros())
      chases.push(chaseMicros())
      jsons.push(jsonMicros())
      // A stopped worker (SOAK_APART) answers nothing until it is let go: its count is the last one.
      const stopped = apart && acceptedAt === undefined
      const [memory, counted] = await Promise.all([usedMemory(), stopped ? sentBase : sentSoFar()])
      sent = counted - sentBase
      if (memory > peak) {
        peak = memory
        inFlightAtPeak = accepted - sent
      }
      const now = performance.now()
      if (sent !== moved.sent) moved = { sent, at: now }
      // (A worker stopped while the API accepts sends nothing until it is let go.)
      else if (now - moved.at > stuckMs && !(apart && acceptedAt === undefined))
        throw new Error(`${name}: ${int(sent)}/${int(messages)} sent, none more for ${secs(stuckMs)}`)
      if (now - lastProgress >= progressMs) {
        lastProgress = now
        console.log(
          `  … ${name}, ${secs(now - before.at)}: accepted ${int(accepted)}/${int(messages)}, sent ${int(sent)}/${int(messages)},` +
            ` Redis used_memory ${mb(memory)}; ${load()}`,
        )
      }
      if (acceptedAt !== undefined && counted >= target) break
      await sleep(sampleMs)
    }
    for (;;) {
      const rows = await sentRows(since)
      if (rows >= messages) break
      if (performance.now() - moved.at > stuckMs)
        throw new Error(`${name}: ${int(rows)}/${int(messages)} rows recorded sent`)
      await sleep(Math.min(sampleMs, 200))
    }
    const after = await snapshot()
    if (profileDir && profiling) {
      await mkdir(profileDir, { recursive: true })
      for (const which of ['api', 'worker'] as const) {
        const file = `${profileDir}/${which}-${name.replace(' ', '')}.cpuprofile`
        await writeFile(file, JSON.stringify(await profiling[which]()))
      }
    }
    sentBase = target
    // The documented short window after the drain (the sent log's entries deleted once their rows
    // are committed, BullMQ's last bookkeeping), then what stays.
    await sleep(drainWaitMs)
    const rss = {
      api: (await residentBytes(api.pid)) ?? Number.NaN,
      worker: (await residentBytes(worker.pid)) ?? Number.NaN,
    }
    const heap = { api: await heapUsed(apiMetricsUrl), worker: await heapUsed(workerMetricsUrl) }
    const collected = {
      api: await memoryAfterCollection(pids.api, inspectorPorts.api),
      worker: await memoryAfterCollection(pids.worker, inspectorPorts.worker),
    }
    const redisAfter = await usedMemory()
    const partsAfter = await memoryParts()
    const redisKeysAfter = await redis.dbsize()
    const callsAfter = await redisCalls()
    const databaseDelta = (await databaseSize()) - dbBefore
    const platformIndexDelta = (await platformIndexSize()) - platformIndexBefore
    const pass: Pass = {
      name,
      acceptMs: (acceptedAt ?? after.at) - before.at,
      probeMicros: percentile(probes, 0.1),
      probeMedians: {
        sort: percentile(probes, 0.5),
        chase: percentile(chases, 0.5),
        json: percentile(jsons, 0.5),
      },
      drainMs: after.at - (acceptedAt ?? after.at),
      apiSplit: {
        accepting: (apiAtAccepted ?? after.api) - before.api,
        after: after.api - (apiAtAccepted ?? after.api),
      },
      seconds: (after.at - before.at) / 1000,
      cpu: {
        api: after.api - before.api,
        worker: after.worker - before.worker,
        backends: backendsCpuDelta(before.backends, after.backends),
        server: backendsCpuDelta(before.server, after.server),
        redis: after.redis - before.redis,
        machine: after.machine - before.machine,
        bench: after.bench - before.bench,
      },
      gc: { api: after.gc.api - before.gc.api, worker: after.gc.worker - before.gc.worker },
      blocks: { read: after.blocks.read - before.blocks.read, hit: after.blocks.hit - before.blocks.hit },
      updates: {
        all: after.updates.all - before.updates.all,
        hot: after.updates.hot - before.updates.hot,
        vacuums: after.updates.vacuums - before.updates.vacuums,
        analyzes: after.updates.analyzes - before.updates.analyzes,
      },
      wal: {
        bytes: after.wal.bytes - before.wal.bytes,
        fpi: after.wal.fpi - before.wal.fpi,
        checkpoints: after.wal.checkpoints - before.wal.checkpoints,
      },
      redisBefore,
      redisPeak: peak,
      inFlightAtPeak,
      redisAfter,
      redisParts: { before: partsBefore, after: partsAfter },
      redisKeysBefore,
      redisCalls: callsAfter - callsBefore,
      redisKeysAfter,
      databaseDelta,
      platformIndexDelta,
      rss,
      heap,
      collected,
    }
    results.push(pass)
    printPass(pass)
  }

  console.log(`\nsoak, per pass (µs of CPU per message; ${int(messages)} messages a pass):`)
  printTable(results)

  const first = results[1] as Pass
  const last = results[passes] as Pass
  const perMessage = (cpuSeconds: number) => (cpuSeconds * 1e6) / messages
  console.log(`\nsoak: the aims (pass ${passes} against pass 1, each drain against the Redis before it)`)
  const processes: Array<[string, (x: Pass) => number]> = [
    ['API', (x) => x.cpu.api],
    ['worker', (x) => x.cpu.worker],
    ['Postgres (backends + server)', (x) => x.cpu.backends + x.cpu.server],
    ['Redis', (x) => x.cpu.redis],
  ]
  for (const [label, pick] of processes) {
    printComparison({
      name: `${label} CPU per message, pass ${passes} vs pass 1 (${int(messages)} a pass, ${int(messages)} of history first)`,
      figure: perMessage(pick(last)),
      baseline: perMessage(pick(first)),
      unit: 'µs',
      better: 'lower',
      aim: '≤ 1.1',
    })
  }
  // Not an aim: how much slower the machine itself ran the same work (the CPU ratios above rise with it).
  console.log(
    `the machine's probe, pass ${passes} / pass 1: ${(last.probeMicros / Math.max(1, first.probeMicros)).toFixed(2)} ×` +
      ` (${int(last.probeMicros)} µs vs ${int(first.probeMicros)} µs for the same work)`,
  )
  // The probes' medians: the machine as the pass met it, neighbours included. The CPU ratios read
  // against the work probe's say what history added, apart from the machine's own drift.
  const drift = (which: keyof Pass['probeMedians']) =>
    last.probeMedians[which] / Math.max(1e-9, first.probeMedians[which])
  console.log(
    `the machine over the pass (probes' medians), pass ${passes} / pass 1: sort ${drift('sort').toFixed(2)} ×,` +
      ` memory chase ${drift('chase').toFixed(2)} ×, JSON work ${drift('json').toFixed(2)} ×`,
  )
  // Redis as the control: the same commands a message every pass, so its CPU a command is the
  // machine's speed as the service's own kind of work met it, in the same seconds.
  const redisDrift =
    last.cpu.redis / Math.max(1, last.redisCalls) / (first.cpu.redis / Math.max(1, first.redisCalls))
  console.log(
    `Redis, pass ${passes} / pass 1: ${(last.redisCalls / Math.max(1, first.redisCalls)).toFixed(3)} × the commands,` +
      ` ${redisDrift.toFixed(2)} × the CPU a command`,
  )
  // Each process's pass-3 ratio against each control (Redis, the control, not against itself).
  const controls = [
    ["Redis's CPU a command", redisDrift, processes.filter(([label]) => label !== 'Redis')],
    ["the machine's JSON work probe", drift('json'), processes],
  ] as const
  for (const [control, machine, measured] of controls) {
    for (const [label, pick] of measured) {
      printFigure({
        name: `${label} CPU per message, pass ${passes} / pass 1, against ${control}`,
        figure: pick(last) / pick(first) / machine,
        unit: '×',
        better: 'lower',
      })
    }
  }
  for (const pass of results.slice(1)) {
    // Judged on what Redis keeps: `used_memory` less its clients' buffers (`mem_clients_normal`),
    // which hold a connection's query or reply of the moment (0.2–0.5 MB as sampled, on a Redis of
    // 3.5 MB at rest), not data.
    const kept = (used: number, clients: number) => (used - clients) / 2 ** 20
    printComparison({
      name: `Redis used_memory less clients' buffers, after the drain vs before, ${pass.name} (${int(messages)} a pass)`,
      figure: kept(pass.redisAfter, pass.redisParts.after.clients),
      baseline: kept(pass.redisBefore, pass.redisParts.before.clients),
      unit: 'MB',
      better: 'lower',
      aim: '≤ 1.05',
    })
    console.log(
      `Redis used_memory as sampled (clients' buffers included), after the drain / before, ${pass.name}:` +
        ` ${(pass.redisAfter / pass.redisBefore).toFixed(2)} ×`,
    )
  }
  for (const which of ['api', 'worker'] as const) {
    const label = which === 'api' ? 'API' : 'worker'
    // Judged on what the process keeps once V8 has collected: as found, resident memory holds the
    // garbage of the pass's load until V8 next collects, which an idle process may not do for minutes.
    printComparison({
      name: `${label} resident memory after a full collection, end of pass ${passes} vs pass 1 (${int(messages)} a pass)`,
      figure: last.collected[which].rss / 2 ** 20,
      baseline: first.collected[which].rss / 2 ** 20,
      unit: 'MB',
      better: 'lower',
      aim: '≤ 1.05',
    })
    printFigure({
      name: `${label} resident memory as found after the drain, pass ${passes} / pass 1 (uncollected garbage included; ${int(messages)} a pass)`,
      figure: last.rss[which] / first.rss[which],
      unit: '×',
      better: 'lower',
    })
  }
  printFigure({
    name: `Postgres bytes per message (database size growth / messages), pass ${passes} (${int(messages)} a pass)`,
    figure: last.databaseDelta / messages,
    unit: 'B',
    better: 'lower',
  })
  printFigure({
    name: `Redis bytes kept per message after the drain, pass ${passes} (${int(messages)} a pass)`,
    figure: (last.redisAfter - last.redisBefore) / messages,
    unit: 'B',
    better: 'lower',
  })
  printFigure({
    name: `Redis bytes per in-flight message at the peak, pass ${passes} (${int(messages)} a pass)`,
    figure: last.inFlightAtPeak > 0 ? (last.redisPeak - last.redisBefore) / last.inFlightAtPeak : 0,
    unit: 'B',
    better: 'lower',
  })
  await describeRedisAtRest(redis)
  console.log(`soak: done in ${((performance.now() - began) / 1000).toFixed(0)} s`)
} finally {
  await cleanUp()
}

function printPass(pass: Pass) {
  const us = (cpuSeconds: number) => int((cpuSeconds * 1e6) / messages)
  const pct = (cpuSeconds: number) => Math.round((cpuSeconds / pass.seconds) * 100)
  console.log(
    `${pass.name}: accepted in ${secs(pass.acceptMs)} (${int((messages / pass.acceptMs) * 1000)} msg/s), all sent` +
      ` ${secs(pass.drainMs)} later (${int(messages / pass.seconds)} msg/s over the pass)\n` +
      `  CPU µs per message: API ${us(pass.cpu.api)}, worker ${us(pass.cpu.worker)}, Postgres backends` +
      ` ${us(pass.cpu.backends)} + server ${us(pass.cpu.server)}, Redis ${us(pass.cpu.redis)}; machine busy` +
      ` ${pct(pass.cpu.machine)} % of a core, ${pct(othersCpu(pass))} % by processes outside the run;` +
      ` the machine's probe ${int(pass.probeMicros)} µs (medians: sort ${int(pass.probeMedians.sort)}, memory chase` +
      ` ${int(pass.probeMedians.chase)}, JSON work ${int(pass.probeMedians.json)} µs)\n` +
      `  API: ${us(pass.apiSplit.accepting)} µs per message while accepting, then` +
      ` ${int((pass.apiSplit.after * 1e6) / Math.max(1, pass.drainMs / 1000))} µs a second for ${secs(pass.drainMs)} after\n` +
      `  Redis: ${(pass.redisCalls / messages).toFixed(2)} commands a message, ${((pass.cpu.redis * 1e6) / Math.max(1, pass.redisCalls)).toFixed(2)} µs of CPU a command\n` +
      `  Redis used_memory: before ${mb(pass.redisBefore)}, peak ${mb(pass.redisPeak)} (${int(pass.inFlightAtPeak)} in flight),` +
      ` after the drain ${mb(pass.redisAfter)} (${int((pass.redisAfter - pass.redisBefore) / messages)} B per message kept;` +
      ` keys ${int(pass.redisKeysBefore)} → ${int(pass.redisKeysAfter)}; the keys' own memory (used_memory_dataset)` +
      ` ${mb(pass.redisParts.before.dataset)} → ${mb(pass.redisParts.after.dataset)}, clients' buffers` +
      ` ${mb(pass.redisParts.before.clients)} → ${mb(pass.redisParts.after.clients)})\n` +
      `  Postgres: +${mb(pass.databaseDelta)} (${int(pass.databaseDelta / messages)} B per message;` +
      ` ${PLATFORM_INDEX} +${int(pass.platformIndexDelta / messages)} B);` +
      ` resident memory after the drain: API ${mb(pass.rss.api)} (V8 heap in use ${mb(pass.heap.api)}),` +
      ` worker ${mb(pass.rss.worker)} (heap ${mb(pass.heap.worker)})\n` +
      `  after a full collection: API ${collectedText(pass.collected.api)}, worker ${collectedText(pass.collected.worker)}\n` +
      `  GC: API ${secs(pass.gc.api * 1000)}, worker ${secs(pass.gc.worker * 1000)}; Postgres blocks per message: read` +
      ` ${(pass.blocks.read / messages).toFixed(2)}, found in its buffers ${(pass.blocks.hit / messages).toFixed(1)};` +
      ` updates of messages ${int(pass.updates.all)} (HOT ${int(pass.updates.hot)});` +
      ` the server's WAL ${int(pass.wal.bytes / messages)} B per message, full-page images` +
      ` ${(pass.wal.fpi / messages).toFixed(2)} (every database's: on a shared server, others' too)\n` +
      `  maintenance during the pass: autovacuum ${pass.updates.vacuums} and autoanalyze ${pass.updates.analyzes}` +
      ` run(s) on messages' partitions, ${pass.wal.checkpoints} checkpoint(s) (the server's)`,
  )
}

function ownCpuSeconds() {
  const { user, system } = process.cpuUsage()
  return (user + system) / 1e6
}

/**
 * The machine's busy CPU that none of the run's processes used (the load, the services, their
 * Postgres backends and Redis): neighbours on a shared machine. Every process's CPU per message
 * rises with it (caches, fewer requests gathered per turn): read the passes' ratios beside it.
 */
/**
 * The machine's speed, apart from the service: how long one fixed piece of work takes here, sampled
 * with Redis' memory through each pass (about 1.5 ms each). A pass whose probe takes longer ran on a
 * slower machine (a neighbour's cache, the host's load: what `/proc` inside this VM cannot see), and
 * every process's CPU per message rises with it, history or not. Wall time, since the kernel here
 * counts a thread's CPU in whole ticks; a pass reads its tenth percentile (the probes no other
 * process preempted), which moved under 1 % between runs at a load average of 9.
 */
function probeMicros(): number {
  const started = performance.now()
  PROBE_INPUT.slice().sort()
  return (performance.now() - started) * 1000
}

/** 10,000 steps of the random cycle through 64 MB: each a read from memory, as a large heap's are. */
function chaseMicros(): number {
  const started = performance.now()
  let at = chaseAt
  for (let i = 0; i < 10_000; i++) at = CHASE[at] as number
  chaseAt = at
  return (performance.now() - started) * 1000
}

/** A batch body written and read back thirty times: allocation, strings and the young generation's GC. */
function jsonMicros(): number {
  const started = performance.now()
  let length = 0
  for (let i = 0; i < 30; i++)
    length += (JSON.parse(JSON.stringify(JSON_INPUT)) as typeof JSON_INPUT).messages.length
  if (length !== 3_000) throw new Error('the JSON probe lost messages')
  return (performance.now() - started) * 1000
}

function othersCpu(pass: Pass) {
  const { api, worker, backends, server, redis, machine, bench } = pass.cpu
  return Math.max(0, machine - api - worker - backends - server - redis - bench)
}

function collectedText(memory: CollectedMemory) {
  return `${mb(memory.rss)} (heap ${mb(memory.heapUsed)} of ${mb(memory.heapTotal)}, external ${mb(memory.external)})`
}

function printTable(rows: Pass[]) {
  const us = (cpuSeconds: number) => ((cpuSeconds * 1e6) / messages).toFixed(1)
  const table = [
    [
      'pass',
      'API',
      'worker',
      'PG back',
      'PG server',
      'Redis',
      'Redis before',
      'peak',
      'after',
      'PG B/msg',
      'RSS API',
      'heap API',
      'RSS worker',
      'heap worker',
      'kept API',
      'kept worker',
      'GC API',
      'PG blk read',
      'others %',
      'WAL B',
      'FPI',
      'accept',
      'drain',
      'probe µs',
    ],
    ...rows.map((r) => [
      r.name,
      us(r.cpu.api),
      us(r.cpu.worker),
      us(r.cpu.backends),
      us(r.cpu.server),
      us(r.cpu.redis),
      mb(r.redisBefore),
      mb(r.redisPeak),
      mb(r.redisAfter),
      int(r.databaseDelta / messages),
      mb(r.rss.api),
      mb(r.heap.api),
      mb(r.rss.worker),
      mb(r.heap.worker),
      mb(r.collected.api.rss),
      mb(r.collected.worker.rss),
      secs(r.gc.api * 1000),
      (r.blocks.read / messages).toFixed(2),
      String(Math.round((othersCpu(r) / r.seconds) * 100)),
      int(r.wal.bytes / messages),
      (r.wal.fpi / messages).toFixed(2),
      secs(r.acceptMs),
      secs(r.drainMs),
      int(r.probeMicros),
    ]),
  ]
  const widths = table[0]?.map((_, i) => Math.max(...table.map((r) => r[i]?.length ?? 0))) ?? []
  for (const row of table)
    console.log(
      `  ${row.map((c, i) => (i ? c.padStart(widths[i] ?? 0) : c.padEnd(widths[i] ?? 0))).join('  ')}`,
    )
}

/**
 * What Redis holds at the end, by kind of key (ids and numbers folded): how many, and their memory
 * from `MEMORY USAGE` of up to 100 of each, scaled up. Says which keys a drain leaves behind.
 */
async function describeRedisAtRest(redis: Redis) {
  const kinds = new Map<string, { count: number; sampled: number; bytes: number }>()
  for await (const keys of redis.scanStream({ count: 1000 }) as AsyncIterable<string[]>) {
    for (const key of keys) {
      const kind = key
        .replace(/^bench_soak_[0-9a-f]+/, '<prefix>')
        .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi, '<id>')
        .replace(/\d+/g, '<n>')
      const entry = kinds.get(kind) ?? { count: 0, sampled: 0, bytes: 0 }
      entry.count++
      if (entry.sampled < 100) {
        entry.sampled++
        entry.bytes += Number((await redis.memory('USAGE', key)) ?? 0)
      }
      kinds.set(kind, entry)
    }
  }
  const sorted = [...kinds].map(([kind, k]) => ({
    kind,
    count: k.count,
    bytes: (k.bytes / k.sampled) * k.count,
  }))
  sorted.sort((a, b) => b.bytes - a.bytes)
  console.log('Redis at rest, by kind of key (MEMORY USAGE of up to 100 of each, scaled):')
  for (const k of sorted.slice(0, 12)) console.log(`  ${k.kind}: ${int(k.count)} keys, about ${mb(k.bytes)}`)
}

/** An approved key with the send scope, requested and approved through the API. */
async function approvedKey(api: ServiceProcess, adminToken: string): Promise<{ id: string; key: string }> {
  const requested = await fetch(`${api.url}/api/api-keys/request`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ clientName: 'Soak', email: 'bench@dispatch.test', scopes: ['send:free-text'] }),
  })
  if (requested.status !== 201 && requested.status !== 200)
    throw new Error(`key request answered ${requested.status}: ${await requested.text()}`)
  const { id, key } = (await requested.json()) as { id: string; key: string }
  const approved = await fetch(`${api.url}/api/admin/api-keys/${id}/approve`, {
    method: 'POST',
    headers: { authorization: `Bearer ${adminToken}` },
  })
  if (approved.status !== 200)
    throw new Error(`approve answered ${approved.status}: ${await approved.text()}`)
  return { id, key }
}
