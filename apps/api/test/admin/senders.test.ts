import { randomBytes, randomUUID } from 'node:crypto'
import { SENDER_CHANGES_CHANNEL, SenderList, SenderView, senderQueueName } from '@dispatch/contracts'
import { createSecretBox } from '@dispatch/runtime'
import { fairKeys } from '@dispatch/runtime/message-handoff'
import { waitFor } from '@dispatch/testing'
import type { LightMyRequestResponse } from 'fastify'
import { Redis } from 'ioredis'
import Value from 'typebox/value'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import {
  ADMIN,
  activeKey,
  asAdmin,
  buildTestApp,
  createWorld,
  expectError,
  type TestApp,
  type TestWorld,
} from '../helpers.ts'

const SECRETS_KEY = randomBytes(32).toString('base64')
const box = createSecretBox({ APP_ENV: 'development', SECRETS_KEY })

let world: TestWorld
let app: TestApp
let redis: Redis
let subscriber: Redis
/** Sender ids published on the changes channel, in order. */
const published: string[] = []
/** Every token a test sent: none may come back in a body or reach a log line. */
const tokens: string[] = []
const bodies: string[] = []

beforeAll(async () => {
  world = await createWorld()
  app = await buildTestApp(world, { LOG_LEVEL: 'trace', SECRETS_KEY })
  redis = new Redis(world.redisUrl)
  subscriber = new Redis(world.redisUrl)
  subscriber.on('message', (_channel, senderId: string) => published.push(senderId))
  await subscriber.subscribe(`${world.queuePrefix}:${SENDER_CHANGES_CHANNEL}`)
})
afterAll(async () => {
  subscriber.disconnect()
  redis.disconnect()
  await app.close()
  await world.close()
})
beforeEach(() => {
  published.length = 0
})

/**
 * What was published since the last call, once everything published before this call has arrived
 * (a marker of ours goes through the same channel, after it).
 */
const publishedSoFar = async () => {
  const marker = `marker-${randomUUID()}`
  await redis.publish(`${world.queuePrefix}:${SENDER_CHANGES_CHANNEL}`, marker)
  await waitFor(() => published.includes(marker), { what: 'our marker' })
  const seen = published.filter((id) => id !== marker)
  published.length = 0
  return seen
}

const token = () => {
  const value = `EAAG${randomBytes(24).toString('base64url')}`
  tokens.push(value)
  return value
}
let numbers = 0
const phoneNumberId = () => `10${Date.now()}${numbers++}`

const call = async (
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE',
  url: string,
  payload?: object,
  headers: Record<string, string> = asAdmin(),
): Promise<LightMyRequestResponse> => {
  const res = await app.inject({ method, url, headers, ...(payload ? { payload } : {}) })
  bodies.push(res.body)
  return res
}

const create = async (overrides: Record<string, unknown> = {}) => {
  const res = await call('POST', '/api/admin/senders', {
    phoneNumberId: phoneNumberId(),
    displayName: 'Acme support',
    accessToken: token(),
    ...overrides,
  })
  expect(res.statusCode, res.body).toBe(201)
  return res.json<SenderView>()
}

const storedSender = async (id: string) => {
  const [row] = await world.sql`select * from senders where id = ${id}`
  return row
}

const insertDefaultSender = () =>
  world.sql`
    insert into senders (id, phone_number_id, display_name, rate_per_second, access_token_last4)
    values ('default', '999000111', 'Environment sender', 80, 'abcd')
    on conflict (id) do nothing`

