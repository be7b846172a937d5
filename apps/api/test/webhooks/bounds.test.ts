import { randomUUID } from 'node:crypto'
import { messageIdAt } from '@dispatch/runtime'
import { waitFor } from '@dispatch/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  activeKey,
  buildTestApp,
  createWorld,
  expectError,
  type TestApp,
  type TestWorld,
} from '../helpers.ts'

/** The bounds of a key's webhook endpoints, replays and manual retries, each set low here. */
const ENDPOINTS_MAX = 3
const RETRIES_PER_HOUR = 2
const WINDOW_HOURS = 48

let world: TestWorld
let app: TestApp
beforeAll(async () => {
  world = await createWorld()
  app = await buildTestApp(world, {
    WEBHOOK_ENDPOINTS_PER_KEY_MAX: String(ENDPOINTS_MAX),
    WEBHOOK_MANUAL_RETRIES_PER_HOUR: String(RETRIES_PER_HOUR),
    WEBHOOK_REPLAY_WINDOW_HOURS: String(WINDOW_HOURS),
    WEBHOOK_REPLAYS_PER_KEY_MAX: '1',
  })
})
afterAll(async () => {
  await app?.close()
  await world?.close()
})

const webhookKey = () => activeKey(app, { scopes: ['manage:webhooks'] })
const call = (method: 'POST' | 'DELETE', path: string, apiKey: string, payload?: object) =>
  app.inject({
    method,
    url: `/api/third-party/webhook-endpoints${path}`,
    headers: { 'x-api-key': apiKey },
    ...(payload ? { payload } : {}),
  })
const hook = { url: 'http://127.0.0.1:9999/hook', events: ['message.sent'] }
const register = async (apiKey: string) => {
  const res = await call('POST', '', apiKey, hook)
  expect(res.statusCode, res.body).toBe(201)
  return res.json<{ id: string }>().id
}

/** An event of the key's, as the trigger writes one, `ago` ms back. */
async function insertEvent(apiKeyId: string, ago = 0) {
  const at = Date.now() - ago
  const id = `msg_${messageIdAt(at).replaceAll('-', '')}`
  const payload = {
    type: 'message.sent',
    timestamp: new Date(at).toISOString(),
    data: { messageId: randomUUID() },
  }
  await world.sql`
    insert into webhook_events (id, api_key_id, type, payload, created_at)
    values (${id}, ${apiKeyId}, 'message.sent', ${world.sql.json(payload)}, ${new Date(at)})`
  return id
}

const HOUR = 3_600_000

describe('webhook endpoints per key', () => {
  it('registers up to the bound; the next is 409 LIMIT_EXCEEDED naming it, and a deletion makes room', async () => {
    const key = await webhookKey()
    const ids = []
    for (let i = 0; i < ENDPOINTS_MAX; i++) ids.push(await register(key.key))
    expectError(
      await call('POST', '', key.key, hook),
      409,
      'LIMIT_EXCEEDED',
      new RegExp(`has ${ENDPOINTS_MAX} webhook endpoints, its bound`),
    )
    // Another key's endpoints are its own count.
    await register((await webhookKey()).key)
    expect((await call('DELETE', `/${ids[0]}`, key.key)).statusCode).toBe(204)
    await register(key.key)
  })

  it('holds requests racing each other to the bound', async () => {
    const key = await webhookKey()
    const answers = await Promise.all(Array.from({ length: 6 }, () => call('POST', '', key.key, hook)))
    expect(answers.map((res) => res.statusCode).sort()).toEqual([201, 201, 201, 409, 409, 409])
    const [row] =
      await world.sql`select count(*)::int as n from webhook_endpoints where api_key_id = ${key.id}`
    expect(row?.n).toBe(ENDPOINTS_MAX)
  })
})

describe('manual retries per endpoint per hour', () => {
  it('lets the bound through, then 429 RATE_LIMITED with Retry-After up to an hour; other endpoints are untouched', async () => {
    const key = await webhookKey()
    const [endpoint, other] = [await register(key.key), await register(key.key)]
    const eventId = await insertEvent(key.id)
    for (let i = 0; i < RETRIES_PER_HOUR; i++) {
      const res = await call('POST', `/${endpoint}/events/${eventId}/retry`, key.key)
      expect(res.statusCode, res.body).toBe(202)
    }
    const refused = await call('POST', `/${endpoint}/events/${eventId}/retry`, key.key)
    expectError(refused, 429, 'RATE_LIMITED', new RegExp(`${RETRIES_PER_HOUR} manual retries this hour`))
    const retryAfter = Number(refused.headers['retry-after'])
    expect(retryAfter).toBeGreaterThan(3500)
    expect(retryAfter).toBeLessThanOrEqual(3600)
    expect((await call('POST', `/${other}/events/${eventId}/retry`, key.key)).statusCode).toBe(202)
  })
})

describe('replays', () => {
  it(`reach back at most WEBHOOK_REPLAY_WINDOW_HOURS (${WINDOW_HOURS} h)`, async () => {
    const key = await webhookKey()
    const endpoint = await register(key.key)
    await insertEvent(key.id, (WINDOW_HOURS - 2) * HOUR)
    const since = (hours: number) => ({ since: new Date(Date.now() - hours * HOUR).toISOString() })
    expectError(
      await call('POST', `/${endpoint}/replay`, key.key, since(WINDOW_HOURS + 1)),
      400,
      'VALIDATION_ERROR',
      new RegExp(`body.since must be within the last ${WINDOW_HOURS} hours`),
    )
    const inside = await call('POST', `/${endpoint}/replay`, key.key, since(WINDOW_HOURS - 1))
    expect(inside.statusCode, inside.body).toBe(202)
    expect(inside.json().events).toBe(1)
  })

  it('run one at a time per key (WEBHOOK_REPLAYS_PER_KEY_MAX=1): a second is 429 while the first runs', async () => {
    const key = await webhookKey()
    const [a, b] = [await register(key.key), await register(key.key)]
    await insertEvent(key.id, HOUR)
    const body = { since: new Date(Date.now() - 2 * HOUR).toISOString() }
    // The first replay is held inside its read of the events by a lock the test takes.
    let release = () => {}
    const released = new Promise<void>((resolve) => {
      release = resolve
    })
    let locked = () => {}
    const isLocked = new Promise<void>((resolve) => {
      locked = resolve
    })
    const holder = world.sql.begin(async (tx) => {
      await tx`lock table webhook_events in access exclusive mode`
      locked()
      await released
    })
    await isLocked
    const first = call('POST', `/${a}/replay`, key.key, body)
    try {
      // Counted and waiting: its read of the events waits on the test's lock.
      await waitFor(
        async () =>
          (
            await world.sql`
              select count(*)::int as n from pg_stat_activity
              where datname = current_database() and wait_event_type = 'Lock'`
          )[0]?.n > 0,
        { what: 'the first replay waiting on the lock' },
      )
      const second = await Promise.race([
        call('POST', `/${b}/replay`, key.key, body),
        new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 5000)),
      ])
      expect(second, 'the second replay waited instead of being refused').toBeDefined()
      if (second) expectError(second, 429, 'RATE_LIMITED', /has 1 replays running, its bound/)
      expect(Number(second?.headers['retry-after'])).toBeGreaterThanOrEqual(1)
    } finally {
      release()
      await holder
    }
    const done = await first
    expect(done.statusCode, done.body).toBe(202)
    // Ended, it makes room.
    const next = await call('POST', `/${b}/replay`, key.key, body)
    expect(next.statusCode, next.body).toBe(202)
  })
})
