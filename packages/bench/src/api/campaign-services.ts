/**
 * What the campaign benchmarks share: the service's real entry points (`node apps/api/src/server.ts`
 * with its campaign feeder, `node apps/worker/src/main.ts` with every role on the sandbox platform)
 * on a database of the benchmark's own and a redis-server of its own; keys approved through the
 * API; a campaign created through the API with its audience written as an upload leaves it (blocks
 * of 50 lines `pending`, the campaign `ready`), by one `INSERT … SELECT generate_series` (a million rows in
 * seconds, the upload route's cost left to its own benchmark); and waiting for messages recorded
 * `sent`, with progress lines.
 */
import { randomBytes } from 'node:crypto'
import { loadavg } from 'node:os'
import { setTimeout as sleep } from 'node:timers/promises'
import { createDb } from '@dispatch/db'
import { freePort } from '@dispatch/testing'
import { Redis } from 'ioredis'
import { exitCleanups } from '../harness/cleanups.ts'
import { type ServiceProcess, startApiProcess, startWorkerProcess } from '../harness/processes.ts'
import { startRedisServer } from '../harness/redis-server.ts'
import { createBenchWorld } from '../harness/world.ts'

export const intEnv = (name: string, fallback: number) => {
  const value = Number(process.env[name] ?? fallback)
  if (!Number.isInteger(value) || value < 0)
    throw new Error(`${name} must be a whole number, got ${process.env[name]}`)
  return value
}
export const int = (n: number) => Math.round(n).toLocaleString('en-US')
export const secs = (ms: number) => `${(ms / 1000).toFixed(1)} s`
export const load = () =>
  `load average ${loadavg()
    .map((n) => n.toFixed(1))
    .join(' ')}`

/** The template every campaign and batch of the benchmarks sends (the sender's catalog is not synced: nothing to check it against). */
export const TEMPLATE = { templateId: 'order_shipped', language: 'pt_BR' }
/** Recipient `i`'s phone and variables, the same in a campaign's row and in a batch's item. */
export const recipient = (i: number) => ({
  phone: `+5511${900_000_000 + i}`,
  variables: { '1': `Cliente ${i}`, '2': `BR-${i}` },
})

/** Sums a counter's samples (every label set) in a Prometheus text exposition. */
const counterSum = (text: string, name: string) => {
  let sum = 0
  for (const match of text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? ([\\d.e+]+)$`, 'gm')))
    sum += Number(match[1])
  return sum
}

export interface Services {
  api: ServiceProcess
  worker: ServiceProcess
  sql: ReturnType<typeof createDb>['sql']
  adminToken: string
  /** Messages the worker has counted sent so far (its /metrics). */
  sentSoFar(): Promise<number>
  /** A key approved through the API with these scopes (unbound: the default sender). */
  approvedKey(name: string, scopes: string[]): Promise<{ id: string; key: string }>
}

/**
 * The world, a redis-server, one API and one worker (sandbox, every role), each given `apiEnv` and
 * `workerEnv` on top of what keeps the key's limits and the platform's rate out of the figure.
 * Everything is stopped by `cleanUp()` (or Ctrl-C).
 */
export async function startServices(
  name: string,
  env: { api?: Record<string, string>; worker?: Record<string, string> } = {},
) {
  const { cleanups, cleanUp } = exitCleanups()
  const world = await createBenchWorld(name)
  cleanups.push(() => world.drop())
  const { sql, close: closeDb } = createDb(world.databaseUrl, { max: 2 })
  cleanups.push(closeDb)
  const redisServer = await startRedisServer()
  cleanups.push(() => redisServer.stop())
  const redis = new Redis(redisServer.url, { maxRetriesPerRequest: 1 })
  cleanups.push(async () => redis.disconnect())
  const adminToken = randomBytes(24).toString('hex')
  const shared = {
    DATABASE_URL: world.databaseUrl,
    QUEUE_PREFIX: world.queuePrefix,
    REDIS_URL: redisServer.url,
  }
  const api = await startApiProcess('api', {
    ...shared,
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
    ADMIN_TOKENS: `bench=${adminToken}`,
    // The key's limits stay in the path, set never to refuse: a batch run stores N messages in seconds.
    MESSAGE_RATE_PER_SECOND: '1000000000',
    MESSAGE_OUTSTANDING_MAX: '1000000000',
    ...env.api,
  })
  const metricsPort = await freePort()
  const worker = await startWorkerProcess('worker', {
    ...shared,
    PLATFORM: 'sandbox',
    PLATFORM_RATE_PER_SECOND: '1000000',
    METRICS_PORT: String(metricsPort),
    ...env.worker,
  })
  const services: Services = {
    api,
    worker,
    sql,
    adminToken,
    async sentSoFar() {
      const res = await fetch(`http://127.0.0.1:${metricsPort}/metrics`)
      if (res.status !== 200) throw new Error(`worker /metrics answered ${res.status}`)
      return counterSum(await res.text(), 'dispatch_messages_sent_total')
    },
    approvedKey: (clientName, scopes) => approvedKey(api, adminToken, clientName, scopes),
  }
  return { services, world, redis, redisServer, cleanUp }
}

async function approvedKey(api: ServiceProcess, adminToken: string, clientName: string, scopes: string[]) {
  const requested = await fetch(`${api.url}/api/api-keys/request`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ clientName, email: 'bench@dispatch.test', scopes }),
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

