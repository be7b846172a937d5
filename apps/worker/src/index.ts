import { type EmailJob, loggerOptions, QueueNames } from '@dispatch/contracts'
import { createDb } from '@dispatch/db'
import { Queue, type Worker } from 'bullmq'
import { Redis } from 'ioredis'
import pino, { type DestinationStream, type Logger } from 'pino'
import { createMailer } from './email/transport.ts'
import type { WorkerConfig } from './env.ts'
import { OutboxRelay } from './outbox-relay.ts'
import { startEmailWorker } from './workers/email.ts'

export { parseWorkerConfig, type WorkerConfig } from './env.ts'

export function createWorkerLogger(
  config: Pick<WorkerConfig, 'LOG_LEVEL'>,
  stream?: DestinationStream,
): Logger {
  return pino(loggerOptions(config.LOG_LEVEL), stream)
}

export interface RunningWorker {
  /** Stops taking work, lets in-flight jobs finish, then closes every connection. */
  close(): Promise<void>
}

/** Job retention: enough to dedupe a relayed row and to inspect failures, bounded in Redis. */
const emailJobOptions = (config: WorkerConfig) => ({
  attempts: config.EMAIL_ATTEMPTS,
  backoff: { type: 'exponential' as const, delay: config.EMAIL_BACKOFF_MS, jitter: 0.5 },
  removeOnComplete: { age: 7 * 24 * 3600, count: 10_000 },
  removeOnFail: { age: 30 * 24 * 3600 },
})

/** Starts the queues and loops that `config.roles` names, in this process. */
export async function startWorker(
  config: WorkerConfig,
  logger: Logger = createWorkerLogger(config),
): Promise<RunningWorker> {
  const { db, sql, close: closeDb } = createDb(config.DATABASE_URL)
  const closers: Array<() => Promise<void> | void> = []
  const redisClient = (options: { blocking: boolean }, name: string) => {
    const client = new Redis(config.REDIS_URL, {
      // Workers block on Redis and must wait out an outage; producers must fail fast instead.
      maxRetriesPerRequest: options.blocking ? null : 1,
      enableOfflineQueue: options.blocking,
      connectTimeout: 2000,
      // A producer call must not hang on a Redis that stopped answering (the relay holds a
      // Postgres transaction meanwhile); blocking commands have no such bound.
      ...(options.blocking ? {} : { commandTimeout: 5000 }),
    })
    client.on('error', (error) => logger.warn({ err: error, client: name }, 'redis connection error'))
    closers.push(() => client.disconnect())
    return client
  }

  let emailWorker: Worker<EmailJob> | undefined
  if (config.roles.includes('email')) {
    const mailer = createMailer(config, logger)
    closers.push(() => mailer.close())
    emailWorker = startEmailWorker({
      db,
      mailer,
      logger,
      connection: redisClient({ blocking: true }, 'email-worker'),
      prefix: config.QUEUE_PREFIX,
      concurrency: config.EMAIL_CONCURRENCY,
    })
    logger.info(
      { concurrency: config.EMAIL_CONCURRENCY, smtp: Boolean(config.SMTP_URL) },
      'e-mail worker started',
    )
  }

  let relay: OutboxRelay | undefined
  if (config.roles.includes('outbox')) {
    const emailQueue = new Queue<EmailJob>(QueueNames.email, {
      connection: redisClient({ blocking: false }, 'outbox-queue'),
      prefix: config.QUEUE_PREFIX,
      defaultJobOptions: emailJobOptions(config),
    })
    emailQueue.on('error', (error) => logger.warn({ err: error }, 'e-mail queue error'))
    closers.push(() => emailQueue.close())
    relay = new OutboxRelay({
      db,
      sql,
      emailQueue,
      logger,
      pollMs: config.OUTBOX_POLL_MS,
      batchSize: config.OUTBOX_BATCH_SIZE,
    })
    await relay.start()
    logger.info({ pollMs: config.OUTBOX_POLL_MS }, 'outbox relay started')
  }

  return {
    close: async () => {
      await relay?.stop()
      await emailWorker?.close()
      for (const close of closers.reverse()) await close()
      await closeDb()
    },
  }
}
