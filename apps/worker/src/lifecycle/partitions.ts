import { maintainPartitions, type PartitionSpan, type Sql } from '@dispatch/db'
import type { Logger } from 'pino'

/**
 * Keeps the partitions of every table that grows with traffic (packages/db/src/partitions.ts):
 * messages, their attempts and replies past `retentionDays`, webhook events and their attempts past
 * `webhooks.retentionDays`. Creates the coming periods ahead and drops those past retention, at
 * start and then hourly. Every `messages` worker runs it; an advisory lock lets one process at a time
 * change the partitions. A failure (Postgres away, a lock not granted in time) is logged and tried at
 * the next tick; a row written meanwhile whose period is missing creates it (`writingToPeriods`), or
 * waits in the default partition of webhook events.
 */
export function startPartitionMaintenance(options: {
  sql: Sql
  logger: Logger
  retentionDays: number
  aheadDays: number
  widthDays: number
  webhooks: PartitionSpan
  intervalMs: number
  now?: () => Date
}): { stop(): Promise<void>; runNow(): Promise<void> } {
  const { sql, logger } = options
  const now = options.now ?? (() => new Date())
  let running: Promise<void> | undefined
  const round = async () => {
    try {
      const changes = await maintainPartitions(sql, {
        now: now(),
        aheadDays: options.aheadDays,
        retentionDays: options.retentionDays,
        widthDays: options.widthDays,
        webhooks: options.webhooks,
      })
      const { created, dropped, moved, deleted } = changes
      if (created.length + dropped.length + moved + deleted > 0) {
        logger.info({ created, dropped, moved, deleted }, 'partitions maintained')
      }
    } catch (error) {
      logger.warn({ err: error }, 'partition maintenance failed; retrying at the next tick')
    }
  }
  const tick = () =>
    (running ??= round().finally(() => {
      running = undefined
    }))
  const timer = setInterval(tick, options.intervalMs)
  timer.unref()
  void tick()
  return {
    runNow: () => tick(),
    stop: async () => {
      clearInterval(timer)
      await running
    },
  }
}
