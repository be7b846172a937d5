import {
  type EmailJob,
  logDestination,
  loggerOptions,
  type MessageJob,
  QueueNames,
  urlPassword,
  type WebhookJob,
} from '@dispatch/contracts'
import { createDb } from '@dispatch/db'
import { Queue, type Worker } from 'bullmq'
import { Redis } from 'ioredis'
import pino, { type DestinationStream, type Logger } from 'pino'
import { createMailer } from './email/transport.ts'
import type { WorkerConfig } from './env.ts'
import { OutboxRelay } from './outbox-relay.ts'
import { createSandboxPlatform } from './platforms/sandbox.ts'
import type { MessagingPlatform } from './platforms/types.ts'
import { createWhatsAppCloudPlatform } from './platforms/whatsapp-cloud.ts'
import { startWebhookRetention } from './webhooks/retention.ts'
import { startWebhooksWorker, type WebhookResult } from './webhooks/worker.ts'
import { startEmailWorker } from './workers/email.ts'
import { type DeliveryResult, startMessagesWorker } from './workers/messages.ts'

export { parseWorkerConfig, type WorkerConfig } from './env.ts'

export function createWorkerLogger(config: WorkerConfig, stream?: DestinationStream): Logger {
  // Every secret value the worker's configuration holds: no log line may carry one.
  const secrets = [
    config.WHATSAPP_ACCESS_TOKEN,
    urlPassword(config.SMTP_URL),
    urlPassword(config.DATABASE_URL),
    urlPassword(config.REDIS_URL),
  ]
  return pino(
    { ...loggerOptions(config.LOG_LEVEL, secrets), name: 'worker' },
    stream ?? logDestination(config.LOG_FORMAT),
  )
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

/** The platform adapter the config names: the Cloud API when credentials are set, else the sandbox. */
export function createPlatform(config: WorkerConfig): MessagingPlatform {
  if (config.platform === 'whatsapp-cloud') {
    return createWhatsAppCloudPlatform({
      apiUrl: config.WHATSAPP_API_URL,
      accessToken: config.WHATSAPP_ACCESS_TOKEN ?? '',
      phoneNumberId: config.WHATSAPP_PHONE_NUMBER_ID ?? '',
      timeoutMs: config.PLATFORM_TIMEOUT_MS,
    })
  }
  return createSandboxPlatform({
    latencyMs: config.SANDBOX_LATENCY_MS,
    failureRate: config.SANDBOX_FAILURE_RATE,
    phoneNumberId: config.SANDBOX_PHONE_NUMBER_ID,
  })
}

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

  let messagesWorker: Worker<MessageJob, DeliveryResult> | undefined
  if (config.roles.includes('messages')) {
    const platform = createPlatform(config)
    messagesWorker = startMessagesWorker({
      db,
      sql,
      platform,
      logger,
      claims: redisClient({ blocking: false }, 'messages-claims'),
      connection: redisClient({ blocking: true }, 'messages-worker'),
      prefix: config.QUEUE_PREFIX,
      concurrency: config.MESSAGES_CONCURRENCY,
      ratePerSecond: config.PLATFORM_RATE_PER_SECOND,
      backoffMs: config.MESSAGES_BACKOFF_MS,
      lockMs: config.MESSAGES_LOCK_MS,
      stalledIntervalMs: config.MESSAGES_STALLED_INTERVAL_MS,
    })
    logger.info(
      {
        platform: platform.name,
        concurrency: config.MESSAGES_CONCURRENCY,
        ratePerSecond: config.PLATFORM_RATE_PER_SECOND,
      },
      'messages worker started',
    )
  }

  let webhooksWorker: Worker<WebhookJob, WebhookResult> | undefined
  if (config.roles.includes('webhooks')) {
    webhooksWorker = startWebhooksWorker({
      db,
      logger,
      connection: redisClient({ blocking: true }, 'webhooks-worker'),
      gateConnection: redisClient({ blocking: false }, 'webhooks-gate'),
      prefix: config.QUEUE_PREFIX,
      concurrency: config.WEBHOOK_CONCURRENCY,
      timeoutMs: config.WEBHOOK_TIMEOUT_MS,
      schedule: config.webhookRetrySchedule,
      endpointConcurrency: config.WEBHOOK_ENDPOINT_CONCURRENCY,
      endpointRatePerSecond: config.WEBHOOK_ENDPOINT_RATE_PER_SECOND,
      slowDownMs: config.WEBHOOK_SLOW_DOWN_MS,
      disableAfterMs: config.WEBHOOK_DISABLE_AFTER_MS,
      allowPrivate: config.WEBHOOK_ALLOW_PRIVATE_TARGETS,
      production: config.APP_ENV === 'production',
    })
    logger.info(
      {
        concurrency: config.WEBHOOK_CONCURRENCY,
        endpointConcurrency: config.WEBHOOK_ENDPOINT_CONCURRENCY,
        endpointRatePerSecond: config.WEBHOOK_ENDPOINT_RATE_PER_SECOND,
        tries: config.webhookRetrySchedule.length + 1,
      },
      'webhooks worker started',
    )
    const retention = startWebhookRetention({
      db,
      logger,
      retentionMs: config.WEBHOOK_EVENT_RETENTION_DAYS * 24 * 3600 * 1000,
    })
    closers.unshift(() => retention.stop())
  }

  let relay: OutboxRelay | undefined
  if (config.roles.includes('outbox')) {
    const producer = redisClient({ blocking: false }, 'outbox-queues')
    const emailQueue = new Queue<EmailJob>(QueueNames.email, {
      connection: producer,
      prefix: config.QUEUE_PREFIX,
      defaultJobOptions: emailJobOptions(config),
    })
    emailQueue.on('error', (error) => logger.warn({ err: error }, 'e-mail queue error'))
    closers.push(() => emailQueue.close())
    const webhookQueue = new Queue<WebhookJob>(QueueNames.webhooks, {
      connection: producer,
      prefix: config.QUEUE_PREFIX,
    })
    webhookQueue.on('error', (error) => logger.warn({ err: error }, 'webhook queue error'))
    closers.push(() => webhookQueue.close())
    relay = new OutboxRelay({
      db,
      sql,
      emailQueue,
      webhookQueue,
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
      // BullMQ's close() can wait forever on a Redis that is unreachable (taskforcesh/bullmq#4656):
      // wait for in-flight jobs up to the grace period, then drop the connections regardless. Jobs
      // cut short stall and are retaken by another worker.
      let timer: NodeJS.Timeout | undefined
      const drained = await Promise.race([
        Promise.all([emailWorker?.close(), messagesWorker?.close(), webhooksWorker?.close()]).then(
          () => true,
        ),
        new Promise<false>((resolve) => {
          timer = setTimeout(() => resolve(false), config.SHUTDOWN_GRACE_MS)
        }),
      ])
      clearTimeout(timer)
      if (!drained)
        logger.warn({ graceMs: config.SHUTDOWN_GRACE_MS }, 'workers did not close in time; disconnecting')
      for (const close of closers.reverse()) await close()
      await closeDb()
    },
  }
}
