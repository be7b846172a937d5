import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { setTimeout as sleep } from 'node:timers/promises'
import { createDb } from '@dispatch/db'
import { startTcpProxy, testRedisUrl } from '@dispatch/testing'
import type { LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  ADMIN,
  activeKey,
  asAdmin,
  buildTestApp,
  createWorld,
  expectError,
  type TestApp,
  type TestWorld,
} from './helpers.ts'

// Two API instances on one Redis and queue prefix: the attacker's requests alternate between them.
const LIMITS = {
  ADMIN_AUTH_FAILURE_MAX: '20',
  ADMIN_AUTH_FAILURE_WINDOW_MS: '3000',
  API_KEY_FAILURE_MAX: '20',
  API_KEY_FAILURE_WINDOW_MS: '3000',
}

let world: TestWorld
let instances: [TestApp, TestApp]
beforeAll(async () => {
  world = await createWorld()
  instances = [await buildTestApp(world, LIMITS), await buildTestApp(world, LIMITS)]
})
afterAll(async () => {
  for (const app of instances ?? []) await app?.close()
  await world?.close()
})

/** Instance i % 2 answers the i-th request. */
const on = (i: number) => instances[i % 2] as TestApp
const OTHER_ADDRESS = '203.0.113.50'

const listKeys = (i: number, remoteAddress: string, headers: Record<string, string>) =>
  on(i).inject({ method: 'GET', url: '/api/admin/api-keys', remoteAddress, headers })
const me = (i: number, remoteAddress: string, headers: Record<string, string>) =>
  on(i).inject({ method: 'GET', url: '/api/api-keys/me', remoteAddress, headers })

/** The over-limit answer: 429 RATE_LIMITED, the spec's body, a Retry-After within the window. */
function expectLimited(res: LightMyRequestResponse): number {
  expectError(res, 429, 'RATE_LIMITED', /too many failed authentication attempts/i)
  const retryAfter = Number(res.headers['retry-after'])
  expect(Number.isInteger(retryAfter), String(res.headers['retry-after'])).toBe(true)
  expect(retryAfter).toBeGreaterThanOrEqual(1)
  expect(retryAfter).toBeLessThanOrEqual(3)
  return retryAfter
}

describe('guessing admin tokens', () => {
  it('is refused past 20 failures from one address, on every instance, right token included, until the window passes', async () => {
    const attacker = '198.51.100.7'
    for (let i = 0; i < 20; i++) {
      const res = await listKeys(i, attacker, { authorization: `Bearer guess-${i}-0123456789abcdef` })
      expectError(res, 401, 'ADMIN_AUTH_REQUIRED')
    }
    const retryAfter = expectLimited(
      await listKeys(20, attacker, { authorization: 'Bearer guess-20-0123456789abcdef' }),
    )
    // No oracle: the right token from that address is refused the same way, on either instance.
    expectLimited(await listKeys(21, attacker, asAdmin()))
    expectLimited(await listKeys(22, attacker, asAdmin(ADMIN.ops)))
    expectLimited(await listKeys(23, attacker, {}))

    // The admin elsewhere is not locked out.
    expect((await listKeys(0, OTHER_ADDRESS, asAdmin())).statusCode).toBe(200)
    expect((await listKeys(1, OTHER_ADDRESS, asAdmin())).statusCode).toBe(200)

    await sleep(retryAfter * 1000 + 100)
    expect((await listKeys(0, attacker, asAdmin())).statusCode).toBe(200)
    expectError(await listKeys(1, attacker, { authorization: 'Bearer x' }), 401, 'ADMIN_AUTH_REQUIRED')
  })

  it('does not count requests that present no credentials', async () => {
    const address = '198.51.100.8'
    for (let i = 0; i < 30; i++) {
      expectError(await listKeys(i, address, {}), 401, 'ADMIN_AUTH_REQUIRED')
    }
    expect((await listKeys(30, address, asAdmin())).statusCode).toBe(200)
  })
})

