import { startConsentConfirmationWorker } from './consent/confirmations.ts'
import { suppressionRebuild } from '../lifecycle/suppression-rebuild.ts'
import { startPartitionMaintenance } from '../lifecycle/partitions.ts'
import { startContentRedaction } from '../lifecycle/redaction.ts'
import type { WorkerUnitStarter } from '../runtime.ts'
import { TemplateSyncSchedule } from '../lifecycle/template-sync.ts'
import { serviceWindowRebuild } from '../lifecycle/window-rebuild.ts'
import { Admitter } from './admitter.ts'
import { HeldExpirySweeper } from './held-expiry.ts'
import { SenderLanes } from './lanes.ts'
import { SenderRegistry } from './registry.ts'
import { SentLogSweeper } from './sent-log.ts'

/**
 * The `messages` role: for each sender this process serves (WORKER_SENDERS), a lane (its queue,
 * rate, pause and platform adapter), and the admitter that fills the lanes' queues fairly from the
 * senders' waiting messages. Senders come and go at run time through the registry. The senders'
 * template catalogs are synced on a schedule here too, and the Redis copy of the recipients'
 * 24-hour windows is rebuilt from Postgres when it was lost, keywords' confirmations are sent,
 * content past its retention is redacted (lifecycle/redaction.ts), and the partitions messages (and
 * replies, webhook events and attempts) are recorded in are kept: created ahead, dropped past
 * retention (lifecycle/partitions.ts).
 */
export const startMessagesUnit: WorkerUnitStarter = async (context) => {
  const lanes = new SenderLanes(context)
  await lanes.followingOptOuts()
  await lanes.followRevocations()
  const registry = new SenderRegistry(context, (senders, readAt) => lanes.reconcile(senders, readAt))
  await registry.start()
  // Its own connection, not the queues': see Admitter.
  const admitter = new Admitter(context, context.redis('senders-admission', { blocking: false }), () =>
    lanes.lanes(),
  )
  admitter.start()
  const sweeper = new HeldExpirySweeper(context, { redis: lanes.producer, ...lanes.recording }, () =>
    lanes.lanes(),
  )
  sweeper.start()
  // Sent outcomes a process left in the senders' logs (killed, or Postgres was down) reach Postgres.
  const sentLogs = new SentLogSweeper(
    lanes.recording.claims,
    lanes.recording.recorder,
    () => [...lanes.lanes()].map((lane) => lane.sentLog),
    context.logger,
  )
  sentLogs.start()
  const templateSync = new TemplateSyncSchedule(context)
  templateSync.start()
  const windows = serviceWindowRebuild(context)
  windows.start()
  const suppressions = suppressionRebuild(context)
  suppressions.start()
  // Keywords' confirmations, sent from the users' business numbers: this role has the platform's settings.
  const confirmations = startConsentConfirmationWorker(context)
  // Content past its retention hours (keys' messages, senders' replies) is redacted here: the role
  // that records messages owns their lifecycle.
  const redaction = startContentRedaction({
    db: context.db,
    logger: context.logger,
    intervalMs: context.config.CONTENT_REDACTION_INTERVAL_MS,
  })
  context.metrics?.watchSenders(() => lanes.lanes())
  context.metrics?.watchQueues(() => [...lanes.lanes()].map((lane) => lane.queueName))
  const { config, logger } = context
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
  logger.info(
    {
      platform: config.platform,
      senders: [...lanes.lanes()].map((lane) => lane.senderId),
      serves: config.workerSenders,
      concurrencyPerSender: config.MESSAGES_CONCURRENCY,
    },
    'messages worker started',
  )
  return {
    close: async () => {
      await registry.stop()
      await partitions.stop()
      await templateSync.stop()
      await windows.stop()
      await suppressions.stop()
      await confirmations.close()
      await redaction.stop()
      await sweeper.stop()
      await admitter.stop()
      await sentLogs.stop()
      await lanes.close()
    },
  }
}
