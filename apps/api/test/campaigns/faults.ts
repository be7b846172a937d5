import { randomBytes } from 'node:crypto'
import type { Campaign } from '@dispatch/contracts'
import { migrateDatabase } from '@dispatch/db/migrate'
import { serviceWindowsLoadedKey } from '@dispatch/runtime'
import {
  type CloudApiRequest,
  ENTRY_POINTS,
  type FakeWhatsApp,
  type LogLine,
  type PrivatePostgres,
  type PrivateRedis,
  type Service,
  serviceReport,
  startFakeWhatsApp,
  startPrivatePostgres,
  startPrivateRedis,
  startService,
  testQueuePrefix,
  testRedisUrl,
  waitFor,
} from '@dispatch/testing'
import { Redis } from 'ioredis'
import postgres from 'postgres'
import { expect } from 'vitest'
import { ADMIN, buildTestApp, createWorld, type TestApp, type TestWorld } from '../helpers.ts'
import { keyOf, syncedSender } from '../templates/setup.ts'

/**
 * Issue 43's reliability tests (faults-*.test.ts): a campaign of 2,000 recipients fed 200 at a time
 * (by the test's own app, or by API processes where an API is killed), sent by worker processes
 * run as ops run them (`node apps/worker/src/main.ts`) through the fake platform; a fault midway;
 * then every row must be in one state, the counts must add up, the campaign must complete, and
 * each message must reach the platform once (or, where a worker was killed, twice at most for the
 * sends it had in flight). The test's app also creates the sender, key and campaign and reads its
 * counts.
 */

export const AUDIENCE = 2000
export const WINDOW = 200
/**
 * A sender slow enough that the feeder keeps only about a window (and a second of admission) ahead
 * of the sends: a fault midway leaves rows to feed.
 */
export const SLOW_SENDER = 300
/** A process's start on a machine whose two cores are shared with other test files. */
const STARTUP_MS = 60_000
const SCOPES = ['send:template', 'manage:campaigns', 'manage:suppressions', 'read:messages']
const TEMPLATE = {
  templateId: 'order_shipped',
  language: 'pt_BR',
  headerVariables: [{ type: 'image', value: null, originalMediaId: 'media-123' }],
  buttonVariables: [{ buttonIndex: 0, text: 'track/BR-1042', type: 'URL' }],
}

export interface FaultRig {
  world: TestWorld
  fake: FakeWhatsApp
  app: TestApp
  key: { id: string; key: string }
  services: Service[]
  /** An API process, feeding campaigns as the rig's app does. */
  startApi(name: string, env?: Record<string, string>): Promise<Service>
  /** A worker process (the `messages` role) sending through the fake. */
  startWorker(name: string, env?: Record<string, string>): Promise<Service>
  /** A campaign of `size` new recipients, its audience loaded, `beforeStart` run, started. */
  startCampaign(size?: number, beforeStart?: (phones: string[]) => Promise<void>): Promise<RunningCampaign>
  /** What each process said when a test failed. */
  report(): string
  close(): Promise<void>
}

export interface RunningCampaign {
  id: string
  phones: string[]
  /** The platform's requests to this campaign's recipients so far. */
  sends(): CloudApiRequest[]
  /** Until this many of its recipients got a send. */
  untilSent(n: number): Promise<void>
  /**
   * Until the campaign is midway, the time for a fault: a third of its recipients sent to, or, on a
   * machine too loaded for the sends to keep up, half of its rows fed, whichever comes first. So a
   * fault always leaves rows to feed: the feeder follows the sender's admission (SLOW_SENDER a
   * second), which takes seconds to move the other half, while this looks every 50 ms. Answers the
   * recipients sent to and the feeder's cursor then.
   */
  untilMidway(): Promise<{ sent: number; fedThrough: number }>
}

/** A world with servers of a test's own, to stop and start; `close` ends them with the world. */
export interface PrivateWorld {
  world: TestWorld
  /** The private Postgres cluster, when asked for (its `dispatch` database migrated). */
  pg?: PrivatePostgres
  /** The private Redis (its AOF fsynced on every write, as in production), when asked for. */
  redis?: PrivateRedis
  close(): Promise<void>
}

/**
 * The world of a fault test: a private Postgres cluster (its database created and migrated) and/or
 * a private Redis, each on a free port of its own, the run's shared servers for the rest (the
 * run's Redis under a prefix of its own).
 */