describe('guessing API keys', () => {
  it('is refused past 20 invalid keys from one address, on every instance, until the window passes; a key in use still works', async () => {
    const key = await activeKey(on(0))
    // The key in use, so cached on both instances (as a sender's busy key is).
    expect((await me(0, OTHER_ADDRESS, { 'x-api-key': key.key })).statusCode).toBe(200)
    expect((await me(1, OTHER_ADDRESS, { 'x-api-key': key.key })).statusCode).toBe(200)
    const attacker = '198.51.100.9'
    const guesses = [
      (i: number) => `mdk_dev_guess${i}000000000000000000000000000000`,
      (i: number) => key.key.replace('mdk_dev_', 'mdk_prod_') + i,
      (i: number) => `not-a-key-${i}`,
    ]
    for (let i = 0; i < 20; i++) {
      const guess = guesses[i % guesses.length]?.(i) ?? ''
      expectError(await me(i, attacker, { 'x-api-key': guess }), 401, 'API_KEY_INVALID')
    }
    const retryAfter = expectLimited(await me(20, attacker, { 'x-api-key': 'mdk_dev_guess20' }))
    expectLimited(await me(21, attacker, { 'x-api-key': 'mdk_dev_guess21' }))

    // Other addresses are not affected.
    expectError(await me(0, OTHER_ADDRESS, { 'x-api-key': 'mdk_dev_guess' }), 401, 'API_KEY_INVALID')
    // A valid key in use still works from the blocked address: only invalid keys, and keys not
    // cached (which would cost a lookup), are answered 429 (a 192-bit key cannot be guessed, and
    // senders behind the attacker's NAT whose keys are in use keep working).
    expect((await me(0, attacker, { 'x-api-key': key.key })).statusCode).toBe(200)
    expect((await me(1, attacker, { 'x-api-key': key.key })).statusCode).toBe(200)
    on(0).apiKeyCache.clear()
    expectLimited(await me(0, attacker, { 'x-api-key': key.key }))
    // A missing key is not a guess.
    expectError(await me(0, attacker, {}), 401, 'API_KEY_MISSING')

    await sleep(retryAfter * 1000 + 100)
    expectError(await me(0, attacker, { 'x-api-key': 'mdk_dev_guess22' }), 401, 'API_KEY_INVALID')
    expect((await me(0, attacker, { 'x-api-key': key.key })).statusCode).toBe(200)
  })
})

describe('unknown keys and Postgres', () => {
  // An instance whose database client counts the key lookups it sends (by hash: the auth path's).
  let lookups = 0
  let app: TestApp
  let client: ReturnType<typeof createDb>
  beforeAll(async () => {
    client = createDb(world.databaseUrl, {
      max: 2,
      onStatement: (query) => {
        if (/"api_keys"\."key_hash" = /.test(query)) lookups++
      },
    })
    app = await buildTestApp(world, { ...LIMITS, API_KEY_CACHE_MAX: '10' }, undefined, { db: client.db })
  })
  afterAll(async () => {
    await app?.close()
    await client?.close()
  })
  const me = (remoteAddress: string, key: string) =>
    app.inject({ method: 'GET', url: '/api/api-keys/me', remoteAddress, headers: { 'x-api-key': key } })
  const randomKey = () => `mdk_dev_${randomBytes(24).toString('base64url')}`

  it('100 random keys from one address cost at most the limit in Postgres lookups; the rest are 429 without one', async () => {
    const attacker = '198.51.100.40'
    lookups = 0
    const answers: number[] = []
    for (let i = 0; i < 100; i++) answers.push((await me(attacker, randomKey())).statusCode)
    expect(answers.filter((status) => status === 401)).toHaveLength(20)
    expect(answers.filter((status) => status === 429)).toHaveLength(80)
    expect(lookups).toBeLessThanOrEqual(20)
  })

  it('the same holds when the 100 arrive at once', async () => {
    const attacker = '198.51.100.41'
    lookups = 0
    const answers = await Promise.all(
      Array.from({ length: 100 }, async () => (await me(attacker, randomKey())).statusCode),
    )
    expect(answers.filter((status) => status === 401)).toHaveLength(20)
    expect(answers.filter((status) => status === 429)).toHaveLength(80)
    expect(lookups).toBeLessThanOrEqual(20)
  })

  it("a busy key's burst from one address, not yet cached or just expired, is one lookup and never refused", async () => {
    // Past API_KEY_FAILURE_MAX requests at once with a real key this instance has not cached: each
    // was counted before the shared lookup, so a busy sender got 429s at start and at every TTL.
    const ttl = await buildTestApp(world, { ...LIMITS, API_KEY_CACHE_TTL_MS: '1000' }, undefined, {
      db: client.db,
    })
    try {
      const busy = await activeKey(ttl)
      const burst = async () => {
        lookups = 0
        const answers = await Promise.all(
          Array.from({ length: 100 }, () =>
            ttl.inject({
              method: 'GET',
              url: '/api/api-keys/me',
              remoteAddress: '198.51.100.42',
              headers: { 'x-api-key': busy.key },
            }),
          ),
        )
        expect(answers.map((res) => res.statusCode)).toEqual(answers.map(() => 200))
        expect(lookups).toBe(1)
      }
      await burst()
      await new Promise((resolve) => setTimeout(resolve, 1_100))
      await burst()
    } finally {
      await ttl.close()
    }
  })

  it('unknown keys never push a known key out of the cache', async () => {
    const known = await activeKey(app)
    expect((await me(OTHER_ADDRESS, known.key)).statusCode).toBe(200)
    // Ten times the cache's size in unknown keys, each from its own address (none is limited).
    for (let i = 0; i < 100; i++) {
      expectError(await me(`198.18.${i >> 8}.${i & 255}`, randomKey()), 401, 'API_KEY_INVALID')
    }
    lookups = 0
    expect((await me(OTHER_ADDRESS, known.key)).statusCode).toBe(200)
    expect(lookups).toBe(0)
  })
})

