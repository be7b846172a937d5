/**
 * One measured run of the scaling benchmark (`scaling.ts`): accept throughput against 1 or more
 * API processes, or delivery throughput of K worker processes draining a backlog, each with the
 * CPU every process used meanwhile, so a figure comes with what bounds it.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import type { Sql } from '@dispatch/db'
import {
  backendsCpuDelta,
  databaseBackendsCpu,
  exitedChildrenCpuSeconds,
  machineBusySeconds,
} from '../harness/cpu.ts'
import { assertClean, autocannon, settle } from '../harness/load.ts'
import { type ServiceProcess, startWorkerProcess } from '../harness/processes.ts'
import type { RedisTarget } from '../harness/redis-targets.ts'

/** One Redis target with its API processes, all sharing the benchmark's database and prefix. */
export interface Stack {
  target: RedisTarget
  apis: ServiceProcess[]
  /** The environment every process of this stack gets (database, Redis, prefix). */
  env: Record<string, string>
}

export interface Shared {
  sql: Sql
  /** Approved keys with the send scope, each bound to a sender of its own (or all to the default). */
  keys: { id: string; key: string }[]
  adminToken: string
}

interface Snapshot {
  at: number
  machine: number
  redis: number
  postgres: Map<number, number>
  exitedChildren: number
  self: number
  processes: number[]
}

async function snapshot(stack: Stack, shared: Shared, processes: ServiceProcess[]): Promise<Snapshot> {
  const self = process.cpuUsage()
  const [machine, redis, postgres, exitedChildren, ...cpu] = await Promise.all([
    machineBusySeconds(),
    stack.target.cpuSeconds(),
    databaseBackendsCpu(shared.sql),
    exitedChildrenCpuSeconds(),
    ...processes.map((p) => p.cpuSeconds()),
  ])
  return {
    at: performance.now(),
    machine,
    redis,
    postgres,
    exitedChildren,
    self: (self.user + self.system) / 1e6,
    processes: cpu,
  }
}

/** CPU seconds each part used between two snapshots, and the wall time between them. */
export interface Usage {
  seconds: number
  /** The processes measured (APIs, or workers), in order. */
  processes: number[]
  /** autocannon (exited children). */
  loadGenerator: number
  redis: number
  postgres: number
  /** Every core of the machine, anyone's. */
  machine: number
  /** The machine's busy time that none of the above nor this process account for: other sessions. */
  others: number
}

function usage(before: Snapshot, after: Snapshot): Usage {
  const processes = after.processes.map((s, i) => s - (before.processes[i] ?? 0))
  const loadGenerator = after.exitedChildren - before.exitedChildren
  const redis = after.redis - before.redis
  const postgres = backendsCpuDelta(before.postgres, after.postgres)
  const machine = after.machine - before.machine
  const ours =
    processes.reduce((a, b) => a + b, 0) + loadGenerator + redis + postgres + after.self - before.self
  return {
    seconds: (after.at - before.at) / 1000,
    processes,
    loadGenerator,
    redis,
    postgres,
    machine,
    others: Math.max(0, machine - ours),
  }
}

/** Percent of one core over the usage's wall time (two cores: 200 %). */
export const pct = (cpuSeconds: number, u: Usage) => Math.round((cpuSeconds / u.seconds) * 100)

export const describeUsage = (u: Usage, processLabel: string) =>
  `CPU % of a core: ${processLabel} ${u.processes.map((s) => pct(s, u)).join('+')}` +
  (u.loadGenerator > 0 ? `, load generator ${pct(u.loadGenerator, u)}` : '') +
  `, Redis ${pct(u.redis, u)}, Postgres ${pct(u.postgres, u)}; machine ${pct(u.machine, u)}` +
  ` (others ${pct(u.others, u)})`

export interface AcceptRun {
  perSecond: number
  p99: number
  /** Requests answered in the run. */
  units: number
  usage: Usage
}

/**
 * `send-text` on two autocannon processes of `connections / 2` each, both against the first API
 * with one API process, one each with two: the load generator is the same in every configuration.
 * What the round stored is flushed from Redis after.
 */
