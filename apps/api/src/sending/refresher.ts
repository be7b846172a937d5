/**
 * Keeps a copy held in this process current: `start` loads it, waiting at most `bootWaitMs` (a
 * Postgres that does not answer must not hold the API's start; the load goes on meanwhile), then
 * loads it again every `refreshMs` until `stop`. `refresh` never throws.
 */
export class Refresher {
  readonly #refresh: () => Promise<void>
  #timer: NodeJS.Timeout | undefined
  #stopped = false

  constructor(refresh: () => Promise<void>) {
    this.#refresh = refresh
  }

  async start(refreshMs: number, bootWaitMs = 5000): Promise<void> {
    let timer: NodeJS.Timeout | undefined
    await Promise.race([
      this.#refresh(),
      new Promise((resolve) => {
        timer = setTimeout(resolve, bootWaitMs)
      }),
    ])
    clearTimeout(timer)
    const loop = () => {
      if (this.#stopped) return
      this.#timer = setTimeout(async () => {
        await this.#refresh()
        loop()
      }, refreshMs)
      this.#timer.unref()
    }
    loop()
  }

  stop(): void {
    this.#stopped = true
    clearTimeout(this.#timer)
  }
}