export async function startPrivateWorld(servers: {
  postgres?: boolean
  redis?: boolean
}): Promise<PrivateWorld> {
  const pg = servers.postgres ? await startPrivatePostgres() : undefined
  const redis = servers.redis ? await startPrivateRedis() : undefined
  let world: TestWorld
  if (pg) {
    const url = new URL(pg.url)
    url.pathname = '/dispatch'
    const admin = postgres(pg.url, { max: 1, onnotice: () => {} })
    await admin.unsafe('create database dispatch')
    await admin.end()
    await migrateDatabase(url.toString())
    const sql = postgres(url.toString(), { max: 2, onnotice: () => {} })
    world = {
      databaseUrl: url.toString(),
      redisUrl: testRedisUrl(),
      queuePrefix: testQueuePrefix(),
      sql,
      close: () => sql.end({ timeout: 5 }),
    }
  } else {
    world = await createWorld()
  }
  if (redis) world = { ...world, redisUrl: redis.url }
  return {
    world,
    pg,
    redis,
    async close() {
      await world.close()
      await pg?.destroy()
      await redis?.stop()
    },
  }
}

/** How every API instance feeds: 200 rows a window, a turn every 50 ms. */
const FEEDING = {
  CAMPAIGN_WINDOW: String(WINDOW),
  CAMPAIGN_FEED_INTERVAL_MS: '50',
  CAMPAIGN_PROGRESS_SECONDS: '1',
}

/**
 * The rig on `world`: the fake platform, the test's own app (feeding campaigns itself unless
 * `feeder: 'processes'`, when only the API processes a test starts feed), a sender sending
 * `ratePerSecond` and a key.
 */
