import { maintainPartitions, type Sql } from '@dispatch/db'
import type { Logger } from 'pino'

/**
 * Keeps the day partitions of messages and their attempts (packages/db/src/partitions.ts): creates
 * the coming days ahead and drops the days past `retentionDays`, at start and then hourly. Every
 * `messages` worker runs it; an advisory lock lets one process at a time change the partitions. A
 * failure (Postgres away, a lock not granted in time) is logged and tried at the next tick; a row
 * written meanwhile whose period is missing creates it (`writingToPeriods`).
 */
export function startPartitionMaintenance(options: {
  sql: Sql
  logger: Logger
  retentionDays: number
  aheadDays: number
  widthDays: number
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
      })
      const { created, dropped, moved, deleted } = changes
      if (created.length + dropped.length + moved + deleted > 0) {
        logger.info({ created, dropped, moved, deleted }, 'message partitions maintained')
      }
    } catch (error) {
      logger.warn({ err: error }, 'message partition maintenance failed; retrying at the next tick')
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
