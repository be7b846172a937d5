import { type DeliveryOutcome, recordDeliveryOutcomes, type Sql } from '@dispatch/db'
import { FINAL_OUTCOMES, releaseMessageClaims } from '@dispatch/runtime/message-handoff'
import type { RedisClient } from '@dispatch/runtime/redis'

/** Where an outcome already waits in Redis (a sender's sent log, sent-log.ts). */
export interface LoggedEntry {
  stream: string
  id: string
}

interface Pending {
  outcome: DeliveryOutcome
  logged?: LoggedEntry | Promise<LoggedEntry> | undefined
  resolve(): void
  reject(error: unknown): void
}

/** Past this many outcomes waiting (Postgres slow or down), logged ones are left to the log's sweep. */
const MOST_PENDING = 20_000

/**
 * Writes delivery outcomes in batches: the outcomes handed in while the previous statement runs go
 * to Postgres in one statement (up to `maxBatch` rows); with a full batch waiting, up to
 * `maxInFlight` statements at once so commits overlap. `record` waits for its row to be committed.
 * `recordLogged` takes an outcome already stored durably in Redis (a sender's sent log): the job
 * does not wait for it, and its log entry is deleted once the row is committed; one that is never
 * written (Postgres down, the process killed) stays in the log, and the sweep writes it.
 * With `claims`, a committed final outcome (`FINAL_OUTCOMES`) shortens its message's claim to
 * `keepMs` (message-claims.ts): from then on the record answers for the message, and Redis keeps
 * nothing of it past that window. Never before the commit: a claim outlives an unwritten record.
 */
export class DeliveryRecorder {
  readonly #sql: Sql
  readonly #redis: RedisClient | undefined
  readonly #maxBatch: number
  readonly #maxInFlight: number
  readonly #claims: { prefix: string; keepMs: number } | undefined
  #pending: Pending[] = []
  #inFlight = 0
  #scheduled = false
  #idle: Array<() => void> = []
  readonly #releasing = new Set<Promise<void>>()

  constructor(
    sql: Sql,
    options: {
      maxBatch?: number
      maxInFlight?: number
      redis?: RedisClient
      /** Where the messages' claims are, and how long one stays once its outcome is committed. */
      claims?: { prefix: string; keepMs: number }
    } = {},
  ) {
    this.#sql = sql
    this.#redis = options.redis
    this.#claims = options.claims
    this.#maxBatch = options.maxBatch ?? 500
    this.#maxInFlight = options.maxInFlight ?? 4
  }

  record(outcome: DeliveryOutcome): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#pending.push({ outcome, resolve, reject })
      this.#schedule()
    })
  }

  /** Settles once the row is committed (and its entry deleted from the log), or writing it failed. */
  recordLogged(outcome: DeliveryOutcome, logged: LoggedEntry | Promise<LoggedEntry>): Promise<void> {
    if (this.#pending.length >= MOST_PENDING) return Promise.reject(new Error('recorder backlog full'))
    return new Promise((resolve, reject) => {
      this.#pending.push({ outcome, logged, resolve, reject })
      this.#schedule()
    })
  }

  /** Resolves once everything handed in so far has been written or has failed (on shutdown). */
  async drain(): Promise<void> {
    if (this.#pending.length > 0 || this.#inFlight > 0) {
      await new Promise<void>((resolve) => this.#idle.push(resolve))
    }
    await Promise.all(this.#releasing)
  }

  #schedule() {
    if (this.#scheduled || this.#inFlight >= this.#maxInFlight) return
    // One statement at a time while that keeps up: the next takes all that came meanwhile (fewer,
    // larger statements cost Postgres less per row: bench:delivery measured 20–30 % more messages
    // a second than four small ones at once). A full batch waiting starts another alongside.
    if (this.#inFlight > 0 && this.#pending.length < this.#maxBatch) return
    this.#scheduled = true
    setImmediate(() => {
      this.#scheduled = false
      if (this.#pending.length === 0) return this.#settleIdle()
      this.#inFlight++
      void this.#flush().finally(() => {
        this.#inFlight--
        if (this.#pending.length > 0) this.#schedule()
        else this.#settleIdle()
      })
    })
  }

  #settleIdle() {
    if (this.#inFlight > 0 || this.#pending.length > 0) return
    for (const resolve of this.#idle.splice(0)) resolve()
  }

  async #flush() {
    const batch = this.#pending.splice(0, this.#maxBatch)
    // One row per message per statement: Postgres refuses to update a row twice in one upsert. Each
    // failed attempt still goes on the timeline, a retried one written with its next attempt's too.
    const latest = new Map(batch.map((p) => [p.outcome.id, p.outcome]))
    try {
      await recordDeliveryOutcomes(
        this.#sql,
        [...latest.values()],
        batch.map((p) => p.outcome),
      )
      for (const p of batch) p.resolve()
      await this.#forget(batch)
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
            await recordDeliveryOutcomes(
              this.#sql,
              [outcome],
              waiting.map((p) => p.outcome),
            )
            for (const p of waiting) p.resolve()
            await this.#forget(waiting)
          } catch (rowError) {
            for (const p of waiting) p.reject(rowError)
          }
        }),
      )
    }
  }

  /**
   * Deletes the log entries of committed rows; one left behind is only written again (same row).
   * Releases the claims of the final ones; one left (Redis away) keeps its own, longer, expiry.
   */
  async #forget(written: Pending[]) {
    const released = this.#releaseClaims(written)
    const byStream = new Map<string, string[]>()
    const entries = await Promise.allSettled(written.flatMap((p) => (p.logged ? [p.logged] : [])))
    for (const entry of entries) {
      if (entry.status === 'rejected') continue
      const logged = entry.value
      const ids = byStream.get(logged.stream)
      if (ids) ids.push(logged.id)
      else byStream.set(logged.stream, [logged.id])
    }
    if (!this.#redis || byStream.size === 0) return released
    const redis = this.#redis
    await Promise.all([
      released,
      ...[...byStream].map(([stream, ids]) => redis.xdel(stream, ...ids).catch(() => 0)),
    ])
  }

  /**
   * Releases the claims of messages whose final outcome Postgres already holds (a job run again
   * that found it there, and took the claim again on its way).
   */
  releaseClaims(messageIds: string[]): Promise<void> {
    if (!this.#redis || !this.#claims || messageIds.length === 0) return Promise.resolve()
    const { prefix, keepMs } = this.#claims
    const releasing = releaseMessageClaims(this.#redis, prefix, messageIds, keepMs).catch(() => {})
    // `drain` waits for it too: a process closing its connections lets it reach Redis first.
    this.#releasing.add(releasing)
    releasing.finally(() => this.#releasing.delete(releasing))
    return releasing
  }

  #releaseClaims(written: Pending[]): Promise<void> {
    if (!this.#redis || !this.#claims) return Promise.resolve()
    const final = new Set<string>()
    for (const { outcome } of written) if (FINAL_OUTCOMES.has(outcome.status)) final.add(outcome.id)
    return this.releaseClaims([...final])
  }
}
