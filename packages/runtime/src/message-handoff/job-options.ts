/**
 * How every `messages` job is added (the job id is the message id). The backoff is the worker's own
 * `platform` strategy: exponential with jitter from its config, or the platform's `Retry-After`.
 * A completed job is removed as it completes, as a bundle is: its outcome is in Postgres already,
 * or (sent) in its sender's sent log until its row lands, where the status lookup reads it; Redis
 * keeps nothing of a delivered message (docs/durability.md, "What Redis keeps of a message"). Failed
 * ones stay a week for inspection, bounded.
 */
export const MESSAGE_JOB_OPTIONS = {
  attempts: 8,
  backoff: { type: 'platform' },
  removeOnComplete: true,
  removeOnFail: { age: 7 * 24 * 3600, count: 100_000 },
} as const

/**
 * The attempts a message's next job may make: the maximum less what jobs before it spent (a bundle
 * that handed it on, a pool number it was moved off: `attemptsSpent`), at least one. Moving never
 * gives a message more attempts than the maximum.
 */
export const attemptsLeft = (job: { attemptsSpent?: number | undefined }) =>
  Math.max(1, MESSAGE_JOB_OPTIONS.attempts - (job.attemptsSpent ?? 0))
