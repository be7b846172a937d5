import { type Db, type DeliveryOutcome, recordDeliveryOutcomes } from '@dispatch/db'

interface Pending {
  outcome: DeliveryOutcome
  resolve(): void
  reject(error: unknown): void
}

/**
 * Writes delivery outcomes in batches: every outcome recorded in the same turn of the event loop
 * goes to Postgres in one statement, up to `maxBatch` rows, with at most one statement in flight.
 * Each caller waits for its own row to be committed, so a job is acknowledged only once its
 * outcome (and platform id) is stored.
 */
export class DeliveryRecorder {
  readonly #db: Db
  readonly #maxBatch: number
  #pending: Pending[] = []
  #flushing: Promise<void> | null = null
  #scheduled = false

  constructor(db: Db, maxBatch = 500) {
    this.#db = db
    this.#maxBatch = maxBatch
  }

  record(outcome: DeliveryOutcome): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#pending.push({ outcome, resolve, reject })
      this.#schedule()
    })
  }

  #schedule() {
    if (this.#scheduled || this.#flushing) return
    this.#scheduled = true
    setImmediate(() => {
      this.#scheduled = false
      this.#flushing = this.#flush().finally(() => {
        this.#flushing = null
        if (this.#pending.length > 0) this.#schedule()
      })
    })
  }

  async #flush() {
    const batch = this.#pending.splice(0, this.#maxBatch)
    // One row per message per statement: Postgres refuses to update a row twice in one upsert.
    const latest = new Map(batch.map((p) => [p.outcome.id, p.outcome]))
    try {
      await recordDeliveryOutcomes(this.#db, [...latest.values()])
      for (const p of batch) p.resolve()
    } catch (error) {
      for (const p of batch) p.reject(error)
    }
  }
}
