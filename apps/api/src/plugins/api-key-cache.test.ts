import type { ApiKeyRow } from '@dispatch/db'
import { describe, expect, it } from 'vitest'
import { ApiKeyCache, KEY_CACHE_TOUCH_MS } from './api-key-cache.ts'

const row = (id: string, status: ApiKeyRow['status'] = 'approved') => ({ id, status }) as ApiKeyRow

describe('ApiKeyCache', () => {
  it('loads once, then answers from memory until the TTL passes', async () => {
    let now = 0
    const cache = new ApiKeyCache({ ttlMs: 1000, maxEntries: 10, now: () => now })
    let loads = 0
    const load = async () => {
      loads++
      return row('a')
    }
    await cache.get('h', load)
    await cache.get('h', load)
    expect(loads).toBe(1)
    now = 1001
    await cache.get('h', load)
    expect(loads).toBe(2)
  })

  it('shares one load among concurrent callers', async () => {
    const cache = new ApiKeyCache({ ttlMs: 1000, maxEntries: 10 })
    let loads = 0
    const load = async () => {
      loads++
      await new Promise((r) => setTimeout(r, 10))
      return row('a')
    }
    await Promise.all([cache.get('h', load), cache.get('h', load), cache.get('h', load)])
    expect(loads).toBe(1)
  })

  it('drops a key on eviction, and does not cache a read that raced with it', async () => {
    const cache = new ApiKeyCache({ ttlMs: 1000, maxEntries: 10 })
    await cache.get('h', async () => row('a'))
    cache.evictKey('a')
    expect(cache.size).toBe(0)

    let release: () => void = () => {}
    const slow = cache.get('h', () => new Promise((r) => (release = () => r(row('a', 'approved')))))
    cache.evictKey('a') // the key changed while its old state was being read
    release()
    expect((await slow)?.status).toBe('approved')
    expect(cache.size).toBe(0)

    // An eviction of another key does not stop this one from being cached.
    let releaseB: () => void = () => {}
    const other = cache.get('h', () => new Promise((r) => (releaseB = () => r(row('a')))))
    cache.evictKey('b')
    releaseB()
    await other
    expect(cache.size).toBe(1)
  })

  it('keeps at most maxEntries, dropping the least recently used', async () => {
    let now = 0
    const cache = new ApiKeyCache({ ttlMs: 60_000, maxEntries: 2, now: () => now })
    await cache.get('1', async () => row('1'))
    await cache.get('2', async () => row('2'))
    now += KEY_CACHE_TOUCH_MS // a hit moves its entry at most once per KEY_CACHE_TOUCH_MS
    await cache.get('1', async () => row('1')) // 1 is now the most recent
    await cache.get('3', async () => row('3'))
    let reloaded = false
    await cache.get('2', async () => {
      reloaded = true
      return row('2')
    })
    expect(reloaded).toBe(true)
  })

  it('remembers unknown keys too, and forgets everything on clear', async () => {
    const cache = new ApiKeyCache({ ttlMs: 1000, maxEntries: 10 })
    let loads = 0
    const unknown = async () => {
      loads++
      return null
    }
    await cache.get('nope', unknown)
    await cache.get('nope', unknown)
    expect(loads).toBe(1)
    cache.clear()
    await cache.get('nope', unknown)
    expect(loads).toBe(2)
  })

  it('keeps unknown hashes apart: however many, they never push a known key out', async () => {
    const cache = new ApiKeyCache({ ttlMs: 60_000, maxEntries: 2, maxUnknown: 3 })
    await cache.get('known', async () => row('k'))
    for (let i = 0; i < 50; i++) await cache.get(`unknown-${i}`, async () => null)
    expect(cache.size).toBe(1 + 3)
    expect(cache.peek('known')?.id).toBe('k')
    expect(cache.peek('unknown-49')).toBeNull()
    expect(cache.peek('unknown-0')).toBeUndefined() // the oldest unknown ones went first
  })

  it('answers from an expired entry while lookups fail, for staleIfErrorMs and never after an eviction', async () => {
    let now = 0
    const cache = new ApiKeyCache({ ttlMs: 1000, maxEntries: 10, staleIfErrorMs: 5000, now: () => now })
    const down = async (): Promise<ApiKeyRow | null> => {
      throw new Error('connect ECONNREFUSED')
    }
    await cache.get('h', async () => row('a'))
    now = 3000 // expired, within the stale bound
    expect((await cache.get('h', down))?.id).toBe('a')
    now = 6001 // past it
    await expect(cache.get('h', down)).rejects.toThrow('ECONNREFUSED')

    now = 0
    await cache.get('h', async () => row('a'))
    cache.evictKey('a') // a status change: the old state is never served again
    now = 3000
    await expect(cache.get('h', down)).rejects.toThrow('ECONNREFUSED')

    await cache.get('g', async () => row('b'))
    cache.clear() // the subscriber reconnected: changes may have been missed
    now = 5000
    await expect(cache.get('g', down)).rejects.toThrow('ECONNREFUSED')
  })

  it('once a lookup has failed, answers an expired entry without waiting for a load that hangs', async () => {
    let now = 0
    const cache = new ApiKeyCache({ ttlMs: 1000, maxEntries: 10, staleIfErrorMs: 5000, now: () => now })
    const hangs = () => new Promise<ApiKeyRow | null>(() => {})
    let again!: (row: ApiKeyRow | null) => void
    const answersLater = () =>
      new Promise<ApiKeyRow | null>((resolve) => {
        again = resolve
      })
    await cache.get('h', async () => row('a'))
    await cache.get('g', async () => row('b'))
    now = 2000
    await expect(
      cache.get('h', async () => Promise.reject(new Error('connect ECONNREFUSED'))),
    ).resolves.toMatchObject({ id: 'a' })
    // Postgres is known down: an expired key answers at once, its load going on behind it.
    await expect(cache.get('g', hangs)).resolves.toMatchObject({ id: 'b' })
    await expect(cache.get('h', answersLater)).resolves.toMatchObject({ id: 'a' })
    // The load that answers brings the entry back, and lookups wait for their loads again.
    again(row('a'))
    await Promise.resolve()
    await Promise.resolve()
    expect(cache.peek('h')).toMatchObject({ id: 'a' })
    now = 4000
    let loaded = false
    await cache.get('h', async () => {
      loaded = true
      return row('a')
    })
    expect(loaded).toBe(true)
    // Never a key evicted by a status change, down or not.
    now = 6000
    await expect(
      cache.get('h', async () => Promise.reject(new Error('connect ECONNREFUSED'))),
    ).resolves.toMatchObject({ id: 'a' })
    cache.evictKey('a')
    const wait = cache.get('h', hangs)
    const settled = await Promise.race([
      wait.then(() => 'answered'),
      new Promise((r) => setTimeout(r, 50, 'waiting')),
    ])
    expect(settled).toBe('waiting')
  })

  it('tells how each lookup was answered: hit (a fresh entry or a shared load), miss, stale', async () => {
    let now = 0
    const seen: string[] = []
    const cache = new ApiKeyCache({
      ttlMs: 1000,
      maxEntries: 10,
      staleIfErrorMs: 5000,
      now: () => now,
      onLookup: (result) => seen.push(result),
    })
    await Promise.all([cache.get('h', async () => row('a')), cache.get('h', async () => row('a'))])
    await cache.get('h', async () => row('a'))
    now = 2000
    await cache.get('h', async () => {
      throw new Error('connect ECONNREFUSED')
    })
    now = 10_000
    await expect(
      cache.get('h', async () => {
        throw new Error('connect ECONNREFUSED')
      }),
    ).rejects.toThrow()
    expect(seen).toEqual(['hit', 'miss', 'hit', 'stale', 'miss'])
  })
})
