import { MESSAGE_JOB_OPTIONS, type MessageJob } from '@dispatch/contracts'
import type { Queue } from 'bullmq'

interface Pending {
  job: MessageJob
  /** How long the queue holds it back: a scheduled message's wait until its `sendAt`. */
  delayMs: number
  resolve(): void
  reject(error: unknown): void
}

/**
 * Adds the jobs of every request that arrives in the same turn of the event loop with one
 * `addBulk` (one pipeline): under load that halves the producer's cost per message, and a lone
 * request waits only for the current turn to end. Every request waits for the whole flush, so no
 * request is told 202 for a job that is not in Redis. The pipeline is not a transaction: when Redis
 * fails partway, some jobs of a flush answered 503 may be stored (see docs/messaging.md).
 */
export class MessageEnqueuer {
  readonly #queue: Queue<MessageJob>
  #pending: Pending[] = []

  constructor(queue: Queue<MessageJob>) {
    this.#queue = queue
  }

  add(job: MessageJob, delayMs = 0): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.#pending.push({ job, delayMs, resolve, reject }) === 1) setImmediate(() => this.#flush())
    })
  }

  async #flush() {
    const batch = this.#pending
    this.#pending = []
    try {
      await this.#queue.addBulk(
        batch.map(({ job, delayMs }) => ({
          name: job.message.type,
          data: job,
          opts: { ...MESSAGE_JOB_OPTIONS, jobId: job.messageId, ...(delayMs > 0 ? { delay: delayMs } : {}) },
        })),
      )
      for (const pending of batch) pending.resolve()
    } catch (error) {
      for (const pending of batch) pending.reject(error)
    }
  }
}
