import {
  type ConsentConfirmationJob,
  type EmailJob,
  QueueNames,
  queuePrefix,
  type WebhookJob,
} from '@dispatch/contracts'
import { ReopeningQueue } from '@dispatch/contracts/queues'
import { Queue } from 'bullmq'
import { confirmationJobOptions } from '../consent/confirmations.ts'
import { OutboxRelay } from '../outbox-relay.ts'
import type { WorkerUnitStarter } from '../runtime.ts'

/** Job retention: enough to dedupe a relayed row and to inspect failures, bounded in Redis. */
const emailJobOptions = (attempts: number, backoffMs: number) => ({
  attempts,
  backoff: { type: 'exponential' as const, delay: backoffMs, jitter: 0.5 },
  removeOnComplete: { age: 7 * 24 * 3600, count: 10_000 },
  removeOnFail: { age: 30 * 24 * 3600 },
})

/**
 * The `outbox` role: relays committed side effects (e-mails, webhook events, consent confirmations)
 * into their queues.
 */
export const startOutboxUnit: WorkerUnitStarter = async ({ config, db, sql, logger, redis, metrics }) => {
  const producer = redis('outbox-queues', { blocking: false })
  const emailQueue = new ReopeningQueue(() => {
    const queue = new Queue<EmailJob>(QueueNames.email, {
      connection: producer,
      prefix: queuePrefix(config, QueueNames.email),
      defaultJobOptions: emailJobOptions(config.EMAIL_ATTEMPTS, config.EMAIL_BACKOFF_MS),
    })
    queue.on('error', (error) => logger.warn({ err: error }, 'e-mail queue error'))
    return queue
  })
  const webhookQueue = new ReopeningQueue(() => {
    const queue = new Queue<WebhookJob>(QueueNames.webhooks, {
      connection: producer,
      prefix: queuePrefix(config, QueueNames.webhooks),
    })
    queue.on('error', (error) => logger.warn({ err: error }, 'webhook queue error'))
    return queue
  })
  const confirmationQueue = new ReopeningQueue(() => {
    const queue = new Queue<ConsentConfirmationJob>(QueueNames.consentConfirmations, {
      connection: producer,
      prefix: queuePrefix(config, QueueNames.consentConfirmations),
      defaultJobOptions: confirmationJobOptions(config.MESSAGES_BACKOFF_MS),
    })
    queue.on('error', (error) => logger.warn({ err: error }, 'consent confirmation queue error'))
    return queue
  })
  const relay = new OutboxRelay({
    db,
    sql,
    emailQueue,
    webhookQueue,
    confirmationQueue,
    logger,
    pollMs: config.OUTBOX_POLL_MS,
    batchSize: config.OUTBOX_BATCH_SIZE,
  })
  await relay.start()
  metrics?.watchOutbox()
  logger.info({ pollMs: config.OUTBOX_POLL_MS }, 'outbox relay started')
  return {
    close: async () => {
      await relay.stop()
      await emailQueue.close()
      await webhookQueue.close()
      await confirmationQueue.close()
    },
  }
}
