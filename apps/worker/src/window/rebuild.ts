import { randomUUID } from 'node:crypto'
import {
  SERVICE_WINDOW_MS,
  SERVICE_WINDOW_RECORD_SCRIPT,
  serviceWindowKey,
  serviceWindowsLoadedKey,
} from '@dispatch/contracts'
import { listOpenWindows } from '@dispatch/db'
import type { WorkerContext } from '../runtime.ts'

const PAGE = 1000
const LOCK_MS = 5 * 60_000
const RELEASE_SCRIPT = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`

/**
 * Keeps the Redis copy of the 24-hour windows complete. The API writes each reply's window there as
 * it arrives; a Redis that lost its data (a restart without persistence, a failover to an empty
 * replica) loses them all, and a send checked under `enforce` would then find every window closed.
 * So the copy carries a marker, and while it is missing windows read as unknown (the platform
 * decides): every SERVICE_WINDOW_CHECK_MS, one worker (a lock across processes) copies every window
 * Postgres has open into Redis, never moving one back, then sets the marker.
 */
export class ServiceWindowRebuild {
  readonly #context: WorkerContext
  readonly #redis
  #timer: NodeJS.Timeout | undefined
  #running: Promise<unknown> = Promise.resolve()
  #stopped = false

  constructor(context: WorkerContext) {
    this.#context = context
    this.#redis = context.redis('service-windows', { blocking: false })
  }

  start(): void {
    const loop = async () => {
      let failed = false
      this.#running = this.runOnce().catch((error) => {
        failed = true
        this.#context.logger.warn({ err: error }, 'service windows not rebuilt; trying again')
      })
      await this.#running
      // A failure (Redis or Postgres away) is tried again within a second, not a whole interval:
      // until the copy is marked complete, the checks under `enforce` see every window as unknown.
      const interval = this.#context.config.SERVICE_WINDOW_CHECK_MS
      if (!this.#stopped) this.#timer = setTimeout(loop, failed ? Math.min(interval, 1000) : interval)
    }
    // The first pass once this process's connection is up (it fails fast, without a queue).
    if (this.#redis.status === 'ready') this.#timer = setTimeout(loop, 0)
    else
      this.#redis.once('ready', () => {
        if (!this.#stopped) void loop()
      })
  }

  /** Rebuilds the copy when its marker is missing; answers how many windows it copied (null: not needed). */
  async runOnce(now = new Date()): Promise<number | null> {
    const prefix = this.#context.config.QUEUE_PREFIX
    const marker = serviceWindowsLoadedKey(prefix)
    if ((await this.#redis.exists(marker)) === 1) return null
    const lock = `${prefix}:window:rebuild-lock`
    const token = randomUUID()
    if ((await this.#redis.set(lock, token, 'PX', LOCK_MS, 'NX')) !== 'OK') return null
    try {
      let copied = 0
      let after: { phoneNumberId: string; phone: string } | undefined
      const since = new Date(now.getTime() - SERVICE_WINDOW_MS)
      for (;;) {
        const page = await listOpenWindows(this.#context.db, since, after, PAGE)
        if (page.length === 0) break
        await Promise.all(
          page.map((w) => {
            const at = w.lastInboundAt.getTime()
            return this.#redis.eval(
              SERVICE_WINDOW_RECORD_SCRIPT,
              1,
              serviceWindowKey(prefix, w.phoneNumberId, w.phone),
              at,
              at + SERVICE_WINDOW_MS,
              Date.now(),
            )
          }),
        )
        copied += page.length
        const last = page.at(-1) as { phoneNumberId: string; phone: string }
        after = { phoneNumberId: last.phoneNumberId, phone: last.phone }
        if (page.length < PAGE) break
      }
      await this.#redis.set(marker, now.toISOString())
      this.#context.logger.info({ windows: copied }, 'service windows copied from Postgres into Redis')
      return copied
    } finally {
      await this.#redis.eval(RELEASE_SCRIPT, 1, lock, token).catch(() => {})
    }
  }

  async stop(): Promise<void> {
    this.#stopped = true
    clearTimeout(this.#timer)
    await this.#running
  }
}
