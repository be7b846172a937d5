import { setTimeout as sleep } from 'node:timers/promises'
import { testQueuePrefix, testRedisUrl } from '@dispatch/testing'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  EndpointGate,
  type EndpointGateOptions,
  type EndpointGrant,
} from '../../src/webhooks/endpoint-gate.ts'

const prefix = testQueuePrefix()
let redis: Redis
let other: Redis // a second connection: another worker process
let endpointCount = 0

beforeAll(() => {
  redis = new Redis(testRedisUrl())
  other = new Redis(testRedisUrl())
})
afterAll(async () => {
  const keys = await keysUnder(`${prefix}:`)
  if (keys.length > 0) await redis.del(...keys)
  redis.disconnect()
  other.disconnect()
})

async function keysUnder(start: string): Promise<string[]> {
  const keys: string[] = []
  for await (const batch of redis.scanStream({ match: `${start}*`, count: 1000 })) keys.push(...batch)
  return keys
}

/** A gate and an endpoint id of its own, so tests do not share limits. */
function gate(options: Partial<EndpointGateOptions> = {}, client = redis) {
  const settings = { prefix, concurrency: 100, ratePerSecond: 1000, leaseMs: 30_000, ...options }
  return new EndpointGate(client, settings)
}
const newEndpoint = () => `ep-${++endpointCount}`

function granted(grant: EndpointGrant) {
  if (!grant.ok) throw new Error(`refused (${grant.reason}, wait ${grant.waitMs} ms)`)
  return grant
}

/** Waits for the start of a Redis second, so a test's burst falls within one second. */
async function atStartOfSecond() {
  const [, micros] = await redis.time()
  await sleep(1000 - Math.floor(Number(micros) / 1000) + 5)
}

describe('EndpointGate concurrency', () => {
  it('refuses a third delivery at concurrency 2 until one of the first two releases', async () => {
    const limited = gate({ concurrency: 2 })
    const id = newEndpoint()
    const first = granted(await limited.acquire(id))
    granted(await limited.acquire(id))
    const third = await limited.acquire(id)
    expect(third).toMatchObject({ ok: false, reason: 'concurrency' })
    if (!third.ok) {
      expect(third.waitMs).toBeGreaterThanOrEqual(100)
      expect(third.waitMs).toBeLessThanOrEqual(250)
    }
    await first.release()
    await first.release() // a second release frees nothing more
    granted(await limited.acquire(id))
    expect(await limited.acquire(id)).toMatchObject({ ok: false, reason: 'concurrency' })
  })

  it('grants several slots at once, as many as are free, and takes them back one by one', async () => {
    const limited = gate({ concurrency: 5, ratePerSecond: 1000 })
    const id = newEndpoint()
    const three = granted(await limited.acquire(id, 3))
    expect(three.count).toBe(3)
    // Two left: asked for three, it grants those two.
    const two = granted(await limited.acquire(id, 3))
    expect(two.count).toBe(2)
    expect(await limited.acquire(id, 4)).toMatchObject({ ok: false, reason: 'concurrency' })
    await three.release(1)
    expect(granted(await limited.acquire(id, 4)).count).toBe(1)
    await three.release() // the other two
    await two.release()
    expect(granted(await limited.acquire(id, 10)).count).toBe(4)
  })

  it('grants a wave larger than one ZADD takes, each of its slots held and given back', async () => {
    const wide = gate({ concurrency: 1200, ratePerSecond: 100_000 })
    const id = newEndpoint()
    const wave = granted(await wide.acquire(id, 1100))
    expect(wave.count).toBe(1100)
    expect(await redis.zcard(`${prefix}:webhooks:endpoint:{${id}}:inflight`)).toBe(1100)
    expect(granted(await wide.acquire(id, 500)).count).toBe(100)
    expect(await wide.acquire(id)).toMatchObject({ ok: false, reason: 'concurrency' })
    await wave.release()
    expect(granted(await wide.acquire(id, 2000)).count).toBe(1100)
  })

  it('holds across worker processes, and for each endpoint apart', async () => {
    const id = newEndpoint()
    granted(await gate({ concurrency: 1 }).acquire(id))
    expect(await gate({ concurrency: 1 }, other).acquire(id)).toMatchObject({
      ok: false,
      reason: 'concurrency',
    })
    granted(await gate({ concurrency: 1 }, other).acquire(newEndpoint()))
  })

  it('frees the slot of a delivery never released once its lease has run out', async () => {
    const leased = gate({ concurrency: 2, leaseMs: 600 })
    const id = newEndpoint()
    granted(await leased.acquire(id)) // its worker "crashes": never released
    await sleep(300)
    granted(await leased.acquire(id)) // still running when the first lease runs out
    expect(await leased.acquire(id)).toMatchObject({ ok: false, reason: 'concurrency' })
    await sleep(400)
    granted(await leased.acquire(id))
    expect(await leased.acquire(id)).toMatchObject({ ok: false, reason: 'concurrency' })
  })
})

