import { type Db, type NewWebhookAttempt, recordWebhookAttempts } from '@dispatch/db'
import type { Logger } from 'pino'

export interface AttemptRecorderOptions {
  /**
   * How long the first attempt of a batch waits for others before the batch is written. Much of
   * Postgres's CPU for an insert is the statement's own (its round trip, its commit), not its rows':
   * under load a short wait makes a few large inserts of what would be many small ones.
   */
  lingerMs: number
  /** A batch this large is written without waiting out the linger. */
  maxBatch: number
  /**
   * A batch that this many waiters (jobs, each held until its rows are written) wait on is written
   * without waiting out the linger: the worker's job concurrency, so a process full of single-event
   * jobs never waits it out, while a few bundles of many rows do.
   */
  maxWaiters: number
}

export const DEFAULT_ATTEMPT_RECORDER_OPTIONS: AttemptRecorderOptions = {
  lingerMs: 20,
  maxBatch: 1000,
  maxWaiters: Number.POSITIVE_INFINITY,
}

/**
 * Writes delivery attempts in batches: one insert at a time, each holding what was recorded while
 * the one before ran and during a short linger, so batches grow with the load instead of
 * statements multiplying. The log of attempts is for the endpoint's owner to read; a write that
 * fails (Postgres down) is logged and dropped rather than holding back deliveries, which already
 * happened. `record` resolves once its attempt's batch is written (or dropped).
 */
export class AttemptRecorder {
  readonly #db: Db
  readonly #logger: Logger
  readonly #options: AttemptRecorderOptions
  #pending: NewWebhookAttempt[] = []
  #waiters = new Set<string>()
  /** The batch being gathered: resolved once it is written; undefined while nothing waits. */
  #next: { written: Promise<void>; start: () => void } | undefined
  #running: Promise<void> = Promise.resolve()

  constructor(db: Db, logger: Logger, options: AttemptRecorderOptions = DEFAULT_ATTEMPT_RECORDER_OPTIONS) {
    this.#db = db
    this.#logger = logger
    this.#options = options
  }

  /** `waiter`: who waits on the row (a job's id); a batch several rows of one waiter wait on counts it once. */
  record(attempt: NewWebhookAttempt, waiter: string): Promise<void> {
    this.#pending.push(attempt)
    this.#waiters.add(waiter)
    if (!this.#next) {
      let start: () => void = () => {}
      const lingered = new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, this.#options.lingerMs)
        start = () => {
          clearTimeout(timer)
          resolve()
        }
      })
      // The batch is written when its linger ends (or it is full) and the insert before it is done.
      const written = Promise.all([lingered, this.#running]).then(() => {
        this.#next = undefined
        return this.#flush()
      })
      this.#next = { written, start }
      this.#running = written
    }
    if (this.#pending.length >= this.#options.maxBatch || this.#waiters.size >= this.#options.maxWaiters) {
      this.#next.start()
    }
    return this.#next.written
  }

  async #flush() {
    const batch = this.#pending
    this.#pending = []
    this.#waiters = new Set()
    if (batch.length === 0) return
    try {
      await recordWebhookAttempts(this.#db, batch)
    } catch (error) {
      this.#logger.warn({ err: error, attempts: batch.length }, 'webhook attempts not recorded')
    }
  }
}
