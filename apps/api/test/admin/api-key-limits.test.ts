import { ApiKeyAdminDetail, ApiKeyAdminView, type ApiKeySelf } from '@dispatch/contracts'
import { waitFor } from '@dispatch/testing'
import Value from 'typebox/value'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  ADMIN,
  activeKey,
  asAdmin,
  buildTestApp,
  createWorld,
  expectError,
  requestKey,
  SEND_SCOPES,
  send,
  type TestApp,
  type TestWorld,
} from '../helpers.ts'

let world: TestWorld
let app: TestApp
beforeAll(async () => {
  world = await createWorld()
  app = await buildTestApp(world)
  await world.sql`insert into senders (id, phone_number_id, display_name) values ('snd-test', '123', 'x')`
})
afterAll(async () => {
  await app.close()
  await world.close()
})

const patch = (id: string, payload: unknown, headers: Record<string, string> = asAdmin()) =>
  app.inject({
    method: 'PATCH',
    url: `/api/admin/api-keys/${id}`,
    headers,
    ...(payload === undefined ? {} : { payload: payload as object }),
  })
const detail = async (id: string) =>
  (await app.inject({ method: 'GET', url: `/api/admin/api-keys/${id}`, headers: asAdmin() })).json()
const me = (key: string, on: TestApp = app) =>
  on.inject({ method: 'GET', url: '/api/api-keys/me', headers: { 'x-api-key': key } })
const auditRows = async (id: string) =>
  world.sql`select actor, from_status, to_status, reason, changes from api_key_audit_log
            where api_key_id = ${id} order by id`

