/**
 * A server under test, in a process of its own (started by `child-server.ts`'s `startServer`):
 *
 * - `app`: the real API (`buildApp`), the per-key message limit set far above the load, with an
 *   approved key holding every send scope.
 * - `baseline`: a bare Fastify server with `POST /add`, one plain BullMQ `add` per request (the
 *   job the API would build, same options, no batching, a producer connection with BullMQ's
 *   defaults), and `POST /incr`, one Redis `INCR` per request.
 *
 * Tells the parent `{url, key, pooled, poolNumber}` once listening (with BENCH_POOLED_KEY=true,
 * `pooled`: a key bound to a sender pool, `poolNumber`: a key of the pool's first number alone);
 * closes on SIGTERM or when the parent goes away.
 */
import { randomUUID } from 'node:crypto'
import { buildApp, createDeps, createLogger, parseApiConfig } from '@dispatch/api'
import { type MessageJob, QueueNames } from '@dispatch/contracts'
import { MESSAGE_JOB_OPTIONS } from '@dispatch/runtime/message-handoff'
import { Queue } from 'bullmq'
import Fastify, { type FastifyInstance } from 'fastify'
import { Redis } from 'ioredis'
import { approvedKey, pooledKeys } from './inject.ts'

const role = process.argv[2]
if (role !== 'app' && role !== 'baseline') throw new Error(`unknown role ${role}: app or baseline`)
const config = parseApiConfig({
  DATABASE_URL: process.env.DATABASE_URL,
  REDIS_URL: process.env.REDIS_URL,
  QUEUE_PREFIX: process.env.QUEUE_PREFIX,
  LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
  METRICS_ENABLED: process.env.METRICS_ENABLED,
  // A round stores over 100,000 messages on one key (the default bound) on a quiet machine.
  MESSAGE_OUTSTANDING_MAX: process.env.MESSAGE_OUTSTANDING_MAX,
  // The per-key limit stays in the path being measured, set high enough never to refuse.
  MESSAGE_RATE_PER_SECOND: '1000000000',
})

const address = (app: FastifyInstance) => {
  const info = app.server.address()
  if (!info || typeof info === 'string') throw new Error('not listening')
  return `http://127.0.0.1:${info.port}`
}

async function startApp() {
  const app = await buildApp(createDeps(config, { logger: createLogger(config) }))
  await app.listen({ host: '127.0.0.1', port: 0 })
  const key = await approvedKey(app)
  // The accept bench's pooled variant: a key bound to a three-number pool (its sends choose a number).
  // Beside it, a key of one of the pool's numbers alone: the two differ by the pool only.
  // And a key bound to a pool of that number alone: the sticky lookup and the choice, no other number.
  const { pooled, single, pooledOne } =
    process.env.BENCH_POOLED_KEY === 'true'
      ? await pooledKeys(app)
      : { pooled: '', single: '', pooledOne: '' }
  return { app, key, pooled, poolNumber: single, pooledOne, close: () => app.close() }
}

async function startBaseline() {
  const redis = new Redis(config.REDIS_URL, { enableOfflineQueue: false })
  // The queue the benchmark drains between rounds: a name of its own, beside the API's.
  const queue = new Queue<MessageJob>(`${QueueNames.messages}-baseline`, {
    connection: redis,
    prefix: config.QUEUE_PREFIX,
  })
  const app = Fastify({ loggerInstance: createLogger(config) })
  app.post('/add', async (request, reply) => {
    const messageId = randomUUID()
    const job: MessageJob = {
      messageId,
      apiKeyId: '00000000-0000-4000-8000-000000000000',
      acceptedAt: new Date().toISOString(),
      expiresAt: new Date(Date.now() + 4 * 3600_000).toISOString(),
      message: { type: 'text', body: request.body as { phone: string; text: string } },
    }
    await queue.add('text', job, { ...MESSAGE_JOB_OPTIONS, jobId: messageId })
    return reply.code(202).send({ messageId, status: 'queued' })
  })
  app.post('/incr', async (_request, reply) => {
    const n = await redis.incr(`${config.QUEUE_PREFIX}:baseline`)
    return reply.code(202).send({ n })
  })
  await app.listen({ host: '127.0.0.1', port: 0 })
  return {
    app,
    key: '',
    pooled: '',
    poolNumber: '',
    pooledOne: '',
    close: async () => {
      await app.close()
      await queue.close()
      redis.disconnect()
    },
  }
}

const server = role === 'app' ? await startApp() : await startBaseline()
let closing = false
const close = async () => {
  if (closing) return
  closing = true
  await server.close()
  process.exit(0)
}
process.on('SIGTERM', close)
process.on('disconnect', close)
process.send?.({
  url: address(server.app),
  key: server.key,
  pooled: server.pooled,
  poolNumber: server.poolNumber,
  pooledOne: server.pooledOne,
})
