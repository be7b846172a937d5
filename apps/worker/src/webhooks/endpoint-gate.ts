import { randomUUID } from 'node:crypto'
import { join } from 'node:path'
import { defineLuaCommand, luaScripts } from '@dispatch/runtime/lua-scripts'
import type { RedisClient } from '@dispatch/runtime/redis'
import type { Result } from 'ioredis'

declare module 'ioredis' {
  interface RedisCommander<Context> {
    acquireWebhookEndpoint(
      inflightKey: string,
      rateKey: string,
      pauseKey: string,
      concurrency: number,
      ratePerSecond: number,
      leaseMs: number,
      count: number,
      ...tokensThenReleased: string[]
    ): Result<[granted: number, waitMs: number, reason: string], Context>
    slowDownWebhookEndpoint(pauseKey: string, ms: number): Result<number, Context>
  }
}

/**
 * Leases within the endpoint's concurrency and rate, timed by the Redis server's clock
 * (lua/acquireWebhookEndpoint-3.lua); a pause extended, never shortened
 * (lua/slowDownWebhookEndpoint-1.lua).
 */
const scripts = luaScripts(join(import.meta.dirname, 'lua'), [
  'acquireWebhookEndpoint',
  'slowDownWebhookEndpoint',
])

export interface EndpointGateOptions {
  /**
   * The deployment's key prefix (the queue prefix): keys are `<prefix>:webhooks:endpoint:{<id>}:…`,
   * the endpoint's id a hash tag so that one script's three keys share a Redis Cluster slot.
   */
  prefix: string
  /** Deliveries to one endpoint at once, across every worker process. */
  concurrency: number
  /** Deliveries started per second (of the Redis clock) to one endpoint. */
  ratePerSecond: number
  /**
   * How long a slot stays taken when it is never released (its worker died). Longer than a
   * delivery's timeout, or a slow delivery's slot is handed to another before it ends.
   */
  leaseMs: number
  /**
   * How long a release may wait to go with others (RELEASE_DELAY_MS by default): what other
   * workers see of a slot given back is at most this late; this process's own next acquire of the
   * endpoint takes it along at once.
   */
  releaseDelayMs?: number
}

/**
 * Releases come as each POST is answered, a few to an event loop's turn: sent every turn, they were
 * more round trips than the acquires (each a write that wakes Redis), and gathering them for 10 ms
 * made the fan-out benchmark's worker 1.11× as fast. Short beside the 100–250 ms a refused delivery
 * waits before asking again.
 */
export const RELEASE_DELAY_MS = 10

export type EndpointRefusal = 'paused' | 'concurrency' | 'rate'

export type EndpointGrant =
  /** `count` slots, 1 to those asked for; `release(n)` gives back n of them (all, without n). */
  | { ok: true; count: number; release(n?: number): Promise<void> }
  | { ok: false; waitMs: number; reason: EndpointRefusal }

/** A short, spread wait before trying a full endpoint again: slots free up as deliveries end. */
const CONCURRENCY_WAIT_MS = { min: 100, max: 250 }

/**
 * Per-endpoint limits held in Redis, so they hold across every worker process: one script (one
 * round trip) per acquire. A release is not a round trip of its own: it waits up to
 * `releaseDelayMs`, going with the next acquire for its endpoint if one comes meanwhile, else with
 * every other release of that time in one pipeline. So other workers see a slot held at most that
 * much longer.
 * A receiver that asked to slow down (429, 502, 504) is paused with `slowDown`; while paused, or at
 * its concurrency, or past its rate for this second, `acquire` refuses with how long to wait. Uses
 * `defineLuaCommand`, so it adds two commands to the client.
 */
export class EndpointGate {
  readonly #redis: RedisClient
  readonly #options: EndpointGateOptions
  readonly #releaseDelayMs: number
  /** Leases released and not yet sent, by their set's key. */
  #released = new Map<string, string[]>()
  #flushing: Promise<void> | undefined

