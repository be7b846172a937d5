import {
  type CampaignCancelJob,
  type ConsentConfirmationJob,
  type EmailJob,
  type ErasureJob,
  type KeyRevocationJob,
  QueueNames,
} from '@dispatch/contracts'
import { queuePrefix } from '@dispatch/runtime'
import { ReopeningQueue } from '@dispatch/runtime/queues'
import { type DefaultJobOptions, Queue } from 'bullmq'
import type { WorkerUnitStarter } from '../runtime.ts'
import type { WebhooksQueueJob } from '../shared/webhook-jobs.ts'
import {
  confirmationJobOptions,
  ERASURE_JOB_OPTIONS,
  emailJobOptions,
  REVOCATION_JOB_OPTIONS,
} from './job-options.ts'
import { OutboxRelay } from './relay.ts'

/**
 * The `outbox` role: relays committed side effects (e-mails, webhook events, consent confirmations,
 * erasures, the sweeps of revoked keys and canceled campaigns) into their queues.
 */
export const startOutboxUnit: WorkerUnitStarter = async ({ config, db, sql, logger, redis, metrics }) => {
  const producer = redis('outbox-queues', { blocking: false })
  /** One of the relay's queues on the producer connection, opened again if opening it failed. */
  const queueOf = <T>(name: string, what: string, defaultJobOptions?: DefaultJobOptions) =>
    new ReopeningQueue(() => {
      const queue = new Queue<T>(name, {
        connection: producer,
        prefix: queuePrefix(config, name),
        ...(defaultJobOptions ? { defaultJobOptions } : {}),
      })
      queue.on('error', (error) => logger.warn({ err: error }, `${what} queue error`))
      return queue
    })
  const emailQueue = queueOf<EmailJob>(
    QueueNames.email,
    'e-mail',
    emailJobOptions(config.EMAIL_ATTEMPTS, config.EMAIL_BACKOFF_MS),
  )
  const webhookQueue = queueOf<WebhooksQueueJob>(QueueNames.webhooks, 'webhook')
  const confirmationQueue = queueOf<ConsentConfirmationJob>(
    QueueNames.consentConfirmations,
    'consent confirmation',
    confirmationJobOptions(config.MESSAGES_BACKOFF_MS),
  )
  const erasureQueue = queueOf<ErasureJob>(QueueNames.erasures, 'erasure')
  const revocationQueue = queueOf<KeyRevocationJob>(QueueNames.keyRevocations, 'key revocation')
  const campaignCancelQueue = queueOf<CampaignCancelJob>(QueueNames.campaignCancels, 'campaign cancel')
  const relay = new OutboxRelay({
    db,
    sql,
    emailQueue,
    webhookQueue,
    confirmationQueue,
    erasureQueue,
    erasureJobOptions: ERASURE_JOB_OPTIONS,
    revocationQueue,
    revocationJobOptions: REVOCATION_JOB_OPTIONS,
    campaignCancelQueue,
    logger,
    pollMs: config.OUTBOX_POLL_MS,
    batchSize: config.OUTBOX_BATCH_SIZE,
    webhookBundleSize: config.WEBHOOK_BUNDLE_SIZE,
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
      await erasureQueue.close()
      await revocationQueue.close()
      await campaignCancelQueue.close()
    },
  }
}
