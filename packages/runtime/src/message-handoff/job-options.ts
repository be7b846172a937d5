/**
 * How every `messages` job is added (the job id is the message id). The backoff is the worker's own
 * `platform` strategy: exponential with jitter from its config, or the platform's `Retry-After`.
 * Retention is bounded; finished jobs stay long enough to answer a status query before the worker's
 * record lands, and failed ones for a week of inspection.
 */
export const MESSAGE_JOB_OPTIONS = {
  attempts: 8,
  backoff: { type: 'platform' },
  removeOnComplete: { age: 24 * 3600, count: 100_000 },
  removeOnFail: { age: 7 * 24 * 3600, count: 100_000 },
} as const
