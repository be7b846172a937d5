/** How long a read of a portfolio's reach stands at the door: the windows' marker's second. */
export const REACH_TTL_MS = 1000
const MOST_PORTFOLIOS = 10_000

/**
 * Each portfolio's reach (by `portfolioOf`'s name) as this process last read it, for `REACH_TTL_MS`. While the reach read
 * then, plus every recipient the door has let through since (each taken as new, whoever it is and
 * whatever its window), stays within the limit, a send has room either way: it passes without a
 * read. Near the limit each send reads again (peekReach-1.lua), as before this cache. What another
 * instance or delivery counts meanwhile (a sender of the portfolio under `hold`) is seen at the next
 * read, at most a second late: a send let through past the limit then is held at delivery.
 */
export class KnownReaches {
  readonly #known = new Map<string, { reach: number; passed: number; until: number }>()

  /** Whether `count` more recipients fit under `max` by what is known now; if so they take the room. */
  take(portfolio: string, max: number, count: number, now: number): boolean {
    const known = this.#known.get(portfolio)
    if (!known || known.until <= now || known.reach + known.passed + count > max) return false
    known.passed += count
    return true
  }

  /** Whether `count` more would fit, without taking the room (a read started early may be spared). */
  fits(portfolio: string, max: number, count: number, now: number): boolean {
    const known = this.#known.get(portfolio)
    return known !== undefined && known.until > now && known.reach + known.passed + count <= max
  }

  /** A fresh read of the reach, and how many new recipients the send that read it let through. */
  remember(portfolio: string, reach: number, passed: number, now: number): void {
    if (this.#known.size >= MOST_PORTFOLIOS) this.#known.clear()
    this.#known.set(portfolio, { reach, passed, until: now + REACH_TTL_MS })
  }
}
