import { clockMinutes } from '@dispatch/contracts'

const MINUTE = 60_000
const DAY = 24 * 60 * MINUTE

/** A stretch of the local day: `start` and `end` as minutes after midnight (`end` < `start`: it spans midnight). */
export interface QuietStretch {
  start: string
  end: string
}

/**
 * When quiet hours let a message go. For several zones (a country that spans them) a message waits
 * until it is outside quiet hours in every one, so nobody in the country is messaged at night; when
 * the zones lie so far apart that no such moment comes within a day, it goes when quiet hours end
 * in the first zone they end in. Answers are kept per zone list and stretch for the minute they were
 * worked out in (they cannot change within it: zones' offsets and the stretch are whole minutes).
 */
export class QuietHoursClock {
  readonly #formats = new Map<string, Intl.DateTimeFormat>()
  readonly #answers = new WeakMap<
    readonly string[],
    Map<string, { minute: number; releaseAt: number | null }>
  >()

  /** When a message due at `at` (ms) may go; undefined when `at` is outside quiet hours. */
  releaseAt(quiet: QuietStretch, zones: readonly string[], at: number): number | undefined {
    const minute = Math.floor(at / MINUTE)
    let byStretch = this.#answers.get(zones)
    if (!byStretch) {
      byStretch = new Map()
      this.#answers.set(zones, byStretch)
    }
    const stretchKey = `${quiet.start}-${quiet.end}`
    const known = byStretch.get(stretchKey)
    if (known?.minute === minute) return known.releaseAt ?? undefined
    const releaseAt = this.#workOut(
      clockMinutes(quiet.start),
      clockMinutes(quiet.end),
      zones,
      minute * MINUTE,
    )
    byStretch.set(stretchKey, { minute, releaseAt: releaseAt ?? null })
    return releaseAt
  }

  #workOut(start: number, end: number, zones: readonly string[], at: number): number | undefined {
    const quietAt = (t: number) => zones.some((zone) => within(this.#localMinute(zone, t), start, end))
    if (!quietAt(at)) return undefined
    // When each zone's quiet hours end next: the only moments a wait can end at.
    const ends = new Set<number>()
    for (const zone of zones) {
      const offset = this.#offset(zone, at)
      const local = at + offset
      let localEnd = Math.floor(local / DAY) * DAY + end * MINUTE
      if (localEnd <= local) localEnd += DAY
      let candidate = localEnd - offset
      // A daylight-saving change before then moves the zone's clock: take its offset at that time.
      const later = this.#offset(zone, candidate)
      if (later !== offset) candidate = localEnd - later
      ends.add(candidate)
    }
    const candidates = [...ends].filter((t) => t > at).sort((a, b) => a - b)
    return candidates.find((t) => !quietAt(t)) ?? candidates[0]
  }

  /** Minutes after local midnight in `zone` at `t`. */
  #localMinute(zone: string, t: number): number {
    const local = t + this.#offset(zone, t)
    return Math.floor((((local % DAY) + DAY) % DAY) / MINUTE)
  }

  /** The zone's offset from UTC at `t` (ms, whole minutes). */
  #offset(zone: string, t: number): number {
    const parts = this.#format(zone).formatToParts(t)
    const get = (type: string) => Number(parts.find((p) => p.type === type)?.value)
    const local = Date.UTC(get('year'), get('month') - 1, get('day'), get('hour'), get('minute'))
    return local - Math.floor(t / MINUTE) * MINUTE
  }

  #format(zone: string): Intl.DateTimeFormat {
    let format = this.#formats.get(zone)
    if (!format) {
      format = new Intl.DateTimeFormat('en-US', {
        timeZone: zone,
        hourCycle: 'h23',
        year: 'numeric',
        month: 'numeric',
        day: 'numeric',
        hour: 'numeric',
        minute: 'numeric',
      })
      this.#formats.set(zone, format)
    }
    return format
  }
}

/** Whether a minute of the day falls in [start, end), spanning midnight when end < start. */
const within = (minute: number, start: number, end: number) =>
  start < end ? minute >= start && minute < end : minute >= start || minute < end
