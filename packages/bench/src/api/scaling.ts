/**
 * Horizontal scaling on one machine (issue 15), with the service's real entry points, each a
 * process of its own (`node apps/api/src/server.ts`, `node apps/worker/src/main.ts`):
 *
 * - accept: `send-text` throughput with 1 and 2 API processes (two autocannon processes of 50
 *   connections each in both cases: both on the one API, or one on each);
 * - delivery: messages recorded `sent` in Postgres per second by 1, 2 and 4 worker processes
 *   (`messages` role, sandbox platform) draining a backlog accepted through the API while the
 *   `messages` incident switch held delivery;
 * - the messages spread over BENCH_SENDERS (10) senders at 1,000/s each (the most a sender may
 *   have; their sum stays above every figure), a key bound to each, as a deployment with several
 *   numbers: on a cluster each sender's keys share a hash tag, so 10 senders spread over the shards;
 * - each against a Redis of the benchmark's own: one redis-server, and a 3-master Redis Cluster
 *   (REDIS_CLUSTER=true) unless redis-cli is missing.
 *
 * Configurations alternate within each round, medians over BENCH_ROUNDS; ratios against 1 API,
 * 1 worker and the single Redis of the same run. Every process's CPU is read meanwhile (/proc,
 * Redis INFO), so each figure says what bounds it. Ctrl-C stops every process and drops the
 * database.
 *
 *   pnpm --filter @dispatch/bench bench:scaling   (BENCH_PARTS=accept,delivery BENCH_REDIS=single,cluster
 *   BENCH_ROUNDS BENCH_DURATION_S BENCH_CONNECTIONS BENCH_MESSAGES BENCH_SENDERS BENCH_APIS=1,2
 *   BENCH_WORKERS=1,2,4: K processes, or KxC for K processes at MESSAGES_CONCURRENCY C)
 */
import { randomBytes } from 'node:crypto'
import { loadavg } from 'node:os'
import { SENDER_MAX_RATE } from '@dispatch/contracts'
import { createDb } from '@dispatch/db'
import { exitCleanups } from '../harness/cleanups.ts'
import { type ServiceProcess, startApiProcess } from '../harness/processes.ts'
import { clusterMissing, type RedisTarget, redisCluster, singleRedis } from '../harness/redis-targets.ts'
import { printComparison } from '../harness/report.ts'
import { median } from '../harness/stats.ts'
import { createBenchWorld } from '../harness/world.ts'
import {
  type AcceptRun,
  acceptRun,
  type DeliveryRun,
  deliveryRun,
  describeUsage,
  pct,
  type Shared,
  type Stack,
  type Usage,
} from './scaling-runs.ts'

const list = (value: string | undefined, fallback: string) => (value ?? fallback).split(',').filter(Boolean)
const parts = list(process.env.BENCH_PARTS, 'accept,delivery')
const rounds = Number(process.env.BENCH_ROUNDS ?? 3)
const seconds = Number(process.env.BENCH_DURATION_S ?? 5)
const connections = Number(process.env.BENCH_CONNECTIONS ?? 100)
const messages = Number(process.env.BENCH_MESSAGES ?? 10_000)
/** `K` worker processes at the service's concurrency, or `KxC` at MESSAGES_CONCURRENCY C each. */
const workerConfigs = list(process.env.BENCH_WORKERS, '1,2,4').map((spec) => {
  const [processes, each] = spec.split('x').map(Number)
  return { processes: processes ?? 1, concurrency: each }
})
const apiCounts = list(process.env.BENCH_APIS, '1,2').map(Number)
const redisKinds = list(process.env.BENCH_REDIS, 'single,cluster').filter((kind) => {
  const missing = kind === 'cluster' ? clusterMissing() : undefined
  if (missing) console.log(`Redis Cluster: skipped (${missing})`)
  return !missing
})
/** Senders the messages spread over (each its own queue, and on a cluster its own hash tag); 1: the default. */
const senderCount = Number(process.env.BENCH_SENDERS ?? 10)
const body = JSON.stringify({ phone: '+5511987654321', text: 'Your code is 123456' })
const workerEnv: Record<string, string> = {
  WORKER_QUEUES: 'messages',
  PLATFORM: 'sandbox',
  // The default sender's rate (80/s) would be the figure with BENCH_SENDERS=1: raised so the workers are.
  PLATFORM_RATE_PER_SECOND: '1000000',
}

// Everything started is stopped, in reverse, on the way out: normally, on an error, or on Ctrl-C.
const { cleanups, cleanUp } = exitCleanups()

