import { QueueNames } from '@dispatch/contracts'
import { createSecretBox, queuePrefix } from '@dispatch/runtime'
import type { WorkerUnitStarter } from '../runtime.ts'
import { startOutboxRetention } from './retention.ts'
import { startWebhooksWorker } from './worker.ts'

/** The `webhooks` role: delivers signed events to senders' endpoints, and purges old ones. */
export const startWebhooksUnit: WorkerUnitStarter = async ({
  config,
  db,
  logger,
  redis,
  metrics,
  telemetry,
}) => {
  const worker = startWebhooksWorker({
    db,
    logger,
    connection: redis('webhooks-worker', { blocking: true }),
    gateConnection: redis('webhooks-gate', { blocking: false }),
    queueConnection: redis('webhooks-queue', { blocking: false }),
    prefix: config.QUEUE_PREFIX,
    queuePrefix: queuePrefix(config, QueueNames.webhooks),
    concurrency: config.WEBHOOK_CONCURRENCY,
    timeoutMs: config.WEBHOOK_TIMEOUT_MS,
    schedule: config.webhookRetrySchedule,
    endpointConcurrency: config.WEBHOOK_ENDPOINT_CONCURRENCY,
    endpointRatePerSecond: config.WEBHOOK_ENDPOINT_RATE_PER_SECOND,
    slowDownMs: config.WEBHOOK_SLOW_DOWN_MS,
    disableAfterMs: config.WEBHOOK_DISABLE_AFTER_MS,
    allowPrivate: config.WEBHOOK_ALLOW_PRIVATE_TARGETS,
    production: config.APP_ENV === 'production',
    telemetry,
    box: createSecretBox(config),
    metrics,
  })
  metrics?.watchQueues(() => [QueueNames.webhooks])
  logger.info(
    {
      concurrency: config.WEBHOOK_CONCURRENCY,
      endpointConcurrency: config.WEBHOOK_ENDPOINT_CONCURRENCY,
      endpointRatePerSecond: config.WEBHOOK_ENDPOINT_RATE_PER_SECOND,
      tries: config.webhookRetrySchedule.length + 1,
    },
    'webhooks worker started',
  )
  const retention = startOutboxRetention({
    db,
    logger,
    retentionMs: config.WEBHOOK_EVENT_RETENTION_DAYS * 24 * 3600 * 1000,
  })
  return {
    close: async () => {
      await retention.stop()
      await worker.close()
    },
  }
}
