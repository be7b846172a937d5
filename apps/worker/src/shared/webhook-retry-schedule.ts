/**
 * Svix's schedule: after the first attempt fails, retry after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h
 * and 10 h: 8 attempts over about 28 hours.
 */
export const DEFAULT_WEBHOOK_RETRY_SCHEDULE = '5s,5m,30m,2h,5h,10h,10h'

const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 } as const
const DELAY = /^(\d+)(ms|s|m|h)$/

/**
 * The delays (ms) before each retry, from a comma-separated list such as
 * `DEFAULT_WEBHOOK_RETRY_SCHEDULE`: whole numbers with a unit of ms, s, m or h. A delivery gets
 * `delays.length + 1` attempts in all. Throws naming the entry that is not understood.
 */
export function parseRetrySchedule(text: string): number[] {
  const parts = text.split(',').map((part) => part.trim())
  return parts.map((part, index) => {
    const match = DELAY.exec(part)
    if (!match) {
      throw new Error(
        `retry schedule ${JSON.stringify(text)}: entry ${index + 1} (${JSON.stringify(part)}) is not a whole number followed by ms, s, m or h`,
      )
    }
    return Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS]
  })
}

/** How many attempts a delivery gets with this schedule: the first, then one per delay. */
export const attemptsFor = (schedule: readonly number[]) => schedule.length + 1

/** The share of a delay that is random, both ways, so retries of many deliveries spread out. */
const JITTER = 0.1

/**
 * How long to wait before the next attempt once `attemptsMade` attempts (1 or more) have failed:
 * the schedule's delay for it, or the receiver's `Retry-After` when that is longer, with a jitter
 * of ±10 % so deliveries that failed together do not all come back at once. When `Retry-After`
 * decides, the jitter only adds: a receiver is never retried sooner than it asked.
 *
 * Returns null once the schedule is used up: the delivery has failed for good (a BullMQ backoff
 * strategy answers -1 for that). `random` is there for tests.
 */
export function retryDelay(
  schedule: readonly number[],
  attemptsMade: number,
  retryAfterMs?: number | null,
  random: () => number = Math.random,
): number | null {
  if (!Number.isInteger(attemptsMade) || attemptsMade < 1) {
    throw new RangeError(`attemptsMade must be a whole number of at least 1, got ${attemptsMade}`)
  }
  const scheduled = schedule[attemptsMade - 1]
  if (scheduled === undefined) return null
  const asked = retryAfterMs ?? 0
  const spread = random() * 2 - 1 // [-1, 1)
  if (asked >= scheduled) return Math.round(asked * (1 + JITTER * Math.abs(spread)))
  return Math.max(asked, Math.round(scheduled * (1 + JITTER * spread)))
}