describe('admin authentication', () => {
  it('refuses every sender route without an admin token, an API key included: 401', async () => {
    const key = await activeKey(app)
    const sender = await create()
    const attempts: Record<string, string>[] = [
      {},
      { authorization: 'Bearer not-a-real-token' },
      { authorization: `Bearer ${key.key}` },
      { 'x-api-key': key.key },
    ]
    const routes = [
      { method: 'GET' as const, url: '/api/admin/senders' },
      { method: 'POST' as const, url: '/api/admin/senders' },
      { method: 'GET' as const, url: `/api/admin/senders/${sender.id}` },
      { method: 'PATCH' as const, url: `/api/admin/senders/${sender.id}` },
      { method: 'DELETE' as const, url: `/api/admin/senders/${sender.id}` },
    ]
    for (const [n, route] of routes.entries()) {
      for (const headers of attempts) {
        const res = await app.inject({
          ...route,
          headers,
          remoteAddress: `192.0.2.${n + 10}`,
          ...(route.method === 'POST' || route.method === 'PATCH'
            ? { payload: { displayName: 'Evil' } }
            : {}),
        })
        expectError(res, 401, 'ADMIN_AUTH_REQUIRED')
      }
    }
    expect((await storedSender(sender.id))?.display_name).toBe('Acme support')
  })
})

describe('POST /api/admin/senders', () => {
  it('creates a sender with its token sealed, shows only the last four, and tells the workers', async () => {
    const accessToken = token()
    const res = await call('POST', '/api/admin/senders', {
      phoneNumberId: '106540352242922',
      displayName: 'Acme Brasil',
      displayPhoneNumber: '5511987650000',
      accessToken,
    })
    expect(res.statusCode, res.body).toBe(201)
    const sender = res.json<SenderView>()
    expect(Value.Check(SenderView, sender)).toBe(true)
    expect(sender).toMatchObject({
      phoneNumberId: '106540352242922',
      displayName: 'Acme Brasil',
      displayPhoneNumber: '5511987650000',
      ratePerSecond: 80,
      state: 'active',
      stateReason: null,
      accessTokenLast4: accessToken.slice(-4),
      source: 'admin',
    })
    expect(sender.id).toMatch(/^[0-9a-f-]{36}$/)
    expect(res.body).not.toContain(accessToken)

    const row = await storedSender(sender.id)
    expect(row?.access_token_ciphertext).not.toContain(accessToken)
    expect(box.open(row?.access_token_ciphertext)).toBe(accessToken)
    await waitFor(() => published.includes(sender.id), { what: 'the change published' })
  })

  it('takes a rate between 1 and 1000', async () => {
    expect((await create({ ratePerSecond: 1000 })).ratePerSecond).toBe(1000)
    expect((await create({ ratePerSecond: 1 })).ratePerSecond).toBe(1)
  })

  it('refuses invalid bodies with 400 VALIDATION_ERROR naming the field', async () => {
    const valid = { phoneNumberId: phoneNumberId(), displayName: 'X', accessToken: token() }
    const cases: [object, RegExp][] = [
      [{ ...valid, ratePerSecond: 0 }, /body\.ratePerSecond/],
      [{ ...valid, ratePerSecond: 1001 }, /body\.ratePerSecond/],
      [{ ...valid, ratePerSecond: 1.5 }, /body\.ratePerSecond/],
      [{ phoneNumberId: valid.phoneNumberId, displayName: 'X' }, /body\.accessToken is required/],
      [{ ...valid, accessToken: 'short' }, /body\.accessToken/],
      [{ ...valid, accessToken: `${token()} with spaces` }, /body\.accessToken/],
      [{ ...valid, state: 'paused' }, /unknown property "state"/],
      [{ ...valid, phoneNumberId: '+55 11' }, /body\.phoneNumberId/],
      [{ ...valid, displayPhoneNumber: '+5511987650000' }, /body\.displayPhoneNumber/],
      [{ ...valid, displayName: '   ' }, /body\.displayName/],
    ]
    for (const [payload, message] of cases) {
      const res = await call('POST', '/api/admin/senders', payload)
      expectError(res, 400, 'VALIDATION_ERROR', message)
    }
    const [row] =
      await world.sql`select count(*)::int as n from senders where phone_number_id = ${valid.phoneNumberId}`
    expect(row?.n).toBe(0)
  })

  it('answers 409 SENDER_EXISTS for a number that has a sender, even when two admins add it at once', async () => {
    const id = phoneNumberId()
    const both = await Promise.all(
      [0, 1].map(() =>
        call('POST', '/api/admin/senders', { phoneNumberId: id, displayName: 'Twice', accessToken: token() }),
      ),
    )
    expect(both.map((r) => r.statusCode).sort()).toEqual([201, 409])
    expectError(both.find((r) => r.statusCode === 409) as LightMyRequestResponse, 409, 'SENDER_EXISTS')
    const again = await call('POST', '/api/admin/senders', {
      phoneNumberId: id,
      displayName: 'Y',
      accessToken: token(),
    })
    expectError(again, 409, 'SENDER_EXISTS', new RegExp(id))
  })
})

