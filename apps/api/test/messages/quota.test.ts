import { ApiKeySelf, nextUtcMidnight } from '@dispatch/contracts'
import { startTcpProxy, testRedisUrl } from '@dispatch/testing'
import type { LightMyRequestResponse } from 'fastify'
import Value from 'typebox/value'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  activeKey,
  asAdmin,
  buildTestApp,
  createWorld,
  expectError,
  SEND_SCOPES,
  send,
  type TestApp,
  type TestWorld,
  validSends,
} from '../helpers.ts'

let world: TestWorld
let app: TestApp
let second: TestApp
beforeAll(async () => {
  world = await createWorld()
  // Two instances on one database and one Redis prefix; a default rate that never gets in the way.
  app = await buildTestApp(world, { MESSAGE_RATE_PER_SECOND: '100000' })
  second = await buildTestApp(world, { MESSAGE_RATE_PER_SECOND: '100000' })
})
afterAll(async () => {
  await second?.close()
  await app?.close()
  await world?.close()
})

/** An approved key with the send scopes and the limits given. */
async function limitedKey(limits: Record<string, unknown>, on: TestApp = app) {
  const key = await activeKey(on, { scopes: SEND_SCOPES })
  const res = await on.inject({
    method: 'PATCH',
    url: `/api/admin/api-keys/${key.id}`,
    headers: asAdmin(),
    payload: limits,
  })
  if (res.statusCode !== 200) throw new Error(`limits not set: ${res.statusCode} ${res.body}`)
  return key
}

const me = async (key: string, on: TestApp = app) => {
  const res = await on.inject({ method: 'GET', url: '/api/api-keys/me', headers: { 'x-api-key': key } })
  expect(res.statusCode, res.body).toBe(200)
  const body = res.json<ApiKeySelf>()
  expect(Value.Check(ApiKeySelf, body)).toBe(true)
  return body
}

const batch = (key: string, count: number, on: TestApp = app) =>
  on.inject({
    method: 'POST',
    url: '/api/third-party/messages/batch',
    headers: { 'x-api-key': key },
    payload: {
      messages: Array.from({ length: count }, () => ({ type: 'text', ...validSends['send-text'] })),
    },
  })

const secondsToMidnight = (now = new Date()) => (nextUtcMidnight(now).getTime() - now.getTime()) / 1000

function expectQuotaExceeded(res: LightMyRequestResponse, quota: number) {
  expectError(res, 429, 'QUOTA_EXCEEDED', new RegExp(`daily quota of ${quota} message`))
  expect(res.json().message).toContain(`${nextUtcMidnight(new Date()).toISOString()} (midnight UTC)`)
  const retryAfter = Number(res.headers['retry-after'])
  expect(retryAfter).toBeGreaterThanOrEqual(1)
  expect(Math.abs(retryAfter - secondsToMidnight())).toBeLessThanOrEqual(2)
}

