import { type Db, redactExpiredMessages, redactExpiredReplies } from '@dispatch/db'
import type { Logger } from 'pino'

/** Rows redacted per transaction: short row locks on busy tables, bounded memory. */
export const REDACTION_BATCH = 500

/**
 * One sweep of timed content retention as of `now`: batches of sent messages (per their key's
 * `contentRetention` hours) and of replies (per their sender's `inboundContentRetention`) until
 * none is left due, or `stopped()` says to end early. Answers how many of each it redacted.
 */
export async function sweepContentRedaction(
  db: Db,
  now: Date,
  options: { batch?: number; stopped?: () => boolean } = {},
): Promise<{ messages: number; replies: number }> {
  const batch = options.batch ?? REDACTION_BATCH
  const total = { messages: 0, replies: 0 }
  for (const [kind, redact] of [
    ['messages', redactExpiredMessages],
    ['replies', redactExpiredReplies],
  ] as const) {
    for (;;) {
      const done = await redact(db, now, batch)
      total[kind] += done
      if (done < batch || options.stopped?.()) break
    }
  }
  return total
}

/**
 * Timed redaction, every `intervalMs` (a minute by default) and once at start, by the clock given
 * (tests pass one ahead of time instead of waiting hours). Several workers may run it at once: each
 * batch skips the rows another holds, and redacting twice changes nothing. A failure (Postgres
 * away) is logged and tried again at the next tick.
 */
export function startContentRedaction(options: {
  db: Db
  logger: Logger
  intervalMs: number
  clock?: () => Date
}): { stop(): Promise<void> } {
  const { db, logger, clock = () => new Date() } = options
  let running: Promise<void> | undefined
  let stopped = false
  const sweep = async () => {
    try {
      const done = await sweepContentRedaction(db, clock(), { stopped: () => stopped })
      if (done.messages + done.replies > 0) logger.info(done, 'content past its retention redacted')
    } catch (error) {
      logger.warn({ err: error }, 'content redaction failed; retrying at the next tick')
    }
  }
  const tick = () => {
    running ??= sweep().finally(() => {
      running = undefined
    })
  }
  const timer = setInterval(tick, options.intervalMs)
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