  constructor(redis: RedisClient, options: EndpointGateOptions) {
    for (const name of ['concurrency', 'ratePerSecond', 'leaseMs'] as const) {
      if (!Number.isSafeInteger(options[name]) || options[name] < 1) {
        throw new RangeError(
          `EndpointGate ${name} must be a whole number of at least 1, got ${options[name]}`,
        )
      }
    }
    this.#redis = redis
    this.#options = options
    this.#releaseDelayMs = options.releaseDelayMs ?? RELEASE_DELAY_MS
    defineLuaCommand(redis, scripts.acquireWebhookEndpoint)
    defineLuaCommand(redis, scripts.slowDownWebhookEndpoint)
  }

  /**
   * Takes slots for up to `count` deliveries to the endpoint (as many as are free, at least one), or
   * says how long to wait before asking again. The grant says how many it holds.
   */
  async acquire(endpointId: string, count = 1): Promise<EndpointGrant> {
    const { concurrency, ratePerSecond, leaseMs } = this.#options
    if (!Number.isSafeInteger(count) || count < 1) {
      throw new RangeError(`EndpointGate.acquire count must be a whole number of at least 1, got ${count}`)
    }
    const inflight = this.#key(endpointId, 'inflight')
    const tokens = Array.from({ length: count }, () => randomUUID())
    const released = this.#released.get(inflight) ?? []
    this.#released.delete(inflight)
    const [granted, waitMs, reason] = await this.#redis.acquireWebhookEndpoint(
      inflight,
      this.#key(endpointId, 'rate'),
      this.#key(endpointId, 'pause'),
      concurrency,
      ratePerSecond,
      leaseMs,
      count,
      ...tokens,
      ...released,
    )
    if (granted > 0) {
      const held = tokens.slice(0, granted)
      // Releasing twice, or after the lease expired, removes nothing.
      const release = (n = held.length) => this.#release(inflight, held.splice(0, n))
      return { ok: true, count: granted, release }
    }
    if (reason === 'concurrency') {
      const { min, max } = CONCURRENCY_WAIT_MS
      return { ok: false, reason, waitMs: min + Math.floor(Math.random() * (max - min + 1)) }
    }
    return { ok: false, reason: reason as EndpointRefusal, waitMs: Math.max(1, waitMs) }
  }

  /**
   * Pauses the endpoint for `ms` from now, for every worker; never shortens a longer pause already
   * set. Resolves to the pause now in force, in ms.
   */
  async slowDown(endpointId: string, ms: number): Promise<number> {
    if (!Number.isFinite(ms) || ms <= 0) throw new RangeError(`slowDown needs a positive duration, got ${ms}`)
    return this.#redis.slowDownWebhookEndpoint(this.#key(endpointId, 'pause'), Math.ceil(ms))
  }

  /** Resolves once the lease is gone from Redis (or the release failed: the lease then runs out). */
  #release(inflight: string, tokens: string[]): Promise<void> {
    const waiting = this.#released.get(inflight)
    if (waiting) waiting.push(...tokens)
    else this.#released.set(inflight, [...tokens])
    this.#flushing ??= new Promise<void>((resolve) => setTimeout(resolve, this.#releaseDelayMs)).then(() =>
      this.#flush(),
    )
    return this.#flushing
  }

  /** Sends what no acquire took along meanwhile: one ZREM per endpoint, all in one round trip. */
  async #flush(): Promise<void> {
    this.#flushing = undefined
    const released = this.#released
    this.#released = new Map()
    if (released.size === 0) return
    const pipeline = this.#redis.pipeline()
    for (const [inflight, tokens] of released) pipeline.zrem(inflight, ...tokens)
    await pipeline.exec()
  }

  #key(endpointId: string, what: 'inflight' | 'rate' | 'pause'): string {
    return `${this.#options.prefix}:webhooks:endpoint:{${endpointId}}:${what}`
  }
}