describe('PATCH /api/admin/api-keys/:id', () => {
  it('sets the limits, records who changed what, and answers the admin view', async () => {
    const key = await activeKey(app)
    const res = await patch(
      key.id,
      { senderId: 'snd-test', ratePerSecond: 5, dailyQuota: 1000, transactional: true },
      asAdmin(ADMIN.ops),
    )
    expect(res.statusCode, res.body).toBe(200)
    expect(Value.Check(ApiKeyAdminView, res.json())).toBe(true)
    expect(res.json()).toMatchObject({
      id: key.id,
      status: 'approved',
      senderId: 'snd-test',
      ratePerSecond: 5,
      dailyQuota: 1000,
      transactional: true,
    })

    const body = await detail(key.id)
    expect(Value.Check(ApiKeyAdminDetail, body)).toBe(true)
    expect(body).toMatchObject({ senderId: 'snd-test', ratePerSecond: 5, dailyQuota: 1000 })
    expect(body.history).toEqual([
      expect.objectContaining({ actor: 'ana', toStatus: 'approved', changes: null }),
      {
        actor: 'ops',
        fromStatus: 'approved',
        toStatus: 'approved',
        reason: null,
        changes: {
          senderId: { from: null, to: 'snd-test' },
          ratePerSecond: { from: null, to: 5 },
          dailyQuota: { from: null, to: 1000 },
          transactional: { from: false, to: true },
        },
        createdAt: expect.any(String),
      },
    ])
    expect(body.updatedAt > res.json().createdAt).toBe(true)
  })

  it('records only the fields whose value changed', async () => {
    const key = await activeKey(app)
    await patch(key.id, { ratePerSecond: 5, dailyQuota: 10 })
    const res = await patch(key.id, { ratePerSecond: 5, dailyQuota: 20, transactional: false })
    expect(res.statusCode, res.body).toBe(200)
    const history = (await detail(key.id)).history
    expect(history.at(-1).changes).toEqual({ dailyQuota: { from: 10, to: 20 } })
  })

  it('resets a field to the service default with null ("default" names the default sender too)', async () => {
    const key = await activeKey(app)
    await patch(key.id, { senderId: 'snd-test', ratePerSecond: 7, dailyQuota: 50 })
    const res = await patch(key.id, { senderId: 'default', ratePerSecond: null, dailyQuota: null })
    expect(res.statusCode, res.body).toBe(200)
    expect(res.json()).toMatchObject({ senderId: null, ratePerSecond: null, dailyQuota: null })
    expect((await detail(key.id)).history.at(-1).changes).toEqual({
      senderId: { from: 'snd-test', to: null },
      ratePerSecond: { from: 7, to: null },
      dailyQuota: { from: 50, to: null },
    })
    const [row] = await world.sql`select sender_id from api_keys where id = ${key.id}`
    expect(row?.sender_id).toBeNull()
  })

  it('a change to nothing answers 200 and records nothing', async () => {
    const key = await activeKey(app)
    const before = await auditRows(key.id)
    const res = await patch(key.id, {
      senderId: 'default',
      ratePerSecond: null,
      dailyQuota: null,
      transactional: false,
    })
    expect(res.statusCode, res.body).toBe(200)
    expect(res.json()).toMatchObject({ senderId: null, ratePerSecond: null, transactional: false })
    expect(await auditRows(key.id)).toEqual(before)
    const [row] = await world.sql`select updated_at from api_keys where id = ${key.id}`
    expect(row?.updated_at).toEqual(new Date(res.json().updatedAt))
  })

  it('prepares a pending key before approval; the status is untouched', async () => {
    const key = await requestKey(app)
    const res = await patch(key.id, { dailyQuota: 3 })
    expect(res.statusCode, res.body).toBe(200)
    expect(res.json()).toMatchObject({ status: 'pending', dailyQuota: 3 })
    expect(await auditRows(key.id)).toEqual([
      {
        actor: 'ana',
        from_status: 'pending',
        to_status: 'pending',
        reason: null,
        changes: { dailyQuota: { from: null, to: 3 } },
      },
    ])
  })

  it('422 INVALID_REFERENCE for a sender that does not exist, and changes nothing', async () => {
    const key = await activeKey(app)
    const res = await patch(key.id, { senderId: 'no-such-sender', dailyQuota: 9 })
    expectError(res, 422, 'INVALID_REFERENCE', /no-such-sender/)
    expect(await detail(key.id)).toMatchObject({ senderId: null, dailyQuota: null })
    expect(await auditRows(key.id)).toHaveLength(1)
  })

  it('404 NOT_FOUND for an unknown id and for a malformed one', async () => {
    expectError(await patch('00000000-0000-4000-8000-000000000000', { dailyQuota: 1 }), 404, 'NOT_FOUND')
    expectError(await patch('42', { dailyQuota: 1 }), 404, 'NOT_FOUND')
  })

  const badBodies: Array<[string, unknown, RegExp]> = [
    ['an empty object', {}, /body/],
    ['no body at all', undefined, /body/],
    ['a rate of 0', { ratePerSecond: 0 }, /body\.ratePerSecond/],
    ['a fractional rate', { ratePerSecond: 1.5 }, /body\.ratePerSecond/],
    ['a rate as a string', { ratePerSecond: '10' }, /body\.ratePerSecond/],
    ['a negative quota', { dailyQuota: -1 }, /body\.dailyQuota/],
    ['a huge quota', { dailyQuota: 2_000_000_000 }, /body\.dailyQuota/],
    ['transactional as a string', { transactional: 'yes' }, /body\.transactional/],
    ['transactional null', { transactional: null }, /body\.transactional/],
    ['an empty senderId', { senderId: '' }, /body\.senderId/],
    ['an unknown property', { status: 'revoked' }, /unknown property "status"/],
  ]
  it.each(badBodies)('400 VALIDATION_ERROR for %s', async (_what, payload, message) => {
    const key = await activeKey(app)
    expectError(await patch(key.id, payload), 400, 'VALIDATION_ERROR', message)
  })

  it('401 ADMIN_AUTH_REQUIRED without an admin token, or with an API key instead', async () => {
    const key = await activeKey(app)
    const attempts: Array<Record<string, string>> = [
      {},
      { authorization: 'Bearer not-a-real-token' },
      { authorization: `Bearer ${key.key}` },
      { 'x-api-key': key.key },
    ]
    for (const headers of attempts) {
      const res = await app.inject({
        method: 'PATCH',
        url: `/api/admin/api-keys/${key.id}`,
        headers,
        payload: { dailyQuota: 1 },
        remoteAddress: '192.0.2.77',
      })
      expectError(res, 401, 'ADMIN_AUTH_REQUIRED')
    }
    expect(await detail(key.id)).toMatchObject({ dailyQuota: null })
  })
})

describe('every instance applies a change at once', () => {
  it('a second instance sharing Redis drops its cached key: new rate and quota on its next request', async () => {
    const second = await buildTestApp(world)
    try {
      const key = await activeKey(app, { scopes: SEND_SCOPES })
      // The second instance caches the key with the service defaults.
      expect((await me(key.key, second)).json().limits).toMatchObject({
        ratePerSecond: null,
        dailyQuota: null,
        effectiveRatePerSecond: 100,
      })
      expect((await send(second, 'send-text', key.key)).statusCode).toBe(202)

      expect((await patch(key.id, { ratePerSecond: 3, dailyQuota: 2 })).statusCode).toBe(200)
      const self = await waitFor(
        async () => {
          const body = (await me(key.key, second)).json<ApiKeySelf>()
          return body.limits.dailyQuota === 2 && body
        },
        { timeoutMs: 1000, intervalMs: 10, what: 'the second instance to see the new limits' },
      )
      expect(self.limits).toMatchObject({ ratePerSecond: 3, effectiveRatePerSecond: 3, dailyQuota: 2 })
      // The send before the quota was set counts: one left today.
      expect(self.usage).toMatchObject({ today: 1, remainingToday: 1 })
      expect((await send(second, 'send-text', key.key)).statusCode).toBe(202)
      expectError(await send(second, 'send-text', key.key), 429, 'QUOTA_EXCEEDED')
    } finally {
      await second.close()
    }
  })
})