const world = await createBenchWorld('scaling')
cleanups.push(() => world.drop())
const { sql, close: closeDb } = createDb(world.databaseUrl, { max: 1 })
cleanups.push(closeDb)
const adminToken = randomBytes(24).toString('hex')

async function startStack(kind: string): Promise<Stack> {
  const target: RedisTarget = kind === 'cluster' ? await redisCluster() : await singleRedis()
  cleanups.push(() => target.stop())
  const env = {
    DATABASE_URL: world.databaseUrl,
    QUEUE_PREFIX: world.queuePrefix,
    REDIS_URL: target.redisUrl,
    ...target.extraEnv,
  }
  const apiEnv = {
    ...env,
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
    ADMIN_TOKENS: `bench=${adminToken}`,
    // The per-key limit stays in the path, set never to refuse.
    MESSAGE_RATE_PER_SECOND: '1000000000',
    // A key per sender, requested through the API.
    KEY_REQUEST_RATE_MAX: '100000',
  }
  const apis: ServiceProcess[] = []
  for (let i = 1; i <= Math.max(...apiCounts); i++) apis.push(await startApiProcess(`api ${i}`, apiEnv))
  return { target, apis, env }
}

/** An approved key with the send scopes, requested and approved through the API. */
async function approvedKey(api: ServiceProcess): Promise<{ id: string; key: string }> {
  const requested = await fetch(`${api.url}/api/api-keys/request`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ clientName: 'Bench', email: 'bench@dispatch.test', scopes: ['send:free-text'] }),
  })
  const { id, key } = (await requested.json()) as { id: string; key: string }
  const approved = await fetch(`${api.url}/api/admin/api-keys/${id}/approve`, {
    method: 'POST',
    headers: { authorization: `Bearer ${adminToken}` },
  })
  if (approved.status !== 200)
    throw new Error(`approve answered ${approved.status}: ${await approved.text()}`)
  return { id, key }
}

/**
 * One approved key per sender, each bound to it: `senderCount` senders added through the admin API
 * (sandbox numbers, the highest rate a sender may have), or one key on the default sender.
 */
