import {
  type CloudApiRequest,
  deleteKeysUnder,
  ENTRY_POINTS,
  type FakeWhatsApp,
  type LocalRedisCluster,
  type Sample,
  type Service,
  serviceReport,
  startFakeWhatsApp,
  startRedisCluster,
  startService,
  waitFor,
} from '@dispatch/testing'
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest'
import { ADMIN, asAdmin, createWorld, SEND_SCOPES, type TestWorld } from './helpers.ts'
import { scrape, total } from './processes.ts'
import { sendMessages } from './traffic.ts'

/**
 * Issue 15: two API processes and three worker processes on one Redis (a server, or a Redis Cluster)
 * and one Postgres, as ops run them (`node apps/api/src/server.ts`, `node apps/worker/src/main.ts`),
 * the workers' Cloud API
 * adapter on the fake platform. 10,000 messages go in through both APIs; midway through delivery one
 * worker is stopped with SIGTERM, another killed with SIGKILL, and a fourth started. Every accepted
 * message must be delivered, none twice once its platform id was recorded, Postgres must agree with
 * what the platform saw, and each process's counters must add up to what Postgres holds.
 */

const MESSAGES = 10_000
const BATCH_SIZE = 500
/** 9,000 messages in batches, 1,000 as single sends. */
const BATCHES = 18
const SINGLES = MESSAGES - BATCHES * BATCH_SIZE
/** Jobs a worker holds at once: a killed worker can have had at most this many sends in flight. */
const CONCURRENCY = 10
/** The sender's rate across every worker: delivery takes long enough for the kills to land midway. */
const RATE_PER_SECOND = 600
const SIGTERM_AT = 2_500
const SIGKILL_AT = 4_500
const METRICS_TOKEN = 'many-processes-metrics-token-0123456789'
const NUMBER = '100000000000915'
/** Each worker sends with a token of its own, so the fake can tell which process sent what. */
const tokenOf = (worker: string) => `EAAG-many-processes-${worker}`