describe('daily quota', () => {
  it('N sends across two instances pass; the next is 429 QUOTA_EXCEEDED until midnight UTC', async () => {
    const key = await limitedKey({ dailyQuota: 5 })
    const codes: number[] = []
    for (let i = 0; i < 5; i++) {
      const on = i % 2 === 0 ? app : second
      const path = (['send-text', 'send-template', 'send-image'] as const)[i % 3] ?? 'send-text'
      codes.push((await send(on, path, key.key)).statusCode)
    }
    expect(codes).toEqual([202, 202, 202, 202, 202])
    expectQuotaExceeded(await send(second, 'send-text', key.key), 5)
    expectQuotaExceeded(await send(app, 'send-image', key.key), 5)
    expectQuotaExceeded(await batch(key.key, 1, second), 5)
    // Refusals spend nothing.
    expect((await me(key.key)).usage).toMatchObject({ today: 5, remainingToday: 0 })
    // An admin sees the same usage on the key's page.
    const detail = await app.inject({
      method: 'GET',
      url: `/api/admin/api-keys/${key.id}`,
      headers: asAdmin(),
    })
    expect(detail.json().usage).toEqual((await me(key.key)).usage)
  })

  it("keeps the day's count an earlier version kept as a plain counter: an upgrade mid-day resets nothing", async () => {
    const key = await limitedKey({ dailyQuota: 3 })
    const today = new Date().toISOString().slice(0, 10)
    await app.deps.redis.set(`${world.queuePrefix}:quota:{${key.id}}:${today}`, '2')
    expect((await me(key.key)).usage).toMatchObject({ today: 2, remainingToday: 1 })
    expect((await send(app, 'send-text', key.key)).statusCode).toBe(202)
    expectQuotaExceeded(await send(second, 'send-text', key.key), 3)
    expect((await me(key.key)).usage).toMatchObject({ today: 3, remainingToday: 0 })
  })

  it('refuses a batch larger than what is left whole, then takes one that fits', async () => {
    const key = await limitedKey({ dailyQuota: 10 })
    expect((await batch(key.key, 7)).statusCode).toBe(202)
    const refused = await batch(key.key, 4, second)
    expectQuotaExceeded(refused, 10)
    expect(refused.json().message).toMatch(/3 left today, fewer than this request's 4/)
    expect((await me(key.key)).usage.today).toBe(7)
    const fits = await batch(key.key, 3, second)
    expect(fits.statusCode, fits.body).toBe(202)
    expect(fits.json().accepted).toBe(3)
    expectQuotaExceeded(await send(app, 'send-text', key.key), 10)
  })

  it('a request refused by the rate spends no quota, and one refused by the quota spends no rate', async () => {
    const key = await limitedKey({ ratePerSecond: 2, dailyQuota: 3 })
    expect((await send(app, 'send-text', key.key)).statusCode).toBe(202)
    expect((await send(second, 'send-text', key.key)).statusCode).toBe(202)
    expectError(await send(app, 'send-text', key.key), 429, 'RATE_LIMITED')
    expect((await me(key.key)).usage).toMatchObject({ today: 2, remainingToday: 1 })

    // A batch over the quota is refused by the quota and leaves the window as it was: two sends
    // still fit in this second.
    const other = await limitedKey({ ratePerSecond: 2, dailyQuota: 2 })
    expectQuotaExceeded(await batch(other.key, 3), 2)
    expect((await send(app, 'send-text', other.key)).statusCode).toBe(202)
    expect((await send(second, 'send-text', other.key)).statusCode).toBe(202)
    expectQuotaExceeded(await send(app, 'send-text', other.key), 2)
  })

  it('a send the checks refuse spends no quota: usage counts what was stored', async () => {
    const key = await limitedKey({ dailyQuota: 3 })
    expect((await send(app, 'send-text', key.key)).statusCode).toBe(202)
    // Refused after the rate was counted (the checks run after the limiter, so a 429 comes first).
    const past = new Date(Date.now() - 60_000).toISOString()
    const refused = await send(app, 'send-text', key.key, { ...validSends['send-text'], sendAt: past })
    expectError(refused, 400, 'VALIDATION_ERROR', /sendAt/)
    expect((await me(key.key)).usage).toMatchObject({ today: 1, remainingToday: 2 })
    // A batch's refused items never counted either.
    const mixed = await app.inject({
      method: 'POST',
      url: '/api/third-party/messages/batch',
      headers: { 'x-api-key': key.key },
      payload: {
        messages: [
          { type: 'text', ...validSends['send-text'] },
          { type: 'text', ...validSends['send-text'], sendAt: past },
        ],
      },
    })
    expect(mixed.statusCode, mixed.body).toBe(202)
    expect((await me(key.key)).usage).toMatchObject({ today: 2, remainingToday: 1 })
    expect((await send(second, 'send-text', key.key)).statusCode).toBe(202)
    expectQuotaExceeded(await send(app, 'send-text', key.key), 3)
  })

  it('counts per UTC day: an instance whose clock is in the next day starts again from zero', async () => {
    const key = await limitedKey({ dailyQuota: 1 })
    expect((await send(app, 'send-text', key.key)).statusCode).toBe(202)
    expectQuotaExceeded(await send(app, 'send-text', key.key), 1)

    const tomorrow = new Date(nextUtcMidnight(new Date()).getTime() + 60_000)
    const later = await buildTestApp(world, {}, undefined, { clock: () => tomorrow })
    try {
      const self = await me(key.key, later)
      expect(self.usage).toEqual({
        today: 0,
        remainingToday: 1,
        resetsAt: nextUtcMidnight(tomorrow).toISOString(),
      })
      expect((await send(later, 'send-text', key.key)).statusCode).toBe(202)
      const res = await send(later, 'send-text', key.key)
      expectError(res, 429, 'QUOTA_EXCEEDED')
      expect(res.headers['retry-after']).toBe(String(24 * 60 * 60 - 60))
    } finally {
      await later.close()
    }
    // Today's count outlives its day (about 48 h past its midnight), then Redis drops it.
    const redis = app.deps.redis
    const today = new Date().toISOString().slice(0, 10)
    const ttl = await redis.pttl(`${world.queuePrefix}:usage:{${key.id}}:${today}`)
    const expected = secondsToMidnight() * 1000 + 48 * 3600_000
    expect(Math.abs(ttl - expected)).toBeLessThan(5000)
  })
})

describe('per-key rate', () => {
  it("enforces the key's own ratePerSecond; another key keeps the service's default", async () => {
    const slow = await limitedKey({ ratePerSecond: 2 })
    const other = await activeKey(app, { scopes: SEND_SCOPES })
    const limited = await buildTestApp(world, { MESSAGE_RATE_PER_SECOND: '50' })
    try {
      expect((await send(limited, 'send-text', slow.key)).statusCode).toBe(202)
      expect((await send(second, 'send-text', slow.key)).statusCode).toBe(202)
      const res = await send(limited, 'send-text', slow.key)
      expectError(res, 429, 'RATE_LIMITED')
      expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1)
      for (let i = 0; i < 5; i++) expect((await send(limited, 'send-text', other.key)).statusCode).toBe(202)
      expect((await me(other.key, limited)).limits.effectiveRatePerSecond).toBe(50)
    } finally {
      await limited.close()
    }
  })
})

