import type { ApiKeyRow } from '@dispatch/db'

export interface ApiKeyCacheOptions {
  /** How long a lookup is answered from memory. */
  ttlMs: number
  /** Known keys kept at most. */
  maxEntries: number
  /** Unknown hashes kept at most, apart from the known keys (default: maxEntries). */
  maxUnknown?: number
  /**
   * How long past its TTL an entry still answers when a fresh lookup fails (Postgres unreachable):
   * stale-if-error, so the known keys keep sending through an outage. An entry evicted by a status
   * change is gone, so a key known to be revoked is never served from here. 0 turns it off.
   */
  staleIfErrorMs?: number
  now?: () => number
  /**
   * Told how each lookup was answered (metrics): `hit` without a Postgres query of its own (a fresh
   * entry, or a load already under way), `miss` by a query, `stale` by an expired entry because the
   * query failed.
   */
  onLookup?: (result: KeyCacheLookup) => void
}

export type KeyCacheLookup = 'hit' | 'miss' | 'stale'

interface Entry {
  key: ApiKeyRow
  expiresAt: number
  /** When it was last moved to the end of the order (most recently used). */
  usedAt: number
}

/**
 * A hit moves its entry to the most recently used end at most this often. Moving is a delete and
 * a set of the map, and the deleted slots make it rehash: on every request that was 3 % of a
 * send's CPU. An entry used within the last second is recent enough: only maxEntries other keys
 * first seen within that second could push it out.
 */
export const KEY_CACHE_TOUCH_MS = 1_000

/**
 * In-process cache of key lookups by hash, so a busy sender costs Postgres nothing per request.
 * Unknown hashes are cached too (as null: a key's hash cannot exist before the key does), in a
 * bounded map of their own, so a flood of random keys never pushes a known key out. Bounded
 * (least recently used known keys go first, oldest unknown hashes) and time-limited; a status change anywhere evicts the key
 * at once through `evictKey`, driven by Redis pub/sub. The TTL only bounds staleness when a
 * pub/sub message was missed, and a reconnect of the subscriber clears everything for that reason.
 * When a lookup fails, an expired entry still answers for `staleIfErrorMs` (stale-if-error); once
 * one has failed, and until one succeeds, an expired entry answers without waiting for its load.
 */
export class ApiKeyCache {
  readonly #entries = new Map<string, Entry>()
  /** Unknown hashes, by when they expire: never in `#entries`, so they cannot evict a known key. */
  readonly #unknown = new Map<string, number>()
  readonly #inflight = new Map<string, Promise<ApiKeyRow | null>>()
  /**
   * Evictions are numbered. A lookup remembers the number when it starts, and its result is not
   * cached if its key (or everything) was evicted since: the row it read may predate the change.
   */
  #generation = 0
  #clearedAt = 0
  readonly #evictedAt = new Map<string, number>()
  readonly #ttlMs: number
  readonly #maxEntries: number
  readonly #maxUnknown: number
  readonly #staleIfErrorMs: number
  readonly #now: () => number
  readonly #onLookup: ((result: KeyCacheLookup) => void) | undefined
  /** The last lookup failed (Postgres unreachable) and none has succeeded since. */
  #failing = false

  constructor(options: ApiKeyCacheOptions) {
    this.#ttlMs = options.ttlMs
    this.#maxEntries = options.maxEntries
    this.#maxUnknown = options.maxUnknown ?? options.maxEntries
    this.#staleIfErrorMs = options.staleIfErrorMs ?? 0
    this.#now = options.now ?? Date.now
    this.#onLookup = options.onLookup
  }

  /**
   * The fresh entry for `hash`, answered at once (`undefined` when there is none): the path of a
   * known key, without a promise. A lookup it answers counts as a hit.
   */
  peek(hash: string): ApiKeyRow | null | undefined {
    const hit = this.#entries.get(hash)
    if (!hit) return this.#peekUnknown(hash)
    const now = this.#now()
    if (hit.expiresAt <= now) return undefined
    if (now - hit.usedAt >= KEY_CACHE_TOUCH_MS) {
      this.#entries.delete(hash)
      this.#entries.set(hash, hit)
      hit.usedAt = now
    }
    this.#onLookup?.('hit')
    return hit.key
  }