/** The whole suite, on one Redis server or on a 3-master Redis Cluster of its own. */
export function manyProcessesSuite(redis: 'single' | 'cluster') {
  let world: TestWorld
  let cluster: LocalRedisCluster | undefined
  let fake: FakeWhatsApp
  const services: Service[] = []
  const apis: string[] = []
  let key: string

  const sharedEnv = () => ({
    DATABASE_URL: world.databaseUrl,
    REDIS_URL: world.redisUrl,
    REDIS_CLUSTER: String(cluster !== undefined),
    QUEUE_PREFIX: world.queuePrefix,
    METRICS_TOKEN,
  })

  interface Worker extends Service {
    metricsUrl: string
  }

  async function startApi(name: string) {
    const api = startService(name, ENTRY_POINTS.api, {
      ...sharedEnv(),
      HOST: '127.0.0.1',
      PORT: '0',
      ADMIN_TOKENS: `ana=${ADMIN.ana}`,
      LOG_LEVEL: 'info',
    })
    services.push(api)
    const line = await api.logged('listening on http://')
    const url = /listening on (http:\/\/[\d.]+:\d+)/.exec(String(line.msg))?.[1]
    if (!url) throw new Error(`${name} logged no address: ${line.msg}`)
    return url
  }

  async function startWorker(name: string): Promise<Worker> {
    const worker = startService(name, ENTRY_POINTS.worker, {
      ...sharedEnv(),
      WORKER_QUEUES: 'messages',
      WHATSAPP_API_URL: fake.url,
      WHATSAPP_ACCESS_TOKEN: tokenOf(name),
      WHATSAPP_PHONE_NUMBER_ID: NUMBER,
      PLATFORM_RATE_PER_SECOND: String(RATE_PER_SECOND),
      MESSAGES_CONCURRENCY: String(CONCURRENCY),
      MESSAGES_BACKOFF_MS: '20',
      // Short locks, so the killed worker's jobs are found stalled within seconds; long enough that a
      // live worker on this loaded machine never loses one (a lost lock would send a message twice).
      MESSAGES_LOCK_MS: '4000',
      MESSAGES_STALLED_INTERVAL_MS: '1000',
      METRICS_PORT: '0',
      // After its drain, /metrics stays up this long: the test reads its final counts then.
      METRICS_SHUTDOWN_LINGER_MS: '5000',
      LOG_LEVEL: 'info',
    })
    services.push(worker)
    const listening = await worker.logged('metrics listening')
    await worker.logged('Dispatch worker running')
    return Object.assign(worker, { metricsUrl: String(listening.url) })
  }

  /** SIGTERM, then the scrape taken once its work has stopped: the process's final counts. */
  async function stopGracefully(worker: Worker): Promise<Sample[]> {
    worker.child.kill('SIGTERM')
    await worker.logged('metrics stay up for a last scrape')
    return scrape(worker.metricsUrl, METRICS_TOKEN)
  }

  beforeAll(async () => {
    world = await createWorld()
    if (redis === 'cluster') {
      cluster = await startRedisCluster({ masters: 3 })
      world = { ...world, redisUrl: cluster.url }
    }
    fake = await startFakeWhatsApp({ latencyMs: 25 })
    apis.push(...(await Promise.all([startApi('api-1'), startApi('api-2')])))
    const [created] = await Promise.all([
      fetch(`${apis[0]}/api/api-keys/request`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ clientName: 'Acme at scale', email: 'ops@acme.test', scopes: SEND_SCOPES }),
      }),
      ...['worker-1', 'worker-2', 'worker-3'].map((name) => startWorker(name)),
    ])
    expect(created.status).toBe(201)
    const requested = (await created.json()) as { id: string; key: string }
    key = requested.key
    // Through the admin API: approved, and allowed far more than the default 100 messages a second.
    for (const [method, path, body] of [
      ['POST', `/api/admin/api-keys/${requested.id}/approve`, undefined],
      ['PATCH', `/api/admin/api-keys/${requested.id}`, { ratePerSecond: 100_000 }],
    ] as const) {
      const res = await fetch(`${apis[1]}${path}`, {
        method,
        headers: { ...asAdmin(), ...(body ? { 'content-type': 'application/json' } : {}) },
        ...(body ? { body: JSON.stringify(body) } : {}),
      })
      expect(res.status, await res.text()).toBe(200)
    }
  }, 120_000)

  afterAll(async () => {
    // One line for the CI log, whatever happened (figures not reached are "?").
    const seconds = ((Date.now() - run.began) / 1000).toFixed(1)
    console.log(
      `many processes${cluster ? ' on a Redis Cluster' : ''}: ${run.accepted.length} messages accepted through 2 APIs, ${run.delivered} delivered by 4 workers (SIGTERM at ${SIGTERM_AT} sent, SIGKILL at ${SIGKILL_AT}); ${run.sentTwice ?? '?'} sent twice (in flight in the killed worker, at most ${CONCURRENCY}); ${run.uncounted ?? '?'} sends uncounted (counted by the killed worker after its last scrape, at most ${run.sentAfterKill ? run.sentAfterKill - run.sentBeforeLastScrape : '?'}); ${seconds} s`,
    )
    for (const service of services) if (service.running()) service.child.kill('SIGKILL')
    await Promise.all(services.map((service) => service.exited))
    await fake?.close()
    if (cluster) await cluster.stop()
    else if (world) await deleteKeysUnder(world.redisUrl, world.queuePrefix)
    await world?.close()
  })

  const countSent = async () =>
    (await world.sql<{ n: number }[]>`select count(*)::int as n from messages where status = 'sent'`)[0]?.n ??
    0
  const untilSent = (n: number) =>
    waitFor(async () => (await countSent()) >= n, {
      what: `${n} messages sent`,
      timeoutMs: 120_000,
      intervalMs: 100,
    })

  /** What the run leaves for the assertions. */
  const run = {
    acceptedByApi: new Map<string, string[]>(),
    accepted: [] as string[],
    /** Platform ids recorded when the SIGKILLed worker died: none of these may go out again. */
    recordedAtKill: new Map<string, string>(),
    /** Messages recorded sent just before the killed worker's last scrape, and just after its death. */
    sentBeforeLastScrape: 0,
    sentAfterKill: 0,
    /** Each worker's final scrape (the SIGKILLed one's: its last before the kill). */
    scrapes: new Map<string, Sample[]>(),
    exits: new Map<string, { code: number | null; signal: NodeJS.Signals | null }>(),
    began: Date.now(),
    /** For the summary line: messages the platform got, how many twice, sends the killed worker's counter lost. */
    delivered: 0,
    sentTwice: undefined as number | undefined,
    uncounted: undefined as number | undefined,
  }

  describe(`two APIs and four workers (one stopped, one killed) on ${redis === 'cluster' ? 'a 3-master Redis Cluster' : 'one Redis'} and Postgres`, () => {
    it('deliver every accepted message, none twice once its platform id was recorded', async () => {
      onTestFailed(() => console.log(services.map((service) => serviceReport(service)).join('\n')))
      const workers = new Map(
        services.filter((s): s is Worker => 'metricsUrl' in s).map((worker) => [worker.name, worker]),
      )
      const worker = (name: string) => workers.get(name) as Worker

      const chaos = async () => {
        await untilSent(SIGTERM_AT)
        run.scrapes.set('worker-1', await stopGracefully(worker('worker-1')))

        await untilSent(SIGKILL_AT)
        // A SIGKILLed process's counters die with it, as in Prometheus: what it counted after its
        // last scrape is lost. Postgres' count just before that scrape bounds the loss (below).
        run.sentBeforeLastScrape = await countSent()
        run.scrapes.set('worker-2', await scrape(worker('worker-2').metricsUrl, METRICS_TOKEN))
        worker('worker-2').child.kill('SIGKILL')
        run.exits.set('worker-2', await worker('worker-2').exited)
        run.sentAfterKill = await countSent()
        const recorded = await world.sql<{ id: string; platform_message_id: string }[]>`
          select id, platform_message_id from messages where platform_message_id is not null`
        for (const row of recorded) run.recordedAtKill.set(row.id, row.platform_message_id)

        const fourth = await startWorker('worker-4')
        workers.set(fourth.name, fourth)
      }
      const [acceptedByApi] = await Promise.all([
        sendMessages({ apis, key, batches: BATCHES, batchSize: BATCH_SIZE, singles: SINGLES, parallel: 8 }),
        chaos(),
      ])
      run.acceptedByApi = acceptedByApi
      run.accepted = [...acceptedByApi.values()].flat()
      expect(run.accepted).toHaveLength(MESSAGES)
      expect(new Set(run.accepted).size).toBe(MESSAGES)
      // The kill landed midway: messages were still to be delivered after it.
      expect(run.sentAfterKill).toBeLessThan(MESSAGES)

      await waitFor(
        async () => {
          const [row] = await world.sql<{ n: number }[]>`
            select count(*)::int as n from messages
            where status in ('sent', 'delivered', 'read', 'failed', 'expired', 'canceled')`
          return (row?.n ?? 0) >= MESSAGES
        },
        { what: 'every message in a final status', timeoutMs: 120_000, intervalMs: 250 },
      )
      // The survivors stop too, so their final counts are known.
      for (const name of ['worker-3', 'worker-4']) run.scrapes.set(name, await stopGracefully(worker(name)))
      for (const name of ['worker-1', 'worker-3', 'worker-4']) run.exits.set(name, await worker(name).exited)

      // Stopped with SIGTERM: each finished its in-flight work and exited 0.
      for (const name of ['worker-1', 'worker-3', 'worker-4']) {
        expect(run.exits.get(name), `${name}\n${worker(name).stderr()}`).toEqual({ code: 0, signal: null })
      }
      expect(run.exits.get('worker-2')).toEqual({ code: null, signal: 'SIGKILL' })

      const rows = await world.sql<{ id: string; status: string; platform_message_id: string | null }[]>`
        select id, status, platform_message_id from messages`
      expect(rows).toHaveLength(MESSAGES)
      expect(rows.filter((r) => r.status !== 'sent')).toEqual([])
      expect(new Set(rows.map((r) => r.id))).toEqual(new Set(run.accepted))

      const sends = acceptedSends(fake.requests)
      // Every accepted message reached the platform, and the platform saw nothing else.
      expect(run.accepted.filter((id) => !sends.has(id))).toEqual([])
      expect(sends.size).toBe(MESSAGES)
      for (const row of rows) {
        // The platform id stored is one the fake gave for this very message.
        const given = sends.get(row.id)?.map((r) => r.platformMessageId)
        expect(given, `message ${row.id}`).toContain(row.platform_message_id)
      }
      // Recorded when the worker died: sent exactly once, and the record never changed.
      expect(run.recordedAtKill.size).toBeGreaterThanOrEqual(SIGKILL_AT)
      for (const [id, platformMessageId] of run.recordedAtKill) {
        expect(sends.get(id), `message ${id}`).toHaveLength(1)
        expect(rows.find((r) => r.id === id)?.platform_message_id).toBe(platformMessageId)
      }
      // The one window the design leaves: a send in flight in the killed worker, its platform id not
      // yet recorded, is sent again by the worker that takes its job over. At most one job per slot.
      const twice = [...sends].filter(([, requests]) => requests.length > 1)
      for (const [id, requests] of twice) {
        expect(requests, `message ${id}`).toHaveLength(2)
        expect(senderOf(requests[0] as CloudApiRequest), `message ${id}`).toBe('worker-2')
        expect(run.recordedAtKill.has(id), `message ${id}`).toBe(false)
      }
      expect(twice.length).toBeLessThanOrEqual(CONCURRENCY)
      run.delivered = sends.size
      run.sentTwice = twice.length
    }, 170_000)

    it("each process's counters add up to what Postgres holds", async () => {
      expect(run.scrapes.size, 'the run above completed').toBe(4)
      const [{ n: stored } = { n: -1 }] = await world.sql<
        { n: number }[]
      >`select count(*)::int as n from messages`
      const sentInPostgres = await countSent()

      // Accepted: both APIs are up, so their counters are whole. Each counts what it answered 202.
      let acceptedSum = 0
      for (const [api, ids] of run.acceptedByApi) {
        const accepted = total(
          await scrape(`${api}/metrics`, METRICS_TOKEN),
          'dispatch_messages_accepted_total',
        )
        expect(accepted, api).toBe(ids.length)
        acceptedSum += accepted
      }
      expect(acceptedSum).toBe(stored)

      // Sent: a worker counts a message when it records it sent, with the platform id of its own send,
      // so each worker's count is the number of stored platform ids the fake issued to its token.
      const sends = acceptedSends(fake.requests)
      const recordedBy = new Map<string, number>()
      const rows = await world.sql<{ id: string; platform_message_id: string }[]>`
        select id, platform_message_id from messages where status = 'sent'`
      for (const row of rows) {
        const send = sends.get(row.id)?.find((r) => r.platformMessageId === row.platform_message_id)
        const worker = send ? senderOf(send) : 'unknown'
        recordedBy.set(worker, (recordedBy.get(worker) ?? 0) + 1)
      }
      const sentBy = (worker: string) =>
        total(run.scrapes.get(worker) as Sample[], 'dispatch_messages_sent_total')
      // Stopped with SIGTERM and scraped after their drain: exact.
      for (const worker of ['worker-1', 'worker-3', 'worker-4']) {
        expect(sentBy(worker), worker).toBe(recordedBy.get(worker) ?? 0)
      }
      const sum = ['worker-1', 'worker-2', 'worker-3', 'worker-4'].reduce((a, w) => a + sentBy(w), 0)
      // The SIGKILLed worker's counter was last read by the scrape just before the kill; what it
      // recorded after that scrape was counted only in the process that died. Each of those records
      // was committed after the Postgres count taken just before that scrape and before the count
      // taken once the process had exited, so:
      //   0 ≤ sent in Postgres − Σ counters ≤ (sent after the kill) − (sent before the last scrape).
      const lost = sentInPostgres - sum
      expect(lost).toBe((recordedBy.get('worker-2') ?? 0) - sentBy('worker-2'))
      expect(lost).toBeGreaterThanOrEqual(0)
      expect(lost).toBeLessThanOrEqual(run.sentAfterKill - run.sentBeforeLastScrape)
      run.uncounted = lost
    })
  })
}

/** The fake's accepted sends, by message id, in arrival order. */
function acceptedSends(requests: CloudApiRequest[]) {
  const byMessage = new Map<string, CloudApiRequest[]>()
  for (const request of requests) {
    if (!request.platformMessageId || !request.messageId) continue
    const list = byMessage.get(request.messageId) ?? []
    list.push(request)
    byMessage.set(request.messageId, list)
  }
  return byMessage
}

/** Which worker sent a request: each sends with its own token. */
const senderOf = (request: CloudApiRequest) =>
  String(request.headers.authorization).replace(`Bearer ${tokenOf('')}`, '')
