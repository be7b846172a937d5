import { type DeliveryOutcome, recordDeliveryOutcomes, type Sql } from '@dispatch/db'

interface Pending {
  outcome: DeliveryOutcome
  resolve(): void
  reject(error: unknown): void
}

/**
 * Writes delivery outcomes in batches: the outcomes recorded in the same turn of the event loop go
 * to Postgres in one statement (up to `maxBatch` rows), with up to `maxInFlight` statements at
 * once so commits overlap. Each caller waits for its own row to be committed, so a job is
 * acknowledged only once its outcome (and platform id) is stored.
 */
export class DeliveryRecorder {
  readonly #sql: Sql
  readonly #maxBatch: number
  readonly #maxInFlight: number
  #pending: Pending[] = []
  #inFlight = 0
  #scheduled = false

  constructor(sql: Sql, options: { maxBatch?: number; maxInFlight?: number } = {}) {
    this.#sql = sql
    this.#maxBatch = options.maxBatch ?? 500
    this.#maxInFlight = options.maxInFlight ?? 4
  }

  record(outcome: DeliveryOutcome): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#pending.push({ outcome, resolve, reject })
      this.#schedule()
    })
  }

  #schedule() {
    if (this.#scheduled || this.#inFlight >= this.#maxInFlight) return
    this.#scheduled = true
    setImmediate(() => {
      this.#scheduled = false
      if (this.#pending.length === 0) return
      this.#inFlight++
      void this.#flush().finally(() => {
        this.#inFlight--
        if (this.#pending.length > 0) this.#schedule()
      })
    })
  }

  async #flush() {
    const batch = this.#pending.splice(0, this.#maxBatch)
    // One row per message per statement: Postgres refuses to update a row twice in one upsert.
    const latest = new Map(batch.map((p) => [p.outcome.id, p.outcome]))
    try {
      await recordDeliveryOutcomes(this.#sql, [...latest.values()])
      for (const p of batch) p.resolve()
    } catch (error) {
      if (latest.size === 1) {
        for (const p of batch) p.reject(error)
        return
      }
      // One bad row (a key deleted since, say) must not fail the others: write them one by one.
      await Promise.all(
        [...latest.values()].map(async (outcome) => {
          const waiting = batch.filter((p) => p.outcome.id === outcome.id)
          try {
            await recordDeliveryOutcomes(this.#sql, [outcome])
            for (const p of waiting) p.resolve()
          } catch (rowError) {
            for (const p of waiting) p.reject(rowError)
          }
        }),
      )
    }
  }
}
