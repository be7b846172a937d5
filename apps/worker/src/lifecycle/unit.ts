import { type ErasureReport, QueueNames } from '@dispatch/contracts'
import { queuePrefix } from '@dispatch/runtime'
import { type Job, Worker } from 'bullmq'
import type { WorkerUnitStarter } from '../runtime.ts'
import { type CampaignCancelReport, runCampaignCancel } from './campaign-cancel.ts'
import { RedisEraser } from './erase-redis.ts'
import { failErasure, runErasure } from './erasure.ts'
import { startPartitionMaintenance } from './partitions.ts'
import { startContentRedaction } from './redaction.ts'
import { type KeyRevocationReport, runKeyRevocation } from './revocation.ts'
import { suppressionRebuild } from './suppression-rebuild.ts'
import { TemplateSyncSchedule } from './template-sync.ts'
import { serviceWindowRebuild } from './window-rebuild.ts'

/** A sweep of content past its retention, run on demand (the API's tests call it). */
export { sweepContentRedaction } from './redaction.ts'

/**
 * The `lifecycle` role: data-lifecycle jobs, a recipient's erasure (queue `erasures`), a revoked
 * key's sweep of its messages (queue `key-revocations`) and a canceled campaign's (queue
 * `campaign-cancels`). One at a time per process: an erasure is a background sweep, never in a
 * hurry, and kept off the messages' connections and pool.
 */
export const startLifecycleUnit: WorkerUnitStarter = async (context) => {
  const { config, logger } = context
  const eraser = new RedisEraser(context, context.redis('lifecycle-eraser', { blocking: false }))
  const worker = new Worker<unknown, ErasureReport>(
    QueueNames.erasures,
    (job) => runErasure(context, eraser, job),
    {
      connection: context.redis('lifecycle-worker', { blocking: true }),
      prefix: queuePrefix(config, QueueNames.erasures),
      concurrency: 1,
    },
  )
  worker.on('error', (error) => logger.warn({ err: error }, 'lifecycle worker error'))
  worker.on('failed', (job, error) => {
    if (!job) return
    const final = job.attemptsMade >= (job.opts.attempts ?? 1) || error.name === 'UnrecoverableError'
    logger.error({ err: error, jobId: job.id, final }, 'erasure failed')
    if (final) {
      failErasure(context, job, error).catch((caught) =>
        logger.error({ err: caught, jobId: job.id }, 'failed erasure not recorded'),
      )
    }
  })
  // A revoked key's sweep (lifecycle/revocation.ts): on its own queue, beside the erasures.
  const announcer = context.redis('lifecycle-announcer', { blocking: false })
  const revocations = new Worker<unknown, KeyRevocationReport>(
    QueueNames.keyRevocations,
    (job: Job) => runKeyRevocation(context, eraser, announcer, job),
    {
      connection: context.redis('lifecycle-revocations', { blocking: true }),
      prefix: queuePrefix(config, QueueNames.keyRevocations),
      concurrency: 1,
    },
  )
  revocations.on('error', (error) => logger.warn({ err: error }, 'key revocation worker error'))
  revocations.on('failed', (job, error) =>
    logger.error({ err: error, jobId: job?.id }, 'revoked key sweep failed'),
  )
  // A canceled campaign's sweep (lifecycle/campaign-cancel.ts): the same, on a queue of its own.
  const campaignCancels = new Worker<unknown, CampaignCancelReport>(
    QueueNames.campaignCancels,
    (job: Job) => runCampaignCancel(context, eraser, announcer, job),
    {
      connection: context.redis('lifecycle-campaign-cancels', { blocking: true }),
      prefix: queuePrefix(config, QueueNames.campaignCancels),
      concurrency: 1,
    },
  )
  campaignCancels.on('error', (error) => logger.warn({ err: error }, 'campaign cancel worker error'))
  campaignCancels.on('failed', (job, error) =>
    logger.error({ err: error, jobId: job?.id }, 'canceled campaign sweep failed'),
  )
  logger.info('lifecycle worker started (erasures, key revocations, campaign cancels)')
  return {
    close: async () => {
      await worker.close()
      await revocations.close()
      await campaignCancels.close()
      await eraser.close()
    },
  }
}

/**
 * The maintenance loops: the senders' template catalogs synced on a schedule; the Redis copies of
 * the recipients' 24-hour windows and of the suppression list rebuilt from Postgres when lost;
 * content past its retention hours (keys' messages, senders' replies) redacted; and the partitions
 * messages (and replies, webhook events and attempts) are recorded in kept: created ahead, dropped
 * past retention. Started with the `messages` role (index.ts), as they always were: ops read that
 * role as the one that runs partitions and redaction (docs/operations.md), and the template sync
 * serves the same WORKER_SENDERS as its lanes.
 */
export const startMaintenanceLoops: WorkerUnitStarter = async (context) => {
  const { config, logger } = context
  const templateSync = new TemplateSyncSchedule(context)
  templateSync.start()
  const windows = serviceWindowRebuild(context)
  windows.start()
  const suppressions = suppressionRebuild(context)
  suppressions.start()
  const redaction = startContentRedaction({
    db: context.db,
    logger,
    intervalMs: config.CONTENT_REDACTION_INTERVAL_MS,
  })
  const partitions = startPartitionMaintenance({
    sql: context.sql,
    logger,
    retentionDays: config.MESSAGE_RETENTION_DAYS,
    aheadDays: config.MESSAGE_PARTITIONS_AHEAD_DAYS,
    widthDays: config.MESSAGE_PARTITION_DAYS,
    webhooks: {
      retentionDays: config.WEBHOOK_EVENT_RETENTION_DAYS,
      widthDays: config.WEBHOOK_EVENT_PARTITION_DAYS,
    },
    intervalMs: config.PARTITION_MAINTENANCE_INTERVAL_MS,
  })
  return {
    close: async () => {
      await partitions.stop()
      await templateSync.stop()
      await windows.stop()
      await suppressions.stop()
      await redaction.stop()
    },
  }
}