export async function acceptRun(
  stack: Stack,
  shared: Shared,
  apiCount: number,
  options: { connections: number; seconds: number; body: string },
): Promise<AcceptRun> {
  const apis = stack.apis.slice(0, apiCount)
  const before = await snapshot(stack, shared, apis)
  const runs = await Promise.all(
    [0, 1].map((i) =>
      autocannon({
        url: `${apis[i % apis.length]?.url}/api/third-party/messages/send-text`,
        headers: { 'x-api-key': shared.keys[i % shared.keys.length]?.key ?? '' },
        body: options.body,
        connections: Math.ceil(options.connections / 2),
        seconds: options.seconds,
      }),
    ),
  )
  const after = await snapshot(stack, shared, apis)
  runs.forEach((run, i) => {
    assertClean(`autocannon ${i + 1}`, run)
  })
  await settle()
  await stack.target.flush()
  const perSecond = runs.reduce((sum, run) => sum + run.requestsPerSecond, 0)
  return {
    perSecond,
    p99: Math.max(...runs.map((run) => run.p99)),
    units: perSecond * options.seconds,
    usage: usage(before, after),
  }
}

async function admin(stack: Stack, shared: Shared, action: 'pause' | 'resume') {
  const res = await fetch(`${stack.apis[0]?.url}/api/admin/queues/messages/${action}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${shared.adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ reason: 'scaling benchmark: a backlog to drain' }),
  })
  if (res.status !== 200) throw new Error(`${action} messages answered ${res.status}: ${await res.text()}`)
}

/** `count` text messages through `POST /messages/batch` (100 a request, 4 in flight, every API, every key). */
async function fill(stack: Stack, keys: string[], count: number, body: string) {
  const text = JSON.parse(body) as Record<string, string>
  let next = 0
  let request = 0
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (next < count) {
        const size = Math.min(100, count - next)
        next += size
        const api = stack.apis[request % stack.apis.length]
        const key = keys[request++ % keys.length] ?? ''
        const res = await fetch(`${api?.url}/api/third-party/messages/batch`, {
          method: 'POST',
          headers: { 'x-api-key': key, 'content-type': 'application/json' },
          body: JSON.stringify({ messages: Array.from({ length: size }, () => ({ type: 'text', ...text })) }),
        })
        if (res.status !== 202) throw new Error(`batch answered ${res.status}: ${await res.text()}`)
      }
    }),
  )
}

/** The run's messages recorded `sent` (accepted since `since`): a short range of the key's index. */
const sentCount = async (sql: Sql, keyIds: string[], since: Date) => {
  const [row] = await sql<{ n: number }[]>`
    select count(*)::int as n from messages
    where api_key_id = any(${keyIds}::uuid[]) and status = 'sent' and accepted_at >= ${since.toISOString()}::timestamptz`
  return row?.n ?? 0
}

export interface DeliveryRun {
  perSecond: number
  /** Messages delivered in the run. */
  units: number
  usage: Usage
  /** Keys on each Redis node once drained: on a cluster, how the senders spread over the masters. */
  keysPerNode: number[]
}

/**
 * Delivery by `workers` processes from a backlog of `count`: delivery held (the `messages`
 * incident switch), the backlog accepted through the API, the workers started (they hold too),
 * then the switch resumed and the clock run until Postgres has every message recorded `sent`.
 */
export async function deliveryRun(
  stack: Stack,
  shared: Shared,
  workers: number,
  options: { count: number; body: string; workerEnv: Record<string, string>; label: string },
): Promise<DeliveryRun> {
  await admin(stack, shared, 'pause')
  const since = new Date(Date.now() - 1000)
  await fill(
    stack,
    shared.keys.map((k) => k.key),
    options.count,
    options.body,
  )
  let run: DeliveryRun
  const started = await Promise.all(
    Array.from({ length: workers }, (_, i) =>
      startWorkerProcess(`worker ${i + 1}`, { ...stack.env, ...options.workerEnv }),
    ),
  )
  try {
    const before = await snapshot(stack, shared, started)
    await admin(stack, shared, 'resume')
    let lastReport = before.at
    let progress = { sent: 0, at: before.at }
    for (;;) {
      const sent = await sentCount(
        shared.sql,
        shared.keys.map((k) => k.id),
        since,
      )
      if (sent >= options.count) break
      const now = performance.now()
      if (sent > progress.sent) progress = { sent, at: now }
      // A stuck run fails, rather than waiting: a worker that cannot reach Redis logs why (above).
      if (now - progress.at > 60_000)
        throw new Error(`${options.label}: ${sent}/${options.count} sent, none more for 60 s`)
      if (now - lastReport > 5000) {
        lastReport = now
        console.log(
          `    … ${options.label}: ${sent}/${options.count} sent after ${((now - before.at) / 1000).toFixed(1)} s`,
        )
      }
      await sleep(50)
    }
    const after = await snapshot(stack, shared, started)
    const u = usage(before, after)
    run = { perSecond: options.count / u.seconds, units: options.count, usage: u, keysPerNode: [] }
  } finally {
    await Promise.all(started.map((w) => w.stop()))
  }
  run.keysPerNode = await stack.target.keyCounts()
  await stack.target.flush()
  return run
}
