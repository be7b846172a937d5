/** How long a read of a portfolio's reach stands at the door: the windows' marker's second. */
export const REACH_TTL_MS = 1000
const MOST_PORTFOLIOS = 10_000
/** Recipients known to take no room, over every portfolio: past it the process forgets them all. */
const MOST_FREE = 100_000

/**
 * What this process knows of each portfolio's reach (by `portfolioOf`'s name), so that a send whose
 * answer does not depend on Redis reads nothing:
 *
 * - **The reach, for `REACH_TTL_MS`.** While the reach read then, plus every recipient the door has
 *   let through since (each taken as new, whatever its window), stays within the limit, a send has
 *   room either way. What another instance or delivery counts meanwhile (a sender of the portfolio
 *   under `hold`) is seen at the next read, at most a second late: a send let through past the
 *   limit then is held at delivery.
 * - **Recipients who take no room**, whatever the reach: one let through since the last read (it
 *   took its room already: the reach counts each recipient once); one the reach held at a read
 *   (free until 24 h after the time it was counted: a later send only moves that time on). A
 *   recipient given back since (its message not sent) is taken as free until then: delivery counts
 *   it, and holds it if the portfolio is full, as it does every send the door could not read.
 * - **Open windows**, by number (a window is one number's, the reach the whole portfolio's): a
 *   recipient whose window a read found open is free with that number until it closes (24 h after
 *   their last message: a window only ever opens further).
 *
 * Near the limit a send to a new recipient still reads (peekReach-2.lua), as before this cache.
 */
export class KnownReaches {
  readonly #known = new Map<string, { reach: number; passed: Set<string>; until: number }>()
  /** Per portfolio, recipients who take no room until a time (ms); per number (`window:` + its id), open windows. */
  readonly #free = new Map<string, Map<string, number>>()
  #freeCount = 0

  /**
   * Whether a send from `number` to `recipient` takes no room in the portfolio now: their window
   * with that number open, counted in the reach, or let through since the last read.
   */
  free(portfolio: string, number: string, recipient: string, now: number): boolean {
    const until =
      this.#free.get(portfolio)?.get(recipient) ?? this.#free.get(`window:${number}`)?.get(recipient)
    if (until !== undefined && until > now) return true
    const known = this.#known.get(portfolio)
    return known !== undefined && known.until > now && known.passed.has(recipient)
  }

  /**
   * Whether `recipients` (none of them `free`) fit under `max` by what is known now; if so they take
   * the room. A recipient named twice takes it once.
   */
  take(portfolio: string, max: number, recipients: readonly string[], now: number): boolean {
    const known = this.#known.get(portfolio)
    if (!known || known.until <= now) return false
    if (recipients.length === 1) {
      const recipient = recipients[0] as string
      if (known.passed.has(recipient)) return true
      if (known.reach + known.passed.size + 1 > max) return false
      known.passed.add(recipient)
      return true
    }
    const added = new Set<string>()
    for (const recipient of recipients) if (!known.passed.has(recipient)) added.add(recipient)
    if (known.reach + known.passed.size + added.size > max) return false
    for (const recipient of added) known.passed.add(recipient)
    return true
  }

  /** Whether one more new recipient would fit, without taking the room (a read started early may be spared). */
  fits(portfolio: string, max: number, now: number): boolean {
    const known = this.#known.get(portfolio)
    return known !== undefined && known.until > now && known.reach + known.passed.size + 1 <= max
  }

  /** A fresh read of the reach, and the new recipients the send that read it let through. */
  remember(portfolio: string, reach: number, passed: Iterable<string>, now: number): void {
    if (this.#known.size >= MOST_PORTFOLIOS) this.#known.clear()
    this.#known.set(portfolio, { reach, passed: new Set(passed), until: now + REACH_TTL_MS })
  }

  /** A recipient a read found in the reach, taking no room until `until` (its time counted + 24 h). */
  countedUntil(portfolio: string, recipient: string, until: number): void {
    this.#freeUntil(portfolio, recipient, until)
  }

  /** A recipient whose window with `number` a read found open, until it closes. */
  openUntil(number: string, recipient: string, until: number): void {
    this.#freeUntil(`window:${number}`, recipient, until)
  }

  #freeUntil(portfolio: string, recipient: string, until: number): void {
    if (this.#freeCount >= MOST_FREE) {
      this.#free.clear()
      this.#freeCount = 0
    }
    let recipients = this.#free.get(portfolio)
    if (!recipients) {
      recipients = new Map()
      this.#free.set(portfolio, recipients)
    }
    if (!recipients.has(recipient)) this.#freeCount++
    recipients.set(recipient, until)
  }
}