async function senderKeys(api: ServiceProcess): Promise<{ id: string; key: string }[]> {
  if (senderCount <= 1) return [await approvedKey(api)]
  const admin = { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' }
  const keys = []
  for (let i = 1; i <= senderCount; i++) {
    const created = await fetch(`${api.url}/api/admin/senders`, {
      method: 'POST',
      headers: admin,
      body: JSON.stringify({
        phoneNumberId: String(200_000_000_000_000 + i),
        displayName: `Bench sender ${i}`,
        accessToken: `sandbox-token-${i}`,
        ratePerSecond: SENDER_MAX_RATE,
      }),
    })
    if (created.status !== 201)
      throw new Error(`add sender answered ${created.status}: ${await created.text()}`)
    const { id: senderId } = (await created.json()) as { id: string }
    const key = await approvedKey(api)
    const bound = await fetch(`${api.url}/api/admin/api-keys/${key.id}`, {
      method: 'PATCH',
      headers: admin,
      body: JSON.stringify({ senderId }),
    })
    if (bound.status !== 200) throw new Error(`bind key answered ${bound.status}: ${await bound.text()}`)
    keys.push(key)
  }
  return keys
}

const fmt = (n: number) => Math.round(n).toLocaleString('en-US')
const spread = (values: number[]) => `${fmt(Math.min(...values))}–${fmt(Math.max(...values))}`
const load = () =>
  `load average ${loadavg()
    .map((n) => n.toFixed(1))
    .join(' ')}`
/** Configurations in order, reversed every other round, so drift weighs on each alike. */
const ordered = <T>(items: T[], round: number) => (round % 2 === 1 ? items : [...items].reverse())

interface Config<R> {
  stack: Stack
  /** Processes: APIs, or workers. */
  count: number
  /** What it is, the same for every Redis (`2 APIs`, `1 worker × 80`). */
  name: string
  /** A worker's MESSAGES_CONCURRENCY, when not the service's default. */
  concurrency?: number | undefined
  runs: R[]
}
const plural = (n: number, what: string) => `${n} ${what}${n > 1 ? 's' : ''}`
const workerName = (w: { processes: number; concurrency?: number | undefined }) =>
  `${plural(w.processes, 'worker')}${w.concurrency ? ` × ${w.concurrency}` : ''}`
const medianUsage = (runs: { usage: Usage }[], pick: (u: Usage) => number) =>
  median(runs.map((r) => pct(pick(r.usage), r.usage)))
const sum = (values: number[]) => values.reduce((a, b) => a + b, 0)
/** µs of CPU per request (or message) of a part, median over the runs. */
const medianPer = (runs: { usage: Usage; units: number }[], pick: (u: Usage) => number) =>
  fmt(median(runs.map((r) => (pick(r.usage) * 1e6) / r.units)))

async function acceptPart(stacks: Stack[], shared: Shared) {
  console.log(
    `\naccept: send-text, ${connections} connections on two autocannon processes (a key each${senderCount > 1 ? ', on senders of their own' : ''}); ${rounds} rounds of ${seconds} s` +
      ` per configuration (API processes: ${apiCounts.join(', ')}; ${stacks.map((s) => s.target.name).join(', ')}); ${load()}`,
  )
  const configs: Config<AcceptRun>[] = stacks.flatMap((stack) =>
    apiCounts.map((count) => ({ stack, count, name: plural(count, 'API'), runs: [] })),
  )
  const label = (c: Config<AcceptRun>) => `${c.stack.target.name}, ${c.name}`
  for (const c of configs) await acceptRun(c.stack, shared, c.count, { connections, seconds: 2, body })
  for (let round = 1; round <= rounds; round++) {
    for (const c of ordered(configs, round)) {
      const run = await acceptRun(c.stack, shared, c.count, { connections, seconds, body })
      c.runs.push(run)
      console.log(
        `  round ${round}/${rounds} · ${label(c)}: ${fmt(run.perSecond)} req/s, p99 ${run.p99} ms;` +
          ` ${describeUsage(run.usage, 'APIs')}; µs per request: APIs ${medianPer([run], (u) => sum(u.processes))},` +
          ` load generator ${medianPer([run], (u) => u.loadGenerator)}, Redis ${medianPer([run], (u) => u.redis)}`,
      )
    }
  }
  console.log(`accept, medians of ${rounds} rounds (${load()}):`)
  for (const c of configs) {
    const u = (pick: (u: Usage) => number) => medianUsage(c.runs, pick)
    console.log(
      `  ${label(c)}: ${fmt(median(c.runs.map((r) => r.perSecond)))} req/s (${spread(c.runs.map((r) => r.perSecond))}),` +
        ` p99 ${median(c.runs.map((r) => r.p99))} ms; CPU % of a core: APIs ${u((x) => sum(x.processes))},` +
        ` load generator ${u((x) => x.loadGenerator)}, Redis ${u((x) => x.redis)}, machine ${u((x) => x.machine)}` +
        ` (others ${u((x) => x.others)}); µs per request: APIs ${medianPer(c.runs, (x) => sum(x.processes))},` +
        ` load generator ${medianPer(c.runs, (x) => x.loadGenerator)}, Redis ${medianPer(c.runs, (x) => x.redis)}`,
    )
  }
  compare(configs, 'accept', {
    what: 'throughput',
    unit: 'req/s',
    better: 'higher',
    values: (c) => c.runs.map((r) => r.perSecond),
  })
  compare(configs, 'accept', {
    what: 'CPU per request (APIs, Redis)',
    unit: 'µs',
    better: 'lower',
    values: (c) => serviceCpu(c.runs),
  })
}

async function deliveryPart(stacks: Stack[], shared: Shared) {
  console.log(
    `\ndelivery: ${messages} messages accepted while held, then drained by worker processes` +
      ` (${workerConfigs.map(workerName).join(', ')}; messages role, sandbox, MESSAGES_CONCURRENCY 20 unless said,` +
      ` ${senderCount > 1 ? `${senderCount} senders at ${SENDER_MAX_RATE}/s each` : 'the default sender, rate 1,000,000/s'});` +
      ` ${rounds} rounds; ${stacks.map((s) => s.target.name).join(', ')}; ${load()}`,
  )
  const configs: Config<DeliveryRun>[] = stacks.flatMap((stack) =>
    workerConfigs.map((w) => ({
      stack,
      count: w.processes,
      name: workerName(w),
      concurrency: w.concurrency,
      runs: [],
    })),
  )
  const label = (c: Config<DeliveryRun>) => `${c.stack.target.name}, ${c.name}`
  for (const stack of stacks) {
    const warm = Math.min(messages, 2000)
    await deliveryRun(stack, shared, 2, {
      count: warm,
      body,
      workerEnv,
      label: `warm-up, ${stack.target.name}`,
    })
  }
  for (let round = 1; round <= rounds; round++) {
    for (const c of ordered(configs, round)) {
      const env = c.concurrency ? { ...workerEnv, MESSAGES_CONCURRENCY: String(c.concurrency) } : workerEnv
      const run = await deliveryRun(c.stack, shared, c.count, {
        count: messages,
        body,
        workerEnv: env,
        label: label(c),
      })
      c.runs.push(run)
      console.log(
        `  round ${round}/${rounds} · ${label(c)}: ${fmt(run.perSecond)} msg/s (${run.usage.seconds.toFixed(1)} s);` +
          ` ${describeUsage(run.usage, 'workers')}; µs per message: workers ${medianPer([run], (u) => sum(u.processes))},` +
          ` Postgres ${medianPer([run], (u) => u.postgres)}, Redis ${medianPer([run], (u) => u.redis)}` +
          (run.keysPerNode.length > 1 ? `; keys per master after it ${run.keysPerNode.join(', ')}` : ''),
      )
    }
  }
  const [statuses] = await sql<{ other: number }[]>`
    select count(*)::int as other from messages where status <> 'sent'`
  if ((statuses?.other ?? 0) > 0) throw new Error(`${statuses?.other} messages recorded other than sent`)
  console.log(`delivery, medians of ${rounds} rounds (every message recorded sent; ${load()}):`)
  for (const c of configs) {
    const u = (pick: (u: Usage) => number) => medianUsage(c.runs, pick)
    console.log(
      `  ${label(c)}: ${fmt(median(c.runs.map((r) => r.perSecond)))} msg/s (${spread(c.runs.map((r) => r.perSecond))});` +
        ` CPU % of a core: workers ${u((x) => sum(x.processes))}, Postgres ${u((x) => x.postgres)},` +
        ` Redis ${u((x) => x.redis)}, machine ${u((x) => x.machine)} (others ${u((x) => x.others)});` +
        ` µs per message: workers ${medianPer(c.runs, (x) => sum(x.processes))},` +
        ` Postgres ${medianPer(c.runs, (x) => x.postgres)}, Redis ${medianPer(c.runs, (x) => x.redis)}`,
    )
  }
  compare(configs, 'delivery', {
    what: 'throughput',
    unit: 'msg/s',
    better: 'higher',
    values: (c) => c.runs.map((r) => r.perSecond),
  })
  compare(configs, 'delivery', {
    what: 'CPU per message (workers, Postgres, Redis)',
    unit: 'µs',
    better: 'lower',
    values: (c) => serviceCpu(c.runs),
  })
}

interface Metric<R> {
  what: string
  unit: string
  better: 'higher' | 'lower'
  values: (c: Config<R>) => number[]
}

/** Each configuration against the first of its Redis (1 API, 1 worker), then each Redis against the first. */
function compare<R>(configs: Config<R>[], part: string, metric: Metric<R>) {
  const line = (c: Config<R>, base: Config<R>, name: string) =>
    printComparison({
      name: `${part} ${metric.what}, ${name}`,
      figure: median(metric.values(c)),
      baseline: median(metric.values(base)),
      unit: metric.unit,
      better: metric.better,
    })
  const first = configs[0]
  for (const c of configs) {
    const base = configs.find((b) => b.stack === c.stack)
    if (base && base !== c) line(c, base, `${c.name} vs ${base.name} (${c.stack.target.name})`)
  }
  for (const c of configs) {
    const base = configs.find((b) => b.stack === first?.stack && b.name === c.name)
    if (base && base.stack !== c.stack)
      line(c, base, `${c.name}, ${c.stack.target.name} vs ${base.stack.target.name}`)
  }
}

/** The service's CPU per request or message (its processes, Redis, Postgres; not the load generator), µs. */
const serviceCpu = (runs: { usage: Usage; units: number }[]) =>
  runs.map((r) => ((sum(r.usage.processes) + r.usage.redis + r.usage.postgres) * 1e6) / r.units)

try {
  const began = performance.now()
  console.log(`horizontal scaling: ${load()}; Redis: ${redisKinds.join(', ')}; parts: ${parts.join(', ')}`)
  const stacks: Stack[] = []
  for (const kind of redisKinds) stacks.push(await startStack(kind))
  const first = stacks[0]?.apis[0]
  if (!first) throw new Error('no Redis target to measure (BENCH_REDIS)')
  const shared: Shared = { sql, keys: await senderKeys(first), adminToken }
  if (parts.includes('accept')) await acceptPart(stacks, shared)
  if (parts.includes('delivery')) await deliveryPart(stacks, shared)
  console.log(`horizontal scaling: done in ${((performance.now() - began) / 1000).toFixed(0)} s`)
} finally {
  await cleanUp()
}
