import type { ApiKeyRow } from '@dispatch/db'

interface Entry {
  key: ApiKeyRow | null
  expiresAt: number
}

/**
 * In-process cache of key lookups by hash, so a busy sender costs Postgres nothing per request.
 * Unknown hashes are cached too (as null): a key's hash cannot exist before the key does. Bounded
 * (least recently used entries go first) and time-limited; a status change anywhere evicts the key
 * at once through `evictKey`, driven by Redis pub/sub. The TTL only bounds staleness when a
 * pub/sub message was missed, and a reconnect of the subscriber clears everything for that reason.
 */
export class ApiKeyCache {
  readonly #entries = new Map<string, Entry>()
  readonly #inflight = new Map<string, Promise<ApiKeyRow | null>>()
  /** When the cache last lost entries; a load that started before then is not cached. */
  #clearedAt = 0
  private readonly ttlMs: number
  private readonly maxEntries: number
  private readonly now: () => number

  constructor(ttlMs: number, maxEntries: number, now: () => number = Date.now) {
    this.ttlMs = ttlMs
    this.maxEntries = maxEntries
    this.now = now
  }

  /** The cached lookup for `hash`, or one `load` shared by every concurrent caller. */
  async get(hash: string, load: () => Promise<ApiKeyRow | null>): Promise<ApiKeyRow | null> {
    const hit = this.#entries.get(hash)
    if (hit && hit.expiresAt > this.now()) {
      this.#entries.delete(hash)
      this.#entries.set(hash, hit)
      return hit.key
    }
    const pending = this.#inflight.get(hash)
    if (pending) return pending
    const started = this.now()
    const loading = load().finally(() => this.#inflight.delete(hash))
    this.#inflight.set(hash, loading)
    const key = await loading
    // An eviction that arrived while loading may describe a newer state than we read: skip caching.
    if (this.#clearedAt <= started && this.ttlMs > 0) this.#store(hash, key)
    return key
  }

  #store(hash: string, key: ApiKeyRow | null) {
    this.#entries.delete(hash)
    this.#entries.set(hash, { key, expiresAt: this.now() + this.ttlMs })
    if (this.#entries.size > this.maxEntries) {
      const oldest = this.#entries.keys().next().value
      if (oldest !== undefined) this.#entries.delete(oldest)
    }
  }

  evictKey(id: string) {
    this.#clearedAt = this.now()
    for (const [hash, entry] of this.#entries) {
      if (entry.key?.id === id) this.#entries.delete(hash)
    }
  }

  clear() {
    this.#clearedAt = this.now()
    this.#entries.clear()
  }

  get size() {
    return this.#entries.size
  }
}