export async function startRig(
  world: TestWorld,
  {
    feeder = 'in-process',
    ratePerSecond = 1000,
  }: { feeder?: 'in-process' | 'processes'; ratePerSecond?: number } = {},
): Promise<FaultRig> {
  const secretsKey = randomBytes(32).toString('base64')
  const fake = await startFakeWhatsApp()
  const app = await buildTestApp(world, {
    SECRETS_KEY: secretsKey,
    WHATSAPP_API_URL: fake.url,
    ...(feeder === 'in-process' ? FEEDING : { CAMPAIGN_FEED: 'false' }),
  })
  const sender = await syncedSender(app, fake, { body: { ratePerSecond } })
  const key = await keyOf(app, sender.id, SCOPES)
  const services: Service[] = []
  const shared = {
    DATABASE_URL: world.databaseUrl,
    REDIS_URL: world.redisUrl,
    QUEUE_PREFIX: world.queuePrefix,
    SECRETS_KEY: secretsKey,
    LOG_LEVEL: 'info',
  }
  let phones = 0
  const tag = String(Date.now()).slice(-4)

  async function startApi(name: string, env: Record<string, string> = {}) {
    const api = startService(name, ENTRY_POINTS.api, {
      ...shared,
      HOST: '127.0.0.1',
      PORT: '0',
      ADMIN_TOKENS: `ana=${ADMIN.ana}`,
      ...FEEDING,
      ...env,
    })
    services.push(api)
    await api.logged('listening on http://', STARTUP_MS)
    return api
  }

  async function startWorker(name: string, env: Record<string, string> = {}) {
    const worker = startService(name, ENTRY_POINTS.worker, {
      ...shared,
      // Delivery only (with its loops: the service windows, partitions): what a campaign needs.
      WORKER_QUEUES: 'messages',
      WHATSAPP_API_URL: fake.url,
      // The Cloud API adapter (not the sandbox); each sender's messages go with its own token.
      WHATSAPP_ACCESS_TOKEN: 'default-token',
      WHATSAPP_PHONE_NUMBER_ID: '106540352242923',
      ADMISSION_INTERVAL_MS: '20',
      OUTBOX_POLL_MS: '100',
      MESSAGES_BACKOFF_MS: '50',
      MESSAGES_CONCURRENCY: '10',
      TEMPLATE_SYNC_INTERVAL_MS: '0',
      ...env,
    })
    services.push(worker)
    await worker.logged('Dispatch worker running', STARTUP_MS)
    // The API judges a send only once a worker has loaded the service windows.
    const redis = new Redis(world.redisUrl)
    try {
      await waitFor(async () => (await redis.exists(serviceWindowsLoadedKey(world.queuePrefix))) === 1, {
        what: 'the windows marked complete',
        timeoutMs: STARTUP_MS,
      })
    } finally {
      redis.disconnect()
    }
    return worker
  }

  async function startCampaign(
    size = AUDIENCE,
    beforeStart?: (phones: string[]) => Promise<void>,
  ): Promise<RunningCampaign> {
    const headers = { 'x-api-key': key.key }
    const created = await app.inject({
      method: 'POST',
      url: '/api/third-party/campaigns',
      headers,
      payload: { name: 'Fault campaign', template: TEMPLATE },
    })
    expect(created.statusCode, created.body).toBe(201)
    const { id } = created.json<Campaign>()
    const audience = Array.from({ length: size }, () => `+55219${tag}${String(phones++).padStart(5, '0')}`)
    await loadAudience(world, id, audience)
    await beforeStart?.(audience)
    const started = await app.inject({
      method: 'POST',
      url: `/api/third-party/campaigns/${id}/start`,
      headers,
    })
    expect(started.statusCode, started.body).toBe(200)
    const to = new Set(audience.map((p) => p.slice(1)))
    const sends = () => fake.requests.filter((r) => to.has(String(r.body.to)))
    const sentTo = () => new Set(sends().map((r) => r.body.to)).size
    return {
      id,
      phones: audience,
      sends,
      untilSent: (n) =>
        waitFor(() => sentTo() >= n || undefined, {
          what: `${n} recipients sent to`,
          timeoutMs: 60_000,
          intervalMs: 50,
        }).then(() => {}),
      untilMidway: () =>
        waitFor(
          async () => {
            const [cursor] = await world.sql<{ fed_through: number }[]>`
              select fed_through from campaigns where id = ${id}`
            const fedThrough = cursor?.fed_through ?? 0
            const sent = sentTo()
            // Lines start at 2 (the header is line 1): half fed is through line size / 2 + 1.
            return sent >= size / 3 || fedThrough > size / 2 ? { sent, fedThrough } : undefined
          },
          { what: 'the campaign midway', timeoutMs: 60_000, intervalMs: 50 },
        ),
    }
  }

  return {
    world,
    fake,
    app,
    key,
    services,
    startApi,
    startWorker,
    startCampaign,
    report: () =>
      [
        ...services.map((s) => serviceReport(s)),
        `fake: ${fake.requests.length} requests, last ${JSON.stringify(fake.requests.at(-1)?.body)}`,
        ...services.flatMap((s) =>
          s
            .logs()
            .slice(-15)
            .map((l) => `${s.name}: ${JSON.stringify(l)}`),
        ),
      ].join('\n'),
    async close() {
      for (const service of services) if (service.running()) service.child.kill('SIGKILL')
      await Promise.all(services.map((s) => s.exited))
      await app.close()
      await fake.close()
    },
  }
}

/** The audience as an upload leaves it: every row `pending` by its line (the header is line 1), the campaign `ready`. */
async function loadAudience(world: TestWorld, campaignId: string, phones: string[]) {
  const rows = phones.map((phone, i) => ({
    campaign_id: campaignId,
    line: i + 2,
    phone,
    variables: JSON.stringify({ '1': `Cliente ${i + 2}`, '2': `BR-${i + 2}` }),
    state: 'pending',
  }))
  await world.sql`insert into campaign_recipients ${world.sql(rows)}`
  const audience = {
    rows: rows.length,
    taken: rows.length,
    skipped: 0,
    skippedByReason: {},
    format: 'csv',
    uploadedAt: new Date().toISOString(),
  }
  await world.sql`update campaigns set status = 'ready', audience = ${world.sql.json(audience)} where id = ${campaignId}`
}

/** The campaign as the key reads it, once `completed` (an answer other than 200, an outage's, is waited out). */
export async function untilCompleted(rig: FaultRig, id: string, timeoutMs = 60_000): Promise<Campaign> {
  return waitFor(
    async () => {
      const res = await rig.app
        .inject({
          method: 'GET',
          url: `/api/third-party/campaigns/${id}`,
          headers: { 'x-api-key': rig.key.key },
        })
        .catch(() => undefined)
      if (res?.statusCode !== 200) return undefined
      const campaign = res.json<Campaign>()
      return campaign.status === 'completed' ? campaign : undefined
    },
    { what: `campaign ${id} completed`, timeoutMs, intervalMs: 250 },
  )
}

