import { randomUUID } from 'node:crypto'
import { evalLuaScript } from '@dispatch/runtime/lua-scripts'
import { RELEASE_LOCK_SCRIPT, type RedisClient } from '@dispatch/runtime/redis'
import { type WorkerContext, whenReady } from '../../runtime.ts'

const LOCK_MS = 5 * 60_000

/** A copy in Redis of a record Postgres keeps, which the hot path reads without Postgres. */
export interface RedisCopy {
  /** For logs: `service windows`, `suppressions`. */
  name: string
  /** Set once the copy is complete; its absence (Redis lost its data) starts a rebuild. */
  marker: string
  /** Held by the one process rebuilding (across processes). */
  lock: string
  /** Copies every record into Redis, never moving a newer value back; answers how many. */
  copy(redis: RedisClient, now: Date): Promise<number>
}

/**
 * Keeps a Redis copy complete: the API writes each change there as it happens, and a Redis that
 * lost its data (a restart without persistence, a failover to an empty replica) loses the copy and
 * its marker. Every `intervalMs`, one worker (a lock across processes) finds the marker missing,
 * copies every record from Postgres, then sets it. A failure is tried again within a second.
 */
export class RedisCopyRebuild {
  readonly #context: WorkerContext
  readonly #copy: RedisCopy
  readonly #intervalMs: number
  readonly #redis
  #timer: NodeJS.Timeout | undefined
  #running: Promise<unknown> = Promise.resolve()
  #stopped = false

  constructor(context: WorkerContext, copy: RedisCopy, intervalMs: number) {
    this.#context = context
    this.#copy = copy
    this.#intervalMs = intervalMs
    this.#redis = context.redis(copy.name.replace(/\s+/g, '-'), { blocking: false })
  }

  start(): void {
    const loop = async () => {
      let failed = false
      this.#running = this.runOnce().catch((error) => {
        failed = true
        this.#context.logger.warn({ err: error }, `${this.#copy.name} not rebuilt; trying again`)
      })
      await this.#running
      const interval = this.#intervalMs
      if (!this.#stopped) this.#timer = setTimeout(loop, failed ? Math.min(interval, 1000) : interval)
    }
    // The first pass once this process's connection is up.
    whenReady(this.#redis, () => {
      if (!this.#stopped) this.#timer = setTimeout(loop, 0)
    })
  }

  /** Rebuilds the copy when its marker is missing; answers how many records it copied (null: not needed). */
  async runOnce(now = new Date()): Promise<number | null> {
    const { marker, lock } = this.#copy
    if ((await this.#redis.exists(marker)) === 1) return null
    const token = randomUUID()
    if ((await this.#redis.set(lock, token, 'PX', LOCK_MS, 'NX')) !== 'OK') return null
    try {
      const copied = await this.#copy.copy(this.#redis, now)
      await this.#redis.set(marker, now.toISOString())
      this.#context.logger.info({ copied }, `${this.#copy.name} copied from Postgres into Redis`)
      return copied
    } finally {
      await evalLuaScript(this.#redis, RELEASE_LOCK_SCRIPT, lock, token).catch(() => {})
    }
  }

  async stop(): Promise<void> {
    this.#stopped = true
    clearTimeout(this.#timer)
    await this.#running
  }
}