describe('EndpointGate releases', () => {
  it('a release made just before an acquire of its endpoint frees the slot for that acquire', async () => {
    const single = gate({ concurrency: 1 })
    const id = newEndpoint()
    const first = granted(await single.acquire(id))
    // Released and acquired in one turn: the release goes with the acquire, in one round trip.
    const released = first.release()
    granted(await single.acquire(id))
    await released
    // Another worker sees the slot taken by the second delivery, not two slots nor none.
    expect(await gate({ concurrency: 1 }, other).acquire(id)).toMatchObject({ reason: 'concurrency' })
    expect(await redis.zcard(`${prefix}:webhooks:endpoint:{${id}}:inflight`)).toBe(1)
  })

  it('releases with no acquire after them reach Redis within the release delay, for every endpoint', async () => {
    const single = gate({ concurrency: 1 })
    const ids = [newEndpoint(), newEndpoint(), newEndpoint()]
    const slots = await Promise.all(ids.map(async (id) => granted(await single.acquire(id))))
    await Promise.all(slots.map((slot) => slot.release()))
    for (const id of ids) {
      expect(await redis.zcard(`${prefix}:webhooks:endpoint:{${id}}:inflight`)).toBe(0)
      granted(await gate({ concurrency: 1 }, other).acquire(id))
    }
  })
  it('gathers the releases of several turns into one round trip, yet frees the slots for other workers', async () => {
    const counted = new Redis(testRedisUrl())
    let sent = 0
    const send = counted.sendCommand.bind(counted)
    counted.sendCommand = (...args: Parameters<typeof send>) => {
      sent++
      return send(...args)
    }
    try {
      const id = newEndpoint()
      const full = gate({ concurrency: 5, releaseDelayMs: 50 }, counted)
      const wave = granted(await full.acquire(id, 5))
      const before = sent
      // Five POSTs answered in five turns of the event loop.
      const released: Promise<void>[] = []
      for (let i = 0; i < 5; i++) {
        released.push(wave.release(1))
        await new Promise((resolve) => setImmediate(resolve))
      }
      await Promise.all(released)
      expect(sent - before).toBe(1)
      expect(granted(await gate({ concurrency: 5 }, other).acquire(id, 5)).count).toBe(5)
    } finally {
      counted.disconnect()
    }
  })
})

describe('EndpointGate rate', () => {
  it('refuses the sixth delivery of a second at 5 a second, until that second ends', async () => {
    const rated = gate({ ratePerSecond: 5 })
    const id = newEndpoint()
    await atStartOfSecond()
    for (let i = 0; i < 5; i++) await granted(await rated.acquire(id)).release()
    const sixth = await rated.acquire(id)
    expect(sixth).toMatchObject({ ok: false, reason: 'rate' })
    if (sixth.ok) return
    expect(sixth.waitMs).toBeGreaterThan(0)
    expect(sixth.waitMs).toBeLessThanOrEqual(1000)
    await sleep(sixth.waitMs + 5)
    granted(await rated.acquire(id))
  })

  it('counts what it grants against the rate, and grants no more than the second has left', async () => {
    const rated = gate({ concurrency: 10, ratePerSecond: 5 })
    const id = newEndpoint()
    await atStartOfSecond()
    const first = granted(await rated.acquire(id, 3))
    expect(first.count).toBe(3)
    await first.release()
    const second = granted(await rated.acquire(id, 3))
    expect(second.count).toBe(2)
    await second.release()
    expect(await rated.acquire(id)).toMatchObject({ ok: false, reason: 'rate' })
  })

  it('does not count a refused delivery against the rate', async () => {
    const both = gate({ concurrency: 1, ratePerSecond: 2 })
    const id = newEndpoint()
    await atStartOfSecond()
    const first = granted(await both.acquire(id))
    for (let i = 0; i < 3; i++) expect(await both.acquire(id)).toMatchObject({ reason: 'concurrency' })
    await first.release()
    granted(await both.acquire(id))
  })
})

describe('EndpointGate slowDown', () => {
  it('pauses the endpoint for every worker, and only ever lengthens the pause', async () => {
    const paused = gate()
    const id = newEndpoint()
    expect(await paused.slowDown(id, 1000)).toBe(1000)
    const refused = await gate({}, other).acquire(id)
    expect(refused).toMatchObject({ ok: false, reason: 'paused' })
    if (!refused.ok) {
      expect(refused.waitMs).toBeGreaterThan(800)
      expect(refused.waitMs).toBeLessThanOrEqual(1000)
    }
    // A shorter pause leaves the longer one as it is; a longer one replaces it.
    expect(await paused.slowDown(id, 100)).toBeGreaterThan(800)
    expect(await redis.pttl(`${prefix}:webhooks:endpoint:{${id}}:pause`)).toBeGreaterThan(800)
    expect(await paused.slowDown(id, 3000)).toBe(3000)
    expect(await redis.pttl(`${prefix}:webhooks:endpoint:{${id}}:pause`)).toBeGreaterThan(2800)
  })

  it('lets deliveries through again once the pause is over', async () => {
    const paused = gate()
    const id = newEndpoint()
    await paused.slowDown(id, 150)
    expect(await paused.acquire(id)).toMatchObject({ ok: false, reason: 'paused' })
    await sleep(200)
    granted(await paused.acquire(id))
  })
})

it('leaves no key without an expiry', async () => {
  const id = newEndpoint()
  const limited = gate({ leaseMs: 5000 })
  await limited.slowDown(id, 50)
  await sleep(60)
  granted(await limited.acquire(id))
  const keys = await keysUnder(`${prefix}:webhooks:endpoint:{${id}}:`)
  // The pause has expired by itself; the lease and the second's count will (the count may already
  // have, on a machine slow enough to spend its second between the grant and this read).
  expect(keys).toContain(`${prefix}:webhooks:endpoint:{${id}}:inflight`)
  expect(keys.filter((key) => !/:(inflight|rate)$/.test(key))).toEqual([])
  for (const key of keys) {
    // -1 is a key without an expiry; -2, one that expired since the scan (the second's count).
    const ttl = await redis.pttl(key)
    expect(ttl, key).not.toBe(-1)
    expect(ttl).toBeLessThanOrEqual(5000)
  }
})

it('refuses limits that are not whole numbers of at least 1', () => {
  expect(() => gate({ concurrency: 0 })).toThrow(/concurrency must be a whole number of at least 1, got 0/)
  expect(() => gate({ ratePerSecond: 1.5 })).toThrow(/ratePerSecond/)
})
