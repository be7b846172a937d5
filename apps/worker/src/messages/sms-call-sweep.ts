import { markAbandonedCalls, type Sql } from '@dispatch/db'
import type { Logger } from 'pino'
import { Periodic } from '../shared/periodic.ts'

/** How often a messages worker looks for fallback calls a killed process left. */
const SWEEP_EVERY_MS = 60_000
/** Past the provider's own timeout, how long a call may still be recording its answer. */
const RECORDING_MARGIN_MS = 60_000

/**
 * Records `unknown` the SMS fallbacks a killed process left `calling` (docs/fallback.md, "At most
 * once: the record"): nothing calls for them again, and their record should say so rather than
 * "calling" for ever. A call lasts at most SMS_TIMEOUT_MS, so one `calling` for longer than that and
 * a margin has no caller left. Every messages worker runs it; the update is conditional, so two at
 * once record each row once.
 */
export class AbandonedSmsCallSweeper {
  readonly #sql: Sql
  readonly #abandonedAfterMs: number
  readonly #logger: Logger
  readonly #every: Periodic

  constructor(sql: Sql, options: { smsTimeoutMs: number }, logger: Logger) {
    this.#sql = sql
    this.#abandonedAfterMs = options.smsTimeoutMs + RECORDING_MARGIN_MS
    this.#logger = logger
    this.#every = new Periodic(
      () => this.sweep(),
      SWEEP_EVERY_MS,
      (error) => logger.warn({ err: error }, 'sweep of abandoned sms calls failed; trying again'),
    )
  }

  start(): void {
    this.#every.start()
  }

  /** One pass: the message ids recorded `unknown`. */
  async sweep(now = new Date()): Promise<string[]> {
    const abandoned = await markAbandonedCalls(
      this.#sql,
      new Date(now.getTime() - this.#abandonedAfterMs),
      now,
    )
    if (abandoned.length > 0) {
      // Ops can ask the provider (by our message id in its logs, or the recipient) whether it went.
      this.#logger.warn(
        { messageIds: abandoned.slice(0, 50), count: abandoned.length },
        'sms fallback calls abandoned; recorded unknown',
      )
    }
    return abandoned
  }

  stop(): Promise<void> {
    return this.#every.stop()
  }
}
