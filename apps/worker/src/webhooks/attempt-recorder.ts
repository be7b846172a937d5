import { type Db, type NewWebhookAttempt, recordWebhookAttempts } from '@dispatch/db'
import type { Logger } from 'pino'

/**
 * Writes delivery attempts in batches: one insert at a time, and the attempts recorded while it
 * runs go together in the next, so batches grow with the load instead of statements multiplying.
 * The log of attempts is for the endpoint's owner to read; a write that fails (Postgres down) is
 * logged and dropped rather than holding back deliveries, which already happened.
 */
export class AttemptRecorder {
  readonly #db: Db
  readonly #logger: Logger
  #pending: NewWebhookAttempt[] = []
  #next: Promise<void> | undefined
  #running: Promise<void> = Promise.resolve()

  constructor(db: Db, logger: Logger) {
    this.#db = db
    this.#logger = logger
  }

  record(attempt: NewWebhookAttempt): Promise<void> {
    this.#pending.push(attempt)
    // The next insert starts when the running one ends, and takes everything pending by then.
    this.#next ??= this.#running.then(() => {
      this.#next = undefined
      return this.#flush()
    })
    this.#running = this.#next
    return this.#next
  }

  async #flush() {
    const batch = this.#pending
    this.#pending = []
    if (batch.length === 0) return
    try {
      await recordWebhookAttempts(this.#db, batch)
    } catch (error) {
      this.#logger.warn({ err: error, attempts: batch.length }, 'webhook attempts not recorded')
    }
  }
}