/** TRUST_PROXY as deploy/kubernetes/api.yaml sets it: the proof is about the setting that ships. */
const MANIFEST_TRUST_PROXY = /- name: TRUST_PROXY\s+value: "([^"]*)"/.exec(
  readFileSync(new URL('../../../deploy/kubernetes/api.yaml', import.meta.url), 'utf8'),
)?.[1]

// The manifest's list of proxy networks, and a hop count (one proxy in front), each with its own
// client addresses so the two runs' counters stay apart.
describe.each([
  { trust: "the manifest's TRUST_PROXY", value: MANIFEST_TRUST_PROXY as string, net: '198.51.100' },
  { trust: 'TRUST_PROXY=1 (a hop count)', value: '1', net: '203.0.113' },
])('behind the ingress, with $trust', ({ value, net }) => {
  // The ingress (10.0.0.2) appends the address it saw to whatever X-Forwarded-For the client wrote.
  const INGRESS = '10.0.0.2'
  let app: TestApp
  beforeAll(async () => {
    expect(value).toBeDefined()
    app = await buildTestApp(world, { ...LIMITS, TRUST_PROXY: value })
  })
  afterAll(async () => {
    await app?.close()
  })
  const through = (client: string, spoofed: string, url: string, headers: Record<string, string>) =>
    app.inject({
      method: 'GET',
      url,
      remoteAddress: INGRESS,
      headers: { ...headers, 'x-forwarded-for': `${spoofed}, ${client}` },
    })

  it('a new leftmost X-Forwarded-For on each try gains no admin-token tries past the lockout', async () => {
    const attacker = `${net}.30`
    const list = (i: number, headers: Record<string, string>) =>
      through(attacker, `192.0.2.${i}`, '/api/admin/api-keys', headers)
    for (let i = 0; i < 20; i++) {
      expectError(
        await list(i, { authorization: `Bearer guess-${i}-0123456789abcdef` }),
        401,
        'ADMIN_AUTH_REQUIRED',
      )
    }
    for (let i = 20; i < 30; i++) {
      expectLimited(await list(i, { authorization: `Bearer guess-${i}-0123456789abcdef` }))
    }
    expectLimited(await list(31, asAdmin()))
    // Another client through the same ingress is not locked out.
    const other = await through(`${net}.31`, '192.0.2.1', '/api/admin/api-keys', asAdmin())
    expect(other.statusCode, other.body).toBe(200)
  })

  it('a new leftmost X-Forwarded-For on each try gains no API-key guesses past the limit', async () => {
    const attacker = `${net}.32`
    const me = (i: number, key: string) =>
      through(attacker, `192.0.2.${i}`, '/api/api-keys/me', { 'x-api-key': key })
    for (let i = 0; i < 20; i++) {
      expectError(await me(i, `mdk_dev_spoof${i}00000000000000000000000000000`), 401, 'API_KEY_INVALID')
    }
    for (let i = 20; i < 30; i++) {
      expectLimited(await me(i, `mdk_dev_spoof${i}00000000000000000000000000000`))
    }
    // Reaching the pod directly, past the ingress, its own X-Forwarded-For is not believed either
    // (with a list; a hop count cannot tell the ingress from a client: docs/security.md).
    if (value === '1') return
    expectLimited(
      await app.inject({
        method: 'GET',
        url: '/api/api-keys/me',
        remoteAddress: attacker,
        headers: {
          'x-api-key': 'mdk_dev_direct0000000000000000000000000000',
          'x-forwarded-for': '192.0.2.99',
        },
      }),
    )
  })
})

it('lets admins in when Redis is unreachable (the limiter fails open, with a warning)', async () => {
  const redis = new URL(testRedisUrl())
  const proxy = await startTcpProxy({ host: redis.hostname, port: Number(redis.port || 6379) })
  const app = await buildTestApp(world, {
    ...LIMITS,
    ADMIN_AUTH_FAILURE_MAX: '2',
    REDIS_URL: proxy.url('redis'),
  })
  try {
    await proxy.cut()
    const list = (headers: Record<string, string>) =>
      app.inject({ method: 'GET', url: '/api/admin/api-keys', remoteAddress: '198.51.100.10', headers })
    for (let i = 0; i < 5; i++) {
      expectError(await list({ authorization: 'Bearer wrong-token-0123456789' }), 401, 'ADMIN_AUTH_REQUIRED')
    }
    const res = await list(asAdmin())
    expect(res.statusCode, res.body).toBe(200)
    expect(app.logs.text()).toMatch(/authentication failure limit skipped/)
  } finally {
    await proxy.restore().catch(() => {})
    await app.close()
    await proxy.close()
  }
})
