/**
 * Delivery benchmark: messages per second through the real messages worker (sandbox adapter, no
 * latency, records written to Postgres) versus a BullMQ worker with a no-op processor, on the same
 * number of queued jobs and the same concurrency, in this process. Prints figure, baseline, ratio.
 *
 *   pnpm --filter @dispatch/worker bench    (BENCH_JOBS, BENCH_CONCURRENCY, BENCH_ROUNDS)
 */
import { randomUUID } from 'node:crypto'
import { MESSAGE_JOB_OPTIONS, type MessageJob, QueueNames } from '@dispatch/contracts'
import { createDb, generateApiKey, insertApiKey } from '@dispatch/db'
import { createBenchWorld, median, printComparison } from '@dispatch/testing/bench'
import { Queue, Worker } from 'bullmq'
import { Redis } from 'ioredis'
import pino from 'pino'
import { createSandboxPlatform } from '../src/platforms/sandbox.ts'
import { startMessagesWorker } from '../src/workers/messages.ts'

const jobs = Number(process.env.BENCH_JOBS ?? 10_000)
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 50)
const rounds = Number(process.env.BENCH_ROUNDS ?? 3)

const world = await createBenchWorld('delivery')
const { db, sql, close: closeDb } = createDb(world.databaseUrl)
const connections: Redis[] = []
const connection = () => {
  const client = new Redis(world.redisUrl, { maxRetriesPerRequest: null })
  connections.push(client)
  return client
}
const logger = pino({ level: 'silent' })

const { keyHash, keyPrefix } = generateApiKey('development')
const key = await insertApiKey(db, {
  keyHash,
  keyPrefix,
  environment: 'development',
  clientName: 'Bench',
  email: 'bench@dispatch.test',
  scopes: ['send:free-text'],
  requestedTenantId: null,
  createdAt: new Date(),
})

/** Fills a queue with `jobs` text messages, as the API adds them. */
async function fill(queue: Queue<MessageJob>) {
  for (let start = 0; start < jobs; start += 1000) {
    const batch = Array.from({ length: Math.min(1000, jobs - start) }, () => {
      const messageId = randomUUID()
      const data: MessageJob = {
        messageId,
        apiKeyId: key.id,
        acceptedAt: new Date().toISOString(),
        message: { type: 'text', body: { phone: '+5511987654321', text: 'Your code is 123456' } },
      }
      return { name: 'text', data, opts: { ...MESSAGE_JOB_OPTIONS, jobId: messageId } }
    })
    await queue.addBulk(batch)
  }
}

/** Starts `start()` on a full queue and times it until every job has completed. */
async function timeDrain(queueName: string, start: () => Worker): Promise<number> {
  const queue = new Queue<MessageJob>(queueName, { connection: connection(), prefix: world.queuePrefix })
  await fill(queue)
  const began = performance.now()
  const worker = start()
  let done = 0
  await new Promise<void>((resolve, reject) => {
    worker.on('completed', () => {
      if (++done === jobs) resolve()
    })
    worker.on('failed', (_job, error) => reject(error))
  })
  const seconds = (performance.now() - began) / 1000
  await worker.close()
  await queue.obliterate({ force: true })
  await queue.close()
  return jobs / seconds
}

const baselineRun = () =>
  timeDrain(
    'bench-noop',
    () =>
      new Worker('bench-noop', async () => ({ platformMessageId: 'noop' }), {
        connection: connection(),
        prefix: world.queuePrefix,
        concurrency,
      }),
  )

const deliveryRun = () =>
  timeDrain(QueueNames.messages, () =>
    startMessagesWorker({
      db,
      sql,
      platform: createSandboxPlatform({ latencyMs: 0, failureRate: 0, phoneNumberId: '100000000000001' }),
      logger,
      claims: connection(),
      connection: connection(),
      prefix: world.queuePrefix,
      concurrency,
      ratePerSecond: 1_000_000,
      backoffMs: 1000,
      lockMs: 30_000,
      stalledIntervalMs: 30_000,
    }),
  )

try {
  console.log(`delivery: ${jobs} queued jobs, concurrency ${concurrency}, ${rounds} alternating rounds`)
  const base: number[] = []
  const real: number[] = []
  for (let round = 1; round <= rounds; round++) {
    base.push(await baselineRun())
    real.push(await deliveryRun())
    console.log(
      `  round ${round}/${rounds}: sandbox delivery ${Math.round(real.at(-1) ?? 0)} msg/s; no-op ${Math.round(base.at(-1) ?? 0)} jobs/s`,
    )
  }
  const [recorded] = await db.execute<{ count: string }>(
    `select count(*) from messages where status = 'sent'`,
  )
  if (Number(recorded?.count) !== jobs * rounds)
    throw new Error(`expected ${jobs * rounds} sent records, found ${recorded?.count}`)
  printComparison({
    name: 'delivery throughput (sandbox)',
    figure: median(real),
    baseline: median(base),
    unit: 'msg/s',
    better: 'higher',
    aim: '≥ 0.8',
  })
} finally {
  for (const client of connections) client.disconnect()
  await closeDb()
  await world.drop()
}