describe('sends arriving together', () => {
  // Requests of one turn of the event loop are counted by one script call, one after another.
  it('at 5 a second, 8 sends at once: 5 are taken and 3 refused, and only the 5 count', async () => {
    const key = await limitedKey({ ratePerSecond: 5, dailyQuota: 100 })
    const answers = await Promise.all(Array.from({ length: 8 }, () => send(app, 'send-text', key.key)))
    const codes = answers.map((res) => res.statusCode).sort()
    expect(codes).toEqual([202, 202, 202, 202, 202, 429, 429, 429])
    for (const res of answers.filter((r) => r.statusCode === 429)) expectError(res, 429, 'RATE_LIMITED')
    expect((await me(key.key)).usage.today).toBe(5)
  })

  it('under a quota of 6, a batch of 4 and 4 sends at once never pass it, and what passed is counted', async () => {
    const key = await limitedKey({ dailyQuota: 6 })
    const answers = await Promise.all([
      batch(key.key, 4),
      ...Array.from({ length: 4 }, () => send(app, 'send-text', key.key)),
    ])
    const taken = answers.reduce(
      (sum, res, i) => sum + (res.statusCode === 202 ? (i === 0 ? res.json().accepted : 1) : 0),
      0,
    )
    for (const res of answers.filter((r) => r.statusCode !== 202)) expectQuotaExceeded(res, 6)
    expect(taken).toBeLessThanOrEqual(6)
    // Whichever order the turn took them in, the sends left no room a later one could fill.
    expect(taken).toBeGreaterThanOrEqual(4)
    expect((await me(key.key)).usage.today).toBe(taken)
  })
})

describe('GET /api/api-keys/me', () => {
  it('shows the limits and today’s usage counting up, for keys with and without a quota', async () => {
    const key = await limitedKey({ dailyQuota: 100, ratePerSecond: 40, transactional: true })
    const first = await me(key.key)
    expect(first.limits).toEqual({
      senderId: null,
      ratePerSecond: 40,
      dailyQuota: 100,
      transactional: true,
      quietHours: null,
      contentRetention: 'retain',
      effectiveRatePerSecond: 40,
    })
    expect(first.usage).toEqual({
      today: 0,
      remainingToday: 100,
      resetsAt: nextUtcMidnight(new Date()).toISOString(),
    })
    await send(app, 'send-text', key.key)
    await batch(key.key, 4, second)
    expect((await me(key.key, second)).usage).toMatchObject({ today: 5, remainingToday: 95 })

    const unlimited = await activeKey(app, { scopes: SEND_SCOPES })
    await batch(unlimited.key, 3)
    const self = await me(unlimited.key)
    expect(self.limits).toMatchObject({
      dailyQuota: null,
      ratePerSecond: null,
      effectiveRatePerSecond: 100000,
    })
    expect(self.usage).toMatchObject({ today: 3, remainingToday: null })
  })

  it('reads 0 while Redis is unreachable, and says so in the log', async () => {
    const redisUrl = new URL(testRedisUrl())
    const proxy = await startTcpProxy({ host: redisUrl.hostname, port: Number(redisUrl.port || 6379) })
    const behindProxy = await buildTestApp(world, { REDIS_URL: proxy.url('redis') })
    try {
      const key = await activeKey(behindProxy, { scopes: SEND_SCOPES })
      expect((await send(behindProxy, 'send-text', key.key)).statusCode).toBe(202)
      expect((await me(key.key, behindProxy)).usage.today).toBe(1)
      await proxy.cut()
      expect((await me(key.key, behindProxy)).usage).toMatchObject({ today: 0, remainingToday: null })
      expect(behindProxy.logs.text()).toContain("today's message count unknown: Redis unreachable")
    } finally {
      await proxy.restore()
      await behindProxy.close()
      await proxy.close()
    }
  })
})