describe('GET /api/admin/senders', () => {
  let tag: string
  beforeAll(async () => {
    await insertDefaultSender()
    tag = `List${Date.now()}`
    for (const name of ['Alpha', 'Beta', 'Gamma']) await create({ displayName: `${tag} ${name}` })
    const paused = await create({ displayName: `${tag} Paused` })
    await call('PATCH', `/api/admin/senders/${paused.id}`, { state: 'paused' })
  })

  it('pages with the envelope, newest first, taking 1 by default', async () => {
    const res = await call('GET', `/api/admin/senders?q=${tag}`)
    expect(res.statusCode).toBe(200)
    const body = res.json<SenderList>()
    expect(Value.Check(SenderList, body)).toBe(true)
    expect(body).toMatchObject({ page: 1, take: 1, itemCount: 4, pageCount: 4, hasNextPage: true })
    expect(body.data.map((s) => s.displayName)).toEqual([`${tag} Paused`])
  })

  it('filters by state and orders by name', async () => {
    const paused = (await call('GET', `/api/admin/senders?q=${tag}&state=paused&take=10`)).json<SenderList>()
    expect(paused.data.map((s) => s.displayName)).toEqual([`${tag} Paused`])
    const byName = (
      await call('GET', `/api/admin/senders?q=${tag}&state=active&orderField=displayName&order=ASC&take=10`)
    ).json<SenderList>()
    expect(byName.data.map((s) => s.displayName)).toEqual([`${tag} Alpha`, `${tag} Beta`, `${tag} Gamma`])
    const last = (await call('GET', `/api/admin/senders?q=${tag}&take=3&page=2`)).json<SenderList>()
    expect(last).toMatchObject({
      page: 2,
      itemCount: 4,
      pageCount: 2,
      hasPreviousPage: true,
      hasNextPage: false,
    })
    expect(last.data).toHaveLength(1)
  })

  it('lists the environment’s sender as `default`, source environment', async () => {
    const body = (await call('GET', '/api/admin/senders?q=Environment sender&take=5')).json<SenderList>()
    expect(body.data).toEqual([expect.objectContaining({ id: 'default', source: 'environment' })])
  })

  it('refuses an unknown filter or order field: 400', async () => {
    expectError(await call('GET', '/api/admin/senders?state=sleeping'), 400, 'VALIDATION_ERROR', /state/)
    expectError(await call('GET', '/api/admin/senders?orderField=phoneNumberId'), 400, 'VALIDATION_ERROR')
  })
})

describe('GET /api/admin/senders/:id', () => {
  it('answers one sender, and 404 for an unknown or malformed id', async () => {
    const sender = await create()
    const res = await call('GET', `/api/admin/senders/${sender.id.toUpperCase()}`)
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual(sender)
    for (const id of [randomUUID(), 'not-a-sender', "1' or '1'='1", 'DEFAULT']) {
      expectError(await call('GET', `/api/admin/senders/${encodeURIComponent(id)}`), 404, 'NOT_FOUND')
    }
  })
})

