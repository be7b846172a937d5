/**
 * Places for work in flight in a process (webhook POSTs, platform calls): taken several at once (a
 * bundle's wave), all or none, in the order asked, so a wave never holds some while waiting for the
 * rest.
 */
export class Permits {
  #free: number
  readonly #waiting: Array<{ count: number; resolve: () => void }> = []

  constructor(count: number) {
    this.#free = count
  }

  /** Undefined when the places were free (no await needed), else a promise of them. */
  take(count: number): Promise<void> | undefined {
    if (this.#waiting.length === 0 && this.#free >= count) {
      this.#free -= count
      return undefined
    }
    return new Promise((resolve) => this.#waiting.push({ count, resolve }))
  }

  give(count: number) {
    this.#free += count
    for (let next = this.#waiting[0]; next && next.count <= this.#free; next = this.#waiting[0]) {
      this.#waiting.shift()
      this.#free -= next.count
      next.resolve()
    }
  }
}

/** Runs `work` on one place, given back when it settles. */
export async function withPermit<T>(permits: Permits, work: () => Promise<T>): Promise<T> {
  const waiting = permits.take(1)
  if (waiting) await waiting
  try {
    return await work()
  } finally {
    permits.give(1)
  }
}
