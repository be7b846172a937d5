import { randomUUID } from 'node:crypto'
import {
  DEFAULT_SENDER_ID,
  type MessageJob,
  type OutboundMessage,
  QueueNames,
  SENDER_CHANGES_CHANNEL,
} from '@dispatch/contracts'
import { createDb, type Db, generateApiKey, insertApiKey } from '@dispatch/db'
import { evalLuaScript } from '@dispatch/runtime/lua-scripts'
import {
  FAIR_ENQUEUE_SCRIPT,
  fairActiveKey,
  fairKeys,
  MESSAGE_JOB_OPTIONS,
} from '@dispatch/runtime/message-handoff'
import {
  captureLogs,
  createTestDatabase,
  type FakeWhatsApp,
  startFakeWhatsApp,
  testQueuePrefix,
  testRedisUrl,
} from '@dispatch/testing'
import { Queue } from 'bullmq'
import { Redis } from 'ioredis'
import { createWorkerLogger, parseWorkerConfig, type RunningWorker, startWorker } from '../../src/index.ts'

export const PHONE_NUMBER_ID = '106540352242922'
export const ACCESS_TOKEN = 'EAAG-test-access-token-never-logged'

/** An API key row: every message belongs to one. */
export function insertSenderKey(db: Db) {
  const { keyHash, keyPrefix } = generateApiKey('development')
  return insertApiKey(db, {
    keyHash,
    keyPrefix,
    environment: 'development',
    clientName: 'Acme',
    email: 'ops@acme.test',
    scopes: ['send:free-text'],
    requestedTenantId: null,
    createdAt: new Date(),
  })
}

/**
 * A database with one API key, a queue prefix, and a fake Cloud API; on the run's Redis, or on
 * `redisUrl` (a private one a test stops and starts).
 */
export async function createDeliveryWorld(options: { redisUrl?: string } = {}) {
  const redisUrl = options.redisUrl ?? testRedisUrl()
  const database = await createTestDatabase()
  const queuePrefix = testQueuePrefix()
  const { db, close } = createDb(database.url, { max: 1 })
  const key = await insertSenderKey(db)
  await close()
  const fake = await startFakeWhatsApp()
  const queue = new Queue<MessageJob>(QueueNames.messages, {
    connection: { url: redisUrl },
    prefix: queuePrefix,
  })
  const workers: RunningWorker[] = []

  /** The env a worker process of this world runs with: the Cloud API adapter on the fake. */
  const workerEnv = (env: Record<string, string> = {}) => ({
    DATABASE_URL: database.url,
    REDIS_URL: redisUrl,
    QUEUE_PREFIX: queuePrefix,
    WORKER_QUEUES: 'messages',
    WHATSAPP_API_URL: fake.url,
    WHATSAPP_ACCESS_TOKEN: ACCESS_TOKEN,
    WHATSAPP_PHONE_NUMBER_ID: PHONE_NUMBER_ID,
    MESSAGES_BACKOFF_MS: '20',
    PLATFORM_RATE_PER_SECOND: '10000',
    LOG_LEVEL: 'info',
    ...env,
  })

  return {
    sql: database.sql,
    redisUrl,
    queuePrefix,
    queue,
    fake: fake as FakeWhatsApp,
    apiKeyId: key.id,
    workerEnv,
    /** The real worker, in process; its log lines captured. */
    async startWorker(env: Record<string, string> = {}) {
      const logs = captureLogs()
      const config = parseWorkerConfig(workerEnv(env))
      const worker = await startWorker(config, createWorkerLogger(config, logs.stream))
      workers.push(worker)
      return Object.assign(worker, { logs })
    },
    /** Tells running workers a sender changed, as the admin routes do. */
    async announceSenderChange(senderId: string) {
      const redis = new Redis(redisUrl)
      await redis.publish(`${queuePrefix}:${SENDER_CHANGES_CHANNEL}`, senderId)
      redis.disconnect()
    },
    /**
     * Stores a message for the default sender's admission, as the API does: the admitter moves it
     * into the queue at the sender's pace. `fields` add to the job (its key, `batchId`); with a
     * `sendAt` it waits scheduled until then.
     */
    async accept(
      message: OutboundMessage,
      messageId: string = randomUUID(),
      fields: Partial<MessageJob> = {},
    ) {
      const job: MessageJob = {
        messageId,
        apiKeyId: key.id,
        acceptedAt: new Date().toISOString(),
        message,
        ...fields,
      }
      const keys = fairKeys(queuePrefix, DEFAULT_SENDER_ID)
      const redis = new Redis(redisUrl)
      await evalLuaScript(
        redis,
        FAIR_ENQUEUE_SCRIPT,
        keys.jobs,
        keys.scheduled,
        keys.base,
        0,
        Date.now(),
        messageId,
        JSON.stringify(job),
        'normal',
        job.apiKeyId,
        job.sendAt ? Date.parse(job.sendAt) : 0,
      )
      await redis.sadd(fairActiveKey(queuePrefix), DEFAULT_SENDER_ID)
      redis.disconnect()
      return messageId
    },
    /** Enqueues a message straight into the default sender's queue, as an admitter does. */
    async enqueue(
      message: OutboundMessage,
      messageId: string = randomUUID(),
      fields: Partial<MessageJob> = {},
    ) {
      const job: MessageJob = {
        messageId,
        apiKeyId: key.id,
        acceptedAt: new Date().toISOString(),
        message,
        ...fields,
      }
      await queue.add(message.type, job, { ...MESSAGE_JOB_OPTIONS, jobId: messageId })
      return messageId
    },
    async message(id: string) {
      const [row] = await database.sql`select * from messages where id = ${id}`
      return row
    },
    async close() {
      for (const worker of workers) await worker.close()
      await queue.obliterate({ force: true }).catch(() => {})
      await queue.close()
      await fake.close()
      await database.drop()
    },
  }
}
export type DeliveryWorld = Awaited<ReturnType<typeof createDeliveryWorld>>

export const text = (body = 'Your code is 123456'): OutboundMessage => ({
  type: 'text',
  body: { phone: '+5511987654321', text: body },
})