/** Each message's accepted sends and each recipient's requests, as the platform saw them. */
export function platformCounts(campaign: RunningCampaign) {
  const byMessage = new Map<string, CloudApiRequest[]>()
  const byPhone = new Map<string, number>()
  for (const request of campaign.sends()) {
    const phone = String(request.body.to)
    byPhone.set(phone, (byPhone.get(phone) ?? 0) + 1)
    if (!request.messageId) continue
    byMessage.set(request.messageId, [...(byMessage.get(request.messageId) ?? []), request])
  }
  return { byMessage, byPhone }
}

/**
 * What every fault test ends with: the campaign `completed`, every row fed with a message of its
 * own, every message `sent` once in Postgres, the counts adding up to the audience, every recipient
 * reached; answers the recipients the platform got more than one request for (the callers bound
 * them), with the message ids the rows hold.
 */
export async function expectCampaignWhole(rig: FaultRig, campaign: RunningCampaign) {
  const size = campaign.phones.length
  const done = await untilCompleted(rig, campaign.id)
  expect(done.counts).toEqual({
    pending: 0,
    held: 0,
    sent: size,
    delivered: 0,
    read: 0,
    failed: 0,
    skipped: 0,
    canceled: 0,
  })
  expect(done.completedAt).not.toBeNull()

  const { sql } = rig.world
  const rows = await sql<{ state: string; n: number; ids: number }[]>`
    select state, count(*)::int as n, count(distinct message_id)::int as ids
    from campaign_recipients where campaign_id = ${campaign.id} group by state`
  expect(rows).toEqual([{ state: 'fed', n: size, ids: size }])
  const [cursor] = await sql<{ fed_through: number; confirmed_through: number }[]>`
    select fed_through, confirmed_through from campaigns where id = ${campaign.id}`
  expect(cursor).toEqual({ fed_through: size + 1, confirmed_through: size + 1 })
  // Each row's message is in Postgres, sent, to that row's phone: none missing, none extra.
  const joined = await sql<{ status: string; same_phone: boolean; n: number }[]>`
    select m.status, m.phone = r.phone as same_phone, count(*)::int as n
    from campaign_recipients r join messages m on m.id = r.message_id
    where r.campaign_id = ${campaign.id} group by 1, 2`
  expect(joined).toEqual([{ status: 'sent', same_phone: true, n: size }])
  const [batch] = await sql<{ n: number }[]>`
    select count(*)::int as n from messages where batch_id = ${campaign.id}`
  expect(batch?.n).toBe(size)

  const ids = new Map(
    (
      await sql<{ phone: string; message_id: string; platform_message_id: string }[]>`
        select r.phone, r.message_id, m.platform_message_id
        from campaign_recipients r join messages m on m.id = r.message_id
        where r.campaign_id = ${campaign.id}`
    ).map((r) => [r.phone.slice(1), r]),
  )
  const { byMessage, byPhone } = platformCounts(campaign)
  // Every recipient reached, only under its row's message id, its record one the platform gave.
  expect(byPhone.size).toBe(size)
  expect(byMessage.size).toBe(size)
  for (const [phone, row] of ids) {
    const requests = byMessage.get(row.message_id) ?? []
    expect(requests.length, `message ${row.message_id}`).toBe(byPhone.get(phone))
    expect(requests.map((r) => r.platformMessageId)).toContain(row.platform_message_id)
  }
  return [...byPhone].filter(([, n]) => n > 1).map(([phone]) => ids.get(phone)?.message_id as string)
}

/** The lines the rig's app logged. */
export const appLogs = (rig: FaultRig): LogLine[] => rig.app.logs.lines.map((line) => JSON.parse(line))

/** Lines logged for an answer 500, or at error level beyond those `expected`. */
export function unexpectedErrors(lines: LogLine[], expected: RegExp[] = []): LogLine[] {
  return lines.filter((line) => {
    if ((line.res as { statusCode?: number } | undefined)?.statusCode === 500) return true
    if (typeof line.level !== 'number' || line.level < 50) return false
    return !expected.some((pattern) => pattern.test(String(line.msg)))
  })
}