/** A JSON call to the API with a key; throws unless it answers `expect`. */
export async function call<T>(
  services: Services,
  key: string,
  method: string,
  path: string,
  body?: unknown,
  expect = 200,
): Promise<T> {
  const res = await fetch(`${services.api.url}${path}`, {
    method,
    headers: { 'x-api-key': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  })
  const text = await res.text()
  if (res.status !== expect) throw new Error(`${method} ${path} answered ${res.status}: ${text}`)
  return JSON.parse(text) as T
}

/**
 * A campaign of `size` recipients (`recipient(from)` on), `ready`: created through the API, its
 * rows written as an upload leaves them (line 2 on: a CSV's header is line 1).
 */
export async function readyCampaign(services: Services, key: string, size: number, from = 0) {
  const { id } = await call<{ id: string }>(
    services,
    key,
    'POST',
    '/api/third-party/campaigns',
    { name: `bench ${size}`, template: TEMPLATE },
    201,
  )
  const { sql } = services
  // As a CSV upload of plain lines leaves them: blocks of 50 lines as uploaded (`phone,1,2`),
  // expanded by the feeder as it reaches them.
  await sql`
    insert into campaign_recipients (campaign_id, line, state, lines, block, block_fields)
    select ${id}::uuid, b * 50 + 2, 'pending', least(50, ${size}::int - b * 50),
      (select string_agg('+5511' || (900000000 + ${from}::int + g)::text || ',Cliente ' || (${from}::int + g)
          || ',BR-' || (${from}::int + g), E'\n' order by g)
        from generate_series(b * 50, least(${size}::int, b * 50 + 50) - 1) as g),
      '{phone,1,2}'::text[]
    from generate_series(0, (${size}::int + 49) / 50 - 1) as b`
  const audience = {
    rows: size,
    taken: size,
    skipped: 0,
    skippedByReason: {},
    format: 'csv',
    uploadedAt: new Date().toISOString(),
  }
  await sql`update campaigns set status = 'ready', audience = ${JSON.stringify(audience)}::jsonb where id = ${id}::uuid`
  return id
}

/** Messages of `apiKeyId` recorded `sent`, accepted since `since` (a range of its status index). */
export async function sentRows(services: Services, apiKeyId: string, since: Date) {
  const [row] = await services.sql<{ n: number }[]>`
    select count(*)::int as n from messages
    where api_key_id = ${apiKeyId}::uuid and status = 'sent' and accepted_at >= ${since.toISOString()}::timestamptz`
  return row?.n ?? 0
}

/** A run whose sent count does not move for this long has failed (a worker that cannot reach Redis logs why). */
const STUCK_MS = 120_000

/**
 * Waits until the worker has counted `target` messages sent in all, printing progress every
 * `progressMs`, then until Postgres has `expected` rows sent for the key (since `since`): the run's
 * end. Answers when that was (performance.now()).
 */
export async function untilSent(
  services: Services,
  what: string,
  run: {
    target: number
    expected: number
    apiKeyId: string
    since: Date
    startedAt: number
    progressMs: number
  },
): Promise<number> {
  let moved = { sent: -1, at: performance.now() }
  let lastProgress = run.startedAt
  for (;;) {
    const sent = await services.sentSoFar()
    const now = performance.now()
    if (sent !== moved.sent) moved = { sent, at: now }
    else if (now - moved.at > STUCK_MS) throw new Error(`${what}: none sent for ${secs(STUCK_MS)}`)
    if (now - lastProgress >= run.progressMs) {
      lastProgress = now
      const done = run.expected - (run.target - sent)
      console.log(
        `    … ${what}, ${secs(now - run.startedAt)}: ${int(done)}/${int(run.expected)} sent` +
          ` (${int((done / (now - run.startedAt)) * 1000)} msg/s); ${load()}`,
      )
    }
    if (sent >= run.target) break
    await sleep(100)
  }
  for (;;) {
    if ((await sentRows(services, run.apiKeyId, run.since)) >= run.expected) return performance.now()
    if (performance.now() - moved.at > STUCK_MS) throw new Error(`${what}: rows not recorded sent`)
    await sleep(50)
  }
}

/**
 * Before anything is measured: `size` messages through a campaign and `size` through batches,
 * sent, then `ANALYZE`. A fresh database has no statistics, and until autovacuum's first analyze
 * (up to a minute or more on a loaded machine) Postgres plans the service's reads on its
 * tables as if they were empty: whichever side ran first was measured at a fraction of its speed
 * (150-600 msg/s against 1,500-3,600 for the same side later in the same run). A deployment's
 * tables have their statistics; the benchmark measures that.
 */
export async function warmUp(services: Services, key: { id: string; key: string }, size: number) {
  const since = new Date()
  const startedAt = performance.now()
  const target = (await services.sentSoFar()) + 2 * size
  const id = await readyCampaign(services, key.key, size, 5_000_000)
  await call(services, key.key, 'POST', `/api/third-party/campaigns/${id}/start`)
  for (let from = 0; from < size; from += 1000) {
    const items = Array.from({ length: Math.min(1000, size - from) }, (_, i) => ({
      type: 'template',
      ...recipient(6_000_000 + from + i),
      ...TEMPLATE,
      priority: 'low',
    }))
    await call(services, key.key, 'POST', '/api/third-party/messages/batch', { messages: items }, 202)
  }
  await untilSent(services, 'warm-up', {
    target,
    expected: 2 * size,
    apiKeyId: key.id,
    since,
    startedAt,
    progressMs: 30_000,
  })
  await services.sql`analyze`
  console.log(
    `  warm-up: ${int(size)} messages by campaign and ${int(size)} by batch sent, then ANALYZE, in ${secs(performance.now() - startedAt)}`,
  )
}