  /** `null` when `hash` is a fresh unknown one, else `undefined` (not cached). */
  #peekUnknown(hash: string): null | undefined {
    const expiresAt = this.#unknown.get(hash)
    if (expiresAt === undefined || expiresAt <= this.#now()) return undefined
    this.#onLookup?.('hit')
    return null
  }

  /** Whether `hash` was found a real key here, its entry fresh or expired (and not evicted since). */
  holdsKey(hash: string): boolean {
    return this.#entries.has(hash)
  }

  /** The cached lookup for `hash`, or one `load` shared by every concurrent caller. */
  async get(hash: string, load: () => Promise<ApiKeyRow | null>): Promise<ApiKeyRow | null> {
    const hit = this.peek(hash)
    if (hit !== undefined) return hit
    const pending = this.#inflight.get(hash)
    if (pending) {
      const stale = this.#staleWhileFailing(hash)
      if (stale) return stale
      this.#onLookup?.('hit')
      return pending
    }
    const startedAt = this.#generation
    const loading = (async () => {
      try {
        const key = await load()
        this.#failing = false
        const evictedAt = Math.max(this.#clearedAt, key ? (this.#evictedAt.get(key.id) ?? 0) : 0)
        if (evictedAt <= startedAt && this.#ttlMs > 0) this.#store(hash, key)
        this.#onLookup?.('miss')
        return key
      } catch (error) {
        this.#failing = true
        // Still here: not evicted since it was stored, so no status change is known to have made it wrong.
        const stale = this.#entries.get(hash)
        const usable = stale && stale.expiresAt + this.#staleIfErrorMs > this.#now()
        this.#onLookup?.(usable ? 'stale' : 'miss')
        if (usable) return stale.key
        throw error
      } finally {
        // Only after the check above: the eviction record must outlive every lookup it concerns.
        this.#inflight.delete(hash)
        if (this.#inflight.size === 0) this.#evictedAt.clear()
      }
    })()
    this.#inflight.set(hash, loading)
    // While lookups fail, an expired entry answers at once and the load goes on behind it: a load
    // that hangs (a connection attempt to an unreachable Postgres waits out its connect timeout)
    // must not hold a known key's send for seconds. The load, when it ends, is counted as above.
    const stale = this.#staleWhileFailing(hash, false)
    if (stale) {
      loading.catch(() => {})
      return stale
    }
    return loading
  }

  /** The expired entry for `hash` while lookups are failing and it is within `staleIfErrorMs`. */
  #staleWhileFailing(hash: string, count = true): ApiKeyRow | undefined {
    if (!this.#failing) return undefined
    const stale = this.#entries.get(hash)
    if (!stale || stale.expiresAt + this.#staleIfErrorMs <= this.#now()) return undefined
    if (count) this.#onLookup?.('stale')
    return stale.key
  }

  #store(hash: string, key: ApiKeyRow | null) {
    this.#entries.delete(hash)
    this.#unknown.delete(hash)
    const now = this.#now()
    if (key === null) {
      this.#unknown.set(hash, now + this.#ttlMs)
      if (this.#unknown.size > this.#maxUnknown) {
        const oldest = this.#unknown.keys().next().value
        if (oldest !== undefined) this.#unknown.delete(oldest)
      }
      return
    }
    this.#entries.set(hash, { key, expiresAt: now + this.#ttlMs, usedAt: now })
    if (this.#entries.size > this.#maxEntries) {
      const oldest = this.#entries.keys().next().value
      if (oldest !== undefined) this.#entries.delete(oldest)
    }
  }

  evictKey(id: string) {
    this.#generation++
    if (this.#inflight.size > 0) this.#evictedAt.set(id, this.#generation)
    for (const [hash, entry] of this.#entries) {
      if (entry.key.id === id) this.#entries.delete(hash)
    }
  }

  clear() {
    this.#generation++
    this.#clearedAt = this.#generation
    this.#entries.clear()
    this.#unknown.clear()
  }

  /** Entries held, known keys and unknown hashes together. */
  get size() {
    return this.#entries.size + this.#unknown.size
  }
}