describe('PATCH /api/admin/senders/:id', () => {
  it('changes only the fields given, and tells the workers', async () => {
    const sender = await create({ displayPhoneNumber: '5511900001111' })
    const res = await call('PATCH', `/api/admin/senders/${sender.id}`, {
      displayName: 'Renamed',
      ratePerSecond: 250,
      displayPhoneNumber: null,
    })
    expect(res.statusCode, res.body).toBe(200)
    expect(res.json()).toMatchObject({
      id: sender.id,
      displayName: 'Renamed',
      ratePerSecond: 250,
      displayPhoneNumber: null,
      phoneNumberId: sender.phoneNumberId,
      accessTokenLast4: sender.accessTokenLast4,
    })
    await waitFor(() => published.includes(sender.id), { what: 'the change published' })
  })

  it('re-seals a new token and shows its last four', async () => {
    const sender = await create()
    const accessToken = token()
    const res = await call('PATCH', `/api/admin/senders/${sender.id}`, { accessToken })
    expect(res.json().accessTokenLast4).toBe(accessToken.slice(-4))
    expect(box.open((await storedSender(sender.id))?.access_token_ciphertext)).toBe(accessToken)
  })

  it('pauses with the admin’s name, resumes with active, and active clears needs_attention', async () => {
    const sender = await create()
    const paused = await call(
      'PATCH',
      `/api/admin/senders/${sender.id}`,
      { state: 'paused' },
      asAdmin(ADMIN.ops),
    )
    expect(paused.json()).toMatchObject({ state: 'paused', stateReason: 'Paused by ops' })
    const resumed = await call('PATCH', `/api/admin/senders/${sender.id}`, { state: 'active' })
    expect(resumed.json()).toMatchObject({ state: 'active', stateReason: null })

    await world.sql`update senders set state = 'needs_attention', state_reason = '190: token expired' where id = ${sender.id}`
    const renamed = await call('PATCH', `/api/admin/senders/${sender.id}`, { displayName: 'Still broken' })
    expect(renamed.json()).toMatchObject({ state: 'needs_attention', stateReason: '190: token expired' })
    const fixed = await call('PATCH', `/api/admin/senders/${sender.id}`, { state: 'active' })
    expect(fixed.json()).toMatchObject({ state: 'active', stateReason: null })
  })

  it('makes a needs_attention sender active again with a new token, unless the same change pauses it', async () => {
    const sender = await create()
    await world.sql`update senders set state = 'needs_attention', state_reason = '190: token expired' where id = ${sender.id}`
    const res = await call('PATCH', `/api/admin/senders/${sender.id}`, { accessToken: token() })
    expect(res.json()).toMatchObject({ state: 'active', stateReason: null })

    await world.sql`update senders set state = 'needs_attention', state_reason = '190: token expired' where id = ${sender.id}`
    const both = await call('PATCH', `/api/admin/senders/${sender.id}`, {
      accessToken: token(),
      state: 'paused',
    })
    expect(both.json()).toMatchObject({ state: 'paused', stateReason: 'Paused by ana' })

    // A new token leaves a paused sender paused: pausing is the admin's decision, not the token's.
    const paused = await call('PATCH', `/api/admin/senders/${sender.id}`, { accessToken: token() })
    expect(paused.json()).toMatchObject({ state: 'paused' })
  })

  it('refuses invalid changes: 400, and 404 for an unknown sender', async () => {
    const sender = await create()
    const url = `/api/admin/senders/${sender.id}`
    expectError(await call('PATCH', url, {}), 400, 'VALIDATION_ERROR')
    expectError(
      await call('PATCH', url, { state: 'needs_attention' }),
      400,
      'VALIDATION_ERROR',
      /body\.state/,
    )
    expectError(await call('PATCH', url, { ratePerSecond: 0 }), 400, 'VALIDATION_ERROR', /ratePerSecond/)
    expectError(await call('PATCH', url, { ratePerSecond: 1001 }), 400, 'VALIDATION_ERROR', /ratePerSecond/)
    expectError(await call('PATCH', url, { phoneNumberId: '1' }), 400, 'VALIDATION_ERROR', /phoneNumberId/)
    expectError(
      await call('PATCH', `/api/admin/senders/${randomUUID()}`, { displayName: 'X' }),
      404,
      'NOT_FOUND',
    )
    expect((await call('GET', url)).json()).toEqual(sender)
  })

  it('lets admins change only the state, rate and display number of the default sender', async () => {
    await insertDefaultSender()
    for (const field of ['displayName', 'accessToken'] as const) {
      const res = await call('PATCH', '/api/admin/senders/default', { state: 'active', [field]: token() })
      expectError(res, 400, 'VALIDATION_ERROR', new RegExp(`body\\.${field} .*managed by the environment`))
    }
    const res = await call('PATCH', '/api/admin/senders/default', {
      state: 'paused',
      ratePerSecond: 500,
      displayPhoneNumber: '15550783881',
    })
    expect(res.statusCode, res.body).toBe(200)
    expect(res.json()).toMatchObject({
      id: 'default',
      source: 'environment',
      state: 'paused',
      ratePerSecond: 500,
    })
    await waitFor(() => published.includes('default'), { what: 'the change published' })
    await call('PATCH', '/api/admin/senders/default', { state: 'active', displayPhoneNumber: null })
  })
})

