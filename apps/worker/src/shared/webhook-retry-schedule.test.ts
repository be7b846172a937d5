import { describe, expect, it } from 'vitest'
import {
  attemptsFor,
  DEFAULT_WEBHOOK_RETRY_SCHEDULE,
  parseRetrySchedule,
  retryDelay,
} from './webhook-retry-schedule.ts'

const s = 1000
const m = 60 * s
const h = 60 * m

describe('parseRetrySchedule', () => {
  it('reads the default, Svix’s schedule: 8 attempts in all', () => {
    const schedule = parseRetrySchedule(DEFAULT_WEBHOOK_RETRY_SCHEDULE)
    expect(schedule).toEqual([5 * s, 5 * m, 30 * m, 2 * h, 5 * h, 10 * h, 10 * h])
    expect(attemptsFor(schedule)).toBe(8)
  })

  it('takes ms, s, m and h, and spaces around the commas', () => {
    expect(parseRetrySchedule('250ms, 1s ,2m,0h')).toEqual([250, 1000, 2 * m, 0])
  })

  it.each([
    ['', 1, '""'],
    ['5s,,5m', 2, '""'],
    ['5s,5', 2, '"5"'],
    ['5s,1d', 2, '"1d"'],
    ['-5s', 1, '"-5s"'],
    ['1.5s', 1, '"1.5s"'],
    ['5 s', 1, '"5 s"'],
  ])('refuses %j, naming entry %i', (text, entry, part) => {
    expect(() => parseRetrySchedule(text)).toThrow(
      `entry ${entry} (${part}) is not a whole number followed by ms, s, m or h`,
    )
  })
})

describe('retryDelay', () => {
  const schedule = parseRetrySchedule(DEFAULT_WEBHOOK_RETRY_SCHEDULE)
  const low = () => 0 // spread -1: 10 % less
  const mid = () => 0.5 // spread 0: exactly
  const high = () => 0.999_999 // spread ~1: 10 % more

  it('follows the schedule by the number of attempts made', () => {
    expect(retryDelay(schedule, 1, null, mid)).toBe(5 * s)
    expect(retryDelay(schedule, 2, undefined, mid)).toBe(5 * m)
    expect(retryDelay(schedule, 7, 0, mid)).toBe(10 * h)
  })

  it('spreads each delay by at most 10 % either way', () => {
    expect(retryDelay(schedule, 1, null, low)).toBe(4500)
    expect(retryDelay(schedule, 1, null, high)).toBe(5500)
    for (let i = 0; i < 200; i++) {
      const delay = retryDelay(schedule, 3) ?? 0
      expect(delay).toBeGreaterThanOrEqual(27 * m)
      expect(delay).toBeLessThanOrEqual(33 * m)
    }
  })

  it('waits as long as Retry-After asks when that is longer, never less, jittering only upwards', () => {
    expect(retryDelay(schedule, 1, 7 * s, low)).toBe(7700)
    expect(retryDelay(schedule, 1, 7 * s, mid)).toBe(7 * s)
    expect(retryDelay(schedule, 1, 7 * s, high)).toBe(7700)
    // A Retry-After just under the scheduled delay still bounds the jitter from below.
    expect(retryDelay(schedule, 1, 4900, low)).toBe(4900)
    // A short Retry-After does not make the schedule any shorter.
    expect(retryDelay(schedule, 2, 7 * s, mid)).toBe(5 * m)
  })

  it('returns null once the schedule is used up, and refuses a nonsense attempt count', () => {
    expect(retryDelay(schedule, 8)).toBeNull()
    expect(() => retryDelay(schedule, 0)).toThrow(RangeError)
    expect(() => retryDelay(schedule, 1.5)).toThrow(RangeError)
  })
})
