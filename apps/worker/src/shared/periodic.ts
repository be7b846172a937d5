/**
 * A pass run every `everyMs`, the first one `firstAfterMs` after `start` (one interval unless told),
 * never two at once: a failed pass is handed to `failed` (logged) and the next comes on time; `stop`
 * waits for the one under way. The messages worker's sweepers (held senders' expiries, abandoned SMS
 * calls, SMS prices, stalled jobs' fallbacks) run on it.
 */
export class Periodic {
  readonly #pass: () => Promise<unknown>
  readonly #everyMs: number
  readonly #failed: (error: unknown) => void
  readonly #firstAfterMs: number
  #timer: NodeJS.Timeout | undefined
  #running: Promise<void> | undefined
  #stopped = false

  constructor(
    pass: () => Promise<unknown>,
    everyMs: number,
    failed: (error: unknown) => void,
    firstAfterMs = everyMs,
  ) {
    this.#pass = pass
    this.#everyMs = everyMs
    this.#failed = failed
    this.#firstAfterMs = firstAfterMs
  }

  /** Stopped: a pass under way should end at its next step. */
  get stopped(): boolean {
    return this.#stopped
  }

  start(): void {
    const loop = async () => {
      if (this.#stopped) return
      this.#running = this.#pass().then(() => {}, this.#failed)
      await this.#running
      if (!this.#stopped) this.#timer = setTimeout(loop, this.#everyMs)
    }
    this.#timer = setTimeout(loop, this.#firstAfterMs)
  }

  async stop(): Promise<void> {
    this.#stopped = true
    clearTimeout(this.#timer)
    await this.#running
  }
}
