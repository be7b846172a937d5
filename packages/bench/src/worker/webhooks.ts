/**
 * Webhook fan-out benchmark: events per second delivered by the real webhooks worker (its metrics
 * on, jobs queued in Redis, endpoints read from Postgres, per-endpoint gate in Redis, Standard
 * Webhooks signature, every attempt written to Postgres) versus a bare loop of signed POSTs of the
 * same bodies at the same concurrency, both to one receiver answering 204. Prints figure,
 * baseline, ratio.
 *
 * The receiver runs in a child process (webhooks-receiver.ts): it plays the sender's server, another
 * machine in production, so its work must not take the event loop of the side being measured.
 *
 * The worker gets its jobs as the outbox relay makes them: each endpoint's events in bundles of
 * BENCH_BUNDLE (the default of WEBHOOK_BUNDLE_SIZE; 1 for one job per event).
 *
 * With BENCH_BREAKDOWN=1 each round also drains one job per event with a BullMQ worker whose
 * processor does nothing, and with one that sends the bare signed POST: what the queue alone costs;
 * and runs the bare loop through undici, the worker's own HTTP client, beside node:http's.
 *
 *   pnpm --filter @dispatch/bench bench:webhooks
 *   (BENCH_JOBS, BENCH_CONCURRENCY, BENCH_ROUNDS, BENCH_ENDPOINTS, BENCH_BUNDLE, BENCH_BREAKDOWN)
 */
import { createHmac, createSecretKey, type KeyObject, randomBytes } from 'node:crypto'
import { Agent, request } from 'node:http'
import {
  QueueNames,
  WEBHOOK_JOB_OPTIONS,
  type WebhookJob,
  webhookEventBody,
  webhookJobId,
} from '@dispatch/contracts'
import { createDb, insertWebhookEndpoint } from '@dispatch/db'
import { createSecretBox } from '@dispatch/runtime'
import { Queue, Worker } from 'bullmq'
import { Redis } from 'ioredis'
import pino from 'pino'
import { Agent as UndiciAgent } from 'undici'
import { WorkerMetrics } from '../../../../apps/worker/src/metrics/registry.ts'
import { type WebhooksQueueAdd, webhookJobsFor } from '../../../../apps/worker/src/shared/webhook-jobs.ts'
import {
  DEFAULT_WEBHOOK_RETRY_SCHEDULE,
  parseRetrySchedule,
} from '../../../../apps/worker/src/shared/webhook-retry-schedule.ts'
import { startWebhooksWorker } from '../../../../apps/worker/src/webhooks/worker.ts'
import { databaseBackendsCpu } from '../harness/cpu.ts'
import { insertBenchKey } from '../harness/keys.ts'
import { printComparison } from '../harness/report.ts'
import { median } from '../harness/stats.ts'
import { createBenchWorld } from '../harness/world.ts'
import { armReceiver, checkTally, startReceiver } from './webhooks-receiver.ts'

const jobCount = Number(process.env.BENCH_JOBS ?? 10_000)
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 50)
const rounds = Number(process.env.BENCH_ROUNDS ?? 5)
const endpointCount = Number(process.env.BENCH_ENDPOINTS ?? 4)
const bundleSize = Number(process.env.BENCH_BUNDLE ?? 20)
const breakdown = process.env.BENCH_BREAKDOWN === '1'