describe('DELETE /api/admin/senders/:id', () => {
  it('deletes an unused sender: 204, then 404, and tells the workers', async () => {
    const sender = await create()
    const res = await call('DELETE', `/api/admin/senders/${sender.id}`)
    expect(res.statusCode).toBe(204)
    expect(res.body).toBe('')
    expect(await storedSender(sender.id)).toBeUndefined()
    await waitFor(() => published.includes(sender.id), { what: 'the change published' })
    expectError(await call('GET', `/api/admin/senders/${sender.id}`), 404, 'NOT_FOUND')
    expectError(await call('DELETE', `/api/admin/senders/${sender.id}`), 404, 'NOT_FOUND')
  })

  it('refuses while an API key is bound to the sender: 409 SENDER_IN_USE', async () => {
    const sender = await create()
    const key = await activeKey(app)
    await world.sql`update api_keys set sender_id = ${sender.id} where id = ${key.id}`
    await publishedSoFar()
    expectError(
      await call('DELETE', `/api/admin/senders/${sender.id}`),
      409,
      'SENDER_IN_USE',
      /API key is bound/,
    )
    expect(await storedSender(sender.id)).toBeDefined()
    expect(await publishedSoFar()).toEqual([])

    await world.sql`update api_keys set sender_id = null where id = ${key.id}`
    expect((await call('DELETE', `/api/admin/senders/${sender.id}`)).statusCode).toBe(204)
  })

  it('refuses while messages wait for the sender, for admission or in its queue', async () => {
    const sender = await create()
    const url = `/api/admin/senders/${sender.id}`
    const fair = fairKeys(world.queuePrefix, sender.id)
    await redis.hset(fair.jobs, randomUUID(), '{}')
    expectError(await call('DELETE', url), 409, 'SENDER_IN_USE', /1 message is still on the way/)
    await redis.del(fair.jobs)

    const active = `${world.queuePrefix}:${senderQueueName(sender.id)}:active`
    await redis.lpush(active, '1')
    expectError(await call('DELETE', url), 409, 'SENDER_IN_USE')
    await redis.del(active)

    expect((await call('DELETE', url)).statusCode).toBe(204)
  })

  it('never deletes the default sender', async () => {
    await insertDefaultSender()
    expectError(await call('DELETE', '/api/admin/senders/default'), 409, 'SENDER_IN_USE', /default sender/)
    expect(await storedSender('default')).toBeDefined()
  })
})

describe('publishing a change', () => {
  it('is best effort: a change is stored and answered when Redis cannot take the message', async () => {
    const sender = await create()
    const original = app.deps.redis.publish.bind(app.deps.redis)
    app.deps.redis.publish = (() => Promise.reject(new Error('Connection is closed.'))) as never
    try {
      const res = await call('PATCH', `/api/admin/senders/${sender.id}`, { displayName: 'Offline change' })
      expect(res.statusCode).toBe(200)
    } finally {
      app.deps.redis.publish = original
    }
    expect((await storedSender(sender.id))?.display_name).toBe('Offline change')
    expect(app.logs.text()).toContain('could not publish sender change')
  })
})

// Last: every route above ran with the API at trace level.
describe('the tokens', () => {
  it('never appear in any answer nor in any log line', () => {
    expect(tokens.length).toBeGreaterThan(20)
    const answers = bodies.join('\n')
    const logs = app.logs.text()
    expect(app.logs.lines.length).toBeGreaterThan(50)
    for (const value of tokens) {
      expect(answers).not.toContain(value)
      expect(logs).not.toContain(value)
      // Not even the part before the last four that admins see.
      expect(logs).not.toContain(value.slice(0, -4))
    }
  })
})
