import { type Db, type NewWebhookAttempt, recordWebhookAttempts } from '@dispatch/db'
import type { Logger } from 'pino'

/**
 * Writes delivery attempts in batches: those recorded in the same turn of the event loop go in one
 * statement. The log of attempts is for the endpoint's owner to read; a write that fails (Postgres
 * down) is logged and dropped rather than holding back deliveries, which already happened.
 */
export class AttemptRecorder {
  readonly #db: Db
  readonly #logger: Logger
  #pending: NewWebhookAttempt[] = []
  #flushing: Promise<void> | undefined

  constructor(db: Db, logger: Logger) {
    this.#db = db
    this.#logger = logger
  }

  record(attempt: NewWebhookAttempt): Promise<void> {
    this.#pending.push(attempt)
    this.#flushing ??= new Promise<void>((resolve) => setImmediate(resolve)).then(() => this.#flush())
    return this.#flushing
  }

  async #flush() {
    const batch = this.#pending
    this.#pending = []
    this.#flushing = undefined
    try {
      await recordWebhookAttempts(this.#db, batch)
    } catch (error) {
      this.#logger.warn({ err: error, attempts: batch.length }, 'webhook attempts not recorded')
    }
  }
}