async function main() {
  const world = await createBenchWorld('webhooks')
  const { db, sql, close: closeDb } = createDb(world.databaseUrl)
  const connections: Redis[] = []
  // Commands sent by the side being measured, counted on the client: the Redis server is shared
  // with other sessions, so its own CPU cannot be read for this run alone.
  let redisCommands = 0
  const connection = () => {
    const client = new Redis(world.redisUrl, { maxRetriesPerRequest: null })
    const send = client.sendCommand.bind(client)
    client.sendCommand = (...args: Parameters<typeof send>) => {
      redisCommands++
      return send(...args)
    }
    connections.push(client)
    return client
  }
  /** CPU (µs, user + system) of the Postgres backends serving this run's database, from /proc. */
  const postgresCpuUs = async () =>
    [...(await databaseBackendsCpu(sql)).values()].reduce((sum, seconds) => sum + seconds, 0) * 1_000_000
  const receiver = await startReceiver()

  try {
    const key = await insertBenchKey(db, 'Bench', ['send:free-text', 'manage:webhooks'])
    const endpoints = await Promise.all(
      Array.from({ length: endpointCount }, (_, i) =>
        insertWebhookEndpoint(db, {
          apiKeyId: key.id,
          url: `${receiver.url}/hooks/${i + 1}`,
          events: ['message.delivered'],
          description: null,
          secret: `whsec_${randomBytes(32).toString('base64')}`,
          now: new Date(),
        }),
      ),
    )
    const secrets = Object.fromEntries(endpoints.map((e) => [new URL(e.url).pathname, e.secret]))

    // Events as the trigger stores them (ids carrying their time, as dispatch_emit_webhook_event
    // writes them), so attempts can be recorded against them; each event goes to every endpoint,
    // as the relay fans it out.
    const eventCount = Math.ceil(jobCount / endpointCount)
    const events = await sql<Array<{ id: string; type: string; payload: unknown }>>`
      insert into webhook_events (id, api_key_id, type, message_id, sequence, payload)
      select 'msg_' || lpad(to_hex(floor(extract(epoch from now()) * 1000)::bigint), 12, '0') || '7'
          || substr(replace(gen_random_uuid()::text, '-', ''), 14), ${key.id}, 'message.delivered', m, 2,
        jsonb_build_object('type', 'message.delivered',
          'timestamp', to_char(now() at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
          'data', jsonb_build_object('messageId', m, 'clientReference', 'order-' || g, 'type', 'text',
            'phone', '+5511987654321', 'status', 'delivered', 'attempts', 1, 'error', null, 'sequence', 2))
      from generate_series(1, ${eventCount}) g, gen_random_uuid() m
      returning id, type, payload`
    const deliveries = events
      .flatMap((event) =>
        endpoints.map((endpoint) => ({
          eventId: event.id,
          endpointId: endpoint.id,
          eventType: event.type,
          payload: event.payload,
        })),
      )
      .slice(0, jobCount)
    const jobs: WebhookJob[] = deliveries.map((d) => ({
      eventId: d.eventId,
      endpointId: d.endpointId,
      eventType: d.eventType,
      body: webhookEventBody(d.payload),
      reason: 'event' as const,
    }))
    /** One job per event, as the breakdown's bare workers take them. */
    const singles = (batch: WebhookJob[]): WebhooksQueueAdd[] =>
      batch.map((data) => ({
        name: data.eventType,
        data,
        opts: { ...WEBHOOK_JOB_OPTIONS, jobId: webhookJobId(data.eventId, data.endpointId) },
      }))
    /** The jobs of the same deliveries as the outbox relay makes them. */
    const relayed = webhookJobsFor(deliveries, bundleSize)
    // Warm-up: a round's worth, so that each side's code is compiled and its heap grown to its
    // working size before the first measured round.
    const warmUpCount = deliveries.length
    const warmUpRelayed = webhookJobsFor(deliveries.slice(0, warmUpCount), bundleSize)
    const urls = new Map(endpoints.map((e) => [e.id, e.url]))
    const keys = new Map(
      endpoints.map((e) => [e.id, createSecretKey(Buffer.from(e.secret.slice('whsec_'.length), 'base64'))]),
    )

    const logger = pino({ level: 'silent' })
    /** Metrics on, as a worker serving METRICS_PORT counts them: every outcome counted. */
    const metrics = new WorkerMetrics()
    const schedule = parseRetrySchedule(DEFAULT_WEBHOOK_RETRY_SCHEDULE)

    /**
     * A run's rate, and per event: this process's CPU (user + system, µs), the CPU of the Postgres
     * backends of this run's database (µs; /proc counts in 10-ms ticks) and the Redis commands sent.
     */
    interface Run {
      perSecond: number
      cpuUs: number
      postgresUs: number
      redisCommands: number
    }
    const timed = async (count: number, work: () => Promise<void>): Promise<Run> => {
      const postgres = await postgresCpuUs()
      const commands = redisCommands
      const cpu = process.cpuUsage()
      const began = performance.now()
      await work()
      const { user, system } = process.cpuUsage(cpu)
      return {
        perSecond: count / ((performance.now() - began) / 1000),
        cpuUs: (user + system) / count,
        postgresUs: ((await postgresCpuUs()) - postgres) / count,
        redisCommands: (redisCommands - commands) / count,
      }
    }

    const startRealWorker = () =>
      startWebhooksWorker({
        db,
        logger,
        connection: connection(),
        gateConnection: connection(),
        queueConnection: connection(),
        prefix: world.queuePrefix,
        concurrency,
        timeoutMs: 15_000,
        schedule,
        // Raised so the per-endpoint limits never refuse: the gate's round trips are still made.
        endpointConcurrency: concurrency,
        endpointRatePerSecond: 1_000_000,
        slowDownMs: 5000,
        disableAfterMs: 5 * 24 * 3600 * 1000,
        allowPrivate: true,
        production: false,
        box: createSecretBox({ APP_ENV: 'development' }),
        metrics,
      })
    const startBareWorker = (handle: (job: WebhookJob) => Promise<void>) => () =>
      new Worker<WebhookJob>(QueueNames.webhooks, (job) => handle(job.data), {
        connection: connection(),
        prefix: world.queuePrefix,
        concurrency,
      })

    /**
     * A worker started on a queue filled with `batch`, timed from its start until the receiver has
     * every request (or, for a worker that sends nothing, until every job completed).
     */
    async function queueRun(
      side: string,
      adds: WebhooksQueueAdd[],
      deliveryCount: number,
      start: () => Worker,
      sends = true,
    ): Promise<Run> {
      const queue = new Queue(QueueNames.webhooks, {
        connection: connection(),
        prefix: world.queuePrefix,
      })
      for (let from = 0; from < adds.length; from += 1000) await queue.addBulk(adds.slice(from, from + 1000))
      const batch = { length: deliveryCount }
      const arrived = await armReceiver(receiver.child, { expect: batch.length, secrets })
      let worker: Worker | undefined
      let failed: (error: Error) => void = () => {}
      const failure = new Promise<never>((_, reject) => {
        failed = reject
      })
      let finished: Promise<void> = Promise.resolve()
      const [postgres, commands] = [await postgresCpuUs(), redisCommands]
      const run = await timed(batch.length, async () => {
        const started = start()
        worker = started
        let completed = 0
        finished = new Promise<void>((resolve) => {
          started.on('completed', () => {
            if (++completed === adds.length) resolve()
          })
          started.on('failed', (_job, error) => failed(error))
          started.on('error', failed)
        })
        if (sends) checkTally(side, await Promise.race([arrived(), failure]), batch.length)
        else await Promise.race([finished, failure])
      })
      // Not timed: the last attempts are written after their POSTs were answered. Counted, though.
      await Promise.race([finished, failure])
      run.postgresUs = ((await postgresCpuUs()) - postgres) / batch.length
      run.redisCommands = (redisCommands - commands) / batch.length
      await worker?.close()
      await queue.obliterate({ force: true })
      await queue.close()
      return run
    }

    const agent = new Agent({ keepAlive: true })
    /** One signed POST as a bare client would send it: node:http keep-alive, HMAC per request. */
    const post = (job: WebhookJob) =>
      new Promise<void>((resolve, reject) => {
        const timestamp = Math.floor(Date.now() / 1000)
        const signature = createHmac('sha256', keys.get(job.endpointId) as KeyObject)
          .update(`${job.eventId}.${timestamp}.${job.body}`)
          .digest('base64')
        const body = Buffer.from(job.body)
        const req = request(urls.get(job.endpointId) as string, {
          method: 'POST',
          agent,
          headers: {
            'content-type': 'application/json',
            'content-length': String(body.length),
            'webhook-id': job.eventId,
            'webhook-timestamp': String(timestamp),
            'webhook-signature': `v1,${signature}`,
          },
        })
        req.on('error', reject)
        req.on('response', (res) => {
          if (res.statusCode !== 204) reject(new Error(`receiver answered ${res.statusCode}`))
          res.resume()
          res.on('end', resolve)
        })
        req.end(body)
      })

    const undiciAgent = new UndiciAgent()
    const parsedUrls = new Map(endpoints.map((e) => [e.id, new URL(e.url)]))
    /** The same signed POST through undici, the worker's own client (breakdown only). */
    const undiciPost = async (job: WebhookJob) => {
      const timestamp = Math.floor(Date.now() / 1000)
      const signature = createHmac('sha256', keys.get(job.endpointId) as KeyObject)
        .update(`${job.eventId}.${timestamp}.${job.body}`)
        .digest('base64')
      const url = parsedUrls.get(job.endpointId) as URL
      const res = await undiciAgent.request({
        origin: url.origin,
        path: url.pathname,
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'webhook-id': job.eventId,
          'webhook-timestamp': String(timestamp),
          'webhook-signature': `v1,${signature}`,
        },
        body: job.body,
      })
      if (res.statusCode !== 204) throw new Error(`receiver answered ${res.statusCode}`)
      await res.body.dump()
    }

    /** `concurrency` loops POSTing `batch` from memory, timed to the last arrival. */
    async function baselineRun(batch: WebhookJob[], send = post): Promise<Run> {
      const arrived = await armReceiver(receiver.child, { expect: batch.length, secrets })
      return timed(batch.length, async () => {
        let next = 0
        const loop = async () => {
          while (next < batch.length) await send(batch[next++] as WebhookJob)
        }
        await Promise.all(Array.from({ length: concurrency }, loop))
        checkTally('baseline', await arrived(), batch.length)
      })
    }

    console.log(
      `webhook fan-out: ${jobs.length} deliveries (${eventCount} events × ${endpointCount} endpoints) ` +
        `in ${relayed.length} jobs (bundles of ${bundleSize}), concurrency ${concurrency}, ` +
        `${rounds} alternating rounds, receiver in a child process`,
    )
    const sides = {
      'webhooks worker': () => queueRun('worker', relayed, jobs.length, startRealWorker),
      'bare signed POSTs': () => baselineRun(jobs),
      ...(breakdown
        ? {
            'BullMQ no-op': () =>
              queueRun(
                'BullMQ no-op',
                singles(jobs),
                jobs.length,
                startBareWorker(async () => {}),
                false,
              ),
            'BullMQ + bare POST': () =>
              queueRun('BullMQ + bare POST', singles(jobs), jobs.length, startBareWorker(post)),
            'bare signed POSTs through undici': () => baselineRun(jobs, undiciPost),
          }
        : {}),
    }
    // A warm-up of each, so none pays for JIT compilation in its measured run; the worker's twice:
    // after one warm-up of 3,000 or of 10,000 deliveries the first measured round of both sides
    // ran at 0.6-0.7 of the later ones (the worker's by up to half); after these, none did. A
    // worker in production runs for hours.
    const warmUp = jobs.slice(0, warmUpCount)
    await baselineRun(warmUp)
    for (let i = 0; i < 2; i++) await queueRun('worker', warmUpRelayed, warmUp.length, startRealWorker)
    const runs = new Map<string, Run[]>()
    for (let round = 1; round <= rounds; round++) {
      // Alternating, so load that drifts during the run moves every side alike.
      const line: string[] = []
      for (const [side, run] of Object.entries(sides)) {
        const result = await run()
        runs.set(side, [...(runs.get(side) ?? []), result])
        line.push(
          `${side} ${Math.round(result.perSecond)} events/s (${Math.round(result.cpuUs)} µs CPU each, ` +
            `Postgres ${Math.round(result.postgresUs)} µs, ${result.redisCommands.toFixed(2)} Redis commands)`,
        )
      }
      console.log(`  round ${round}/${rounds}: ${line.join('; ')}`)
    }
    const medianOf = (side: string) => median((runs.get(side) ?? []).map((r) => r.perSecond))
    for (const side of Object.keys(sides).slice(2)) {
      printComparison({
        name: `  ${side} (breakdown) vs bare signed POSTs`,
        figure: medianOf(side),
        baseline: medianOf('bare signed POSTs'),
        unit: 'events/s',
        better: 'higher',
      })
    }
    const [recorded] = await sql<[{ count: string }]>`
      select count(*) from webhook_attempts where status_code = 204`
    const expected = jobs.length * rounds + 2 * warmUp.length
    if (Number(recorded?.count) !== expected) {
      throw new Error(`expected ${expected} attempts recorded, found ${recorded?.count}`)
    }
    agent.destroy()
    await undiciAgent.close()
    printComparison({
      name: 'webhook fan-out throughput',
      figure: medianOf('webhooks worker'),
      baseline: medianOf('bare signed POSTs'),
      unit: 'events/s',
      better: 'higher',
      aim: '≥ 0.7',
    })
  } finally {
    receiver.child.disconnect()
    for (const client of connections) client.disconnect()
    await closeDb()
    await world.drop()
  }
}

await main()
