/**
 * How the relay adds each queue's jobs: their retries and how long Redis keeps them. The relay is
 * the one producer of these queues, so their options live beside it.
 */

/** An e-mail: retried with jittered backoff. Retention: enough to dedupe a relayed row and to inspect failures, bounded in Redis. */
export const emailJobOptions = (attempts: number, backoffMs: number) => ({
  attempts,
  backoff: { type: 'exponential' as const, delay: backoffMs, jitter: 0.5 },
  removeOnComplete: { age: 7 * 24 * 3600, count: 10_000 },
  removeOnFail: { age: 30 * 24 * 3600 },
})

/**
 * How the relay adds a confirmation: retried with exponential backoff from MESSAGES_BACKOFF_MS
 * (about 17 minutes over ten attempts at the default 1 s), never past them; kept a week once sent,
 * a month once failed, for the queue dashboard.
 */
export const confirmationJobOptions = (backoffMs: number) => ({
  attempts: 10,
  backoff: { type: 'exponential' as const, delay: backoffMs, jitter: 0.5 },
  removeOnComplete: { age: 7 * 24 * 3600, count: 10_000 },
  removeOnFail: { age: 30 * 24 * 3600 },
})

/**
 * How the relay adds an erasure's job. Removed once it ends, completed or failed for good: the job
 * is the one place the recipient is written in plain, and must not outlive the erasure. Retried
 * with backoff meanwhile (a database or Redis blip), every step being safe to run again.
 */
export const ERASURE_JOB_OPTIONS = {
  attempts: 5,
  backoff: { type: 'exponential' as const, delay: 5000 },
  removeOnComplete: true,
  removeOnFail: true,
}

/**
 * How the relay adds a revoked key's or a canceled campaign's sweep: retried with backoff (a
 * database or Redis blip), each step safe to run again.
 */
export const REVOCATION_JOB_OPTIONS = {
  attempts: 10,
  backoff: { type: 'exponential' as const, delay: 2000 },
  removeOnComplete: { age: 7 * 24 * 3600 },
  removeOnFail: { age: 30 * 24 * 3600 },
}
