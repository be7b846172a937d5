import { type Db, purgeRelayedOutbox } from '@dispatch/db'
import type { Logger } from 'pino'

/** Rows deleted per statement: short transactions, no long lock on a busy table. */
const BATCH = 5000

/**
 * Keeps the outbox bounded: rows relayed more than `retentionMs` ago are deleted, hourly by default.
 * Webhook events and their attempts are not deleted row by row: the `messages` role drops their
 * partitions whole past WEBHOOK_EVENT_RETENTION_DAYS (lifecycle/partitions.ts). Several workers may
 * run it at once; each delete is idempotent. A failure (Postgres away) is logged and tried again at
 * the next tick.
 */
export function startOutboxRetention(options: {
  db: Db
  logger: Logger
  retentionMs: number
  intervalMs?: number
}): { stop(): Promise<void> } {
  const { db, logger, retentionMs } = options
  let running: Promise<void> | undefined
  let stopped = false
  const purge = async () => {
    try {
      const before = new Date(Date.now() - retentionMs)
      let total = 0
      for (;;) {
        const deleted = await purgeRelayedOutbox(db, before, BATCH)
        total += deleted
        if (deleted < BATCH || stopped) break
      }
      if (total > 0) logger.info({ deleted: total, before }, 'relayed outbox rows purged')
    } catch (error) {
      logger.warn({ err: error }, 'outbox purge failed; retrying at the next tick')
    }
  }
  const tick = () => {
    running ??= purge().finally(() => {
      running = undefined
    })
  }
  const timer = setInterval(tick, options.intervalMs ?? 3600_000)
  timer.unref()
  tick()
  return {
    stop: async () => {
      stopped = true
      clearInterval(timer)
      await running
    },
  }
}
