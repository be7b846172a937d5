import { randomBytes, randomUUID } from 'node:crypto'
import { ApiKeyAdminDetail, SenderPoolList, type SenderPoolView, type SenderView } from '@dispatch/contracts'
import type { LightMyRequestResponse } from 'fastify'
import Value from 'typebox/value'
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
} from '../helpers.ts'

/**
 * Sender pools as admins manage them (issue 44): ordered senders of one business, each with a
 * weight, that keys are bound to; audited; refused to keys and to anyone without an admin token.
 */

let world: TestWorld
let app: TestApp

beforeAll(async () => {
  world = await createWorld()
  app = await buildTestApp(world, { SECRETS_KEY: randomBytes(32).toString('base64') })
})
afterAll(async () => {
  await app.close()
  await world.close()
})

const call = (
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE',
  url: string,
  payload?: object,
  headers: Record<string, string> = asAdmin(),
): Promise<LightMyRequestResponse> => app.inject({ method, url, headers, ...(payload ? { payload } : {}) })

let numbers = 0
const sender = async (fields: { businessId?: string; wabaId?: string; displayName?: string }) => {
  const res = await call('POST', '/api/admin/senders', {
    phoneNumberId: `20${Date.now()}${numbers++}`,
    displayName: fields.displayName ?? `Number ${numbers}`,
    accessToken: `EAAG${randomBytes(24).toString('base64url')}`,
    ...fields,
  })
  expect(res.statusCode, res.body).toBe(201)
  return res.json<SenderView>()
}
/** A Meta id: digits, unique in this run. */
let ids = 0
const metaId = () => `${Date.now()}${ids++}`
const business = metaId

const createPool = async (members: { senderId: string; weight?: number }[], name = 'Support numbers') => {
  const res = await call('POST', '/api/admin/sender-pools', { name, members })
  expect(res.statusCode, res.body).toBe(201)
  return res.json<SenderPoolView>()
}
const auditOf = (id: string) =>
  world.sql`select actor, action, details from admin_audit_log
    where target_type = 'sender_pool' and target_id = ${id} order by id`
const poolCount = async () => (await world.sql`select count(*)::int as n from sender_pools`)[0]?.n as number

describe('creating a pool', () => {
  it('keeps the senders in the order given, each with its weight and health, and audits it', async () => {
    const biz = business()
    const a = await sender({ businessId: biz, wabaId: metaId(), displayName: 'First' })
    const b = await sender({ businessId: biz, wabaId: metaId(), displayName: 'Second' })
    const pool = await createPool([{ senderId: b.id, weight: 3 }, { senderId: a.id }])
    expect(pool).toMatchObject({
      name: 'Support numbers',
      portfolio: `business:${biz}`,
      boundKeys: 0,
      members: [
        {
          senderId: b.id,
          position: 0,
          weight: 3,
          displayName: 'Second',
          inRotation: true,
          outOfRotation: null,
        },
        {
          senderId: a.id,
          position: 1,
          weight: 1,
          displayName: 'First',
          inRotation: true,
          outOfRotation: null,
        },
      ],
    })
    const read = await call('GET', `/api/admin/sender-pools/${pool.id.toUpperCase()}`)
    expect(read.statusCode).toBe(200)
    expect(read.json()).toEqual(pool)
    expect(await auditOf(pool.id)).toEqual([
      {
        actor: 'ana',
        action: 'sender_pool.create',
        details: {
          name: 'Support numbers',
          members: [
            { senderId: b.id, weight: 3 },
            { senderId: a.id, weight: 1 },
          ],
        },
      },
    ])
  })

  it('judges one business by the businessId, else the WABA', async () => {
    const a = await sender({ wabaId: metaId() })
    const b = await sender({ wabaId: a.wabaId as string })
    const pool = await createPool([{ senderId: a.id }, { senderId: b.id }])
    expect(pool.portfolio).toBe(`waba:${a.wabaId}`)
  })

  it('refuses a sender of another business with 422, naming it, and creates nothing', async () => {
    const a = await sender({ businessId: business() })
    const other = await sender({ businessId: business() })
    const before = await poolCount()
    const res = await call('POST', '/api/admin/sender-pools', {
      name: 'Mixed',
      members: [{ senderId: a.id }, { senderId: other.id }],
    })
    expectError(res, 422, 'SENDER_POOL_BUSINESS_MISMATCH', new RegExp(other.id))
    expect(await poolCount()).toBe(before)
  })

  it('refuses an unknown sender (422), a sender twice (400), no member and a bad weight (400)', async () => {
    const a = await sender({ businessId: business() })
    const unknown = randomUUID()
    expectError(
      await call('POST', '/api/admin/sender-pools', {
        name: 'P',
        members: [{ senderId: a.id }, { senderId: unknown }],
      }),
      422,
      'INVALID_REFERENCE',
      new RegExp(unknown),
    )
    expectError(
      await call('POST', '/api/admin/sender-pools', {
        name: 'P',
        members: [{ senderId: a.id }, { senderId: a.id.toUpperCase() }],
      }),
      400,
      'VALIDATION_ERROR',
      /more than once/,
    )
    expectError(
      await call('POST', '/api/admin/sender-pools', { name: 'P', members: [] }),
      400,
      'VALIDATION_ERROR',
    )
    expectError(
      await call('POST', '/api/admin/sender-pools', { name: 'P', members: [{ senderId: a.id, weight: 0 }] }),
      400,
      'VALIDATION_ERROR',
    )
    expectError(
      await call('POST', '/api/admin/sender-pools', { name: 'P', members: [{ senderId: a.id }], extra: 1 }),
      400,
      'VALIDATION_ERROR',
    )
  })
})

describe("a pool's health", () => {
  it('shows a member that Meta rates RED, or an admin paused, out of rotation, and why', async () => {
    const biz = business()
    const a = await sender({ businessId: biz })
    const b = await sender({ businessId: biz })
    const c = await sender({ businessId: biz })
    const pool = await createPool([{ senderId: a.id }, { senderId: b.id }, { senderId: c.id }])
    await world.sql`update senders set quality_rating = 'RED' where id = ${b.id}`
    expect((await call('PATCH', `/api/admin/senders/${c.id}`, { state: 'paused' })).statusCode).toBe(200)
    const res = await call('GET', `/api/admin/sender-pools/${pool.id}`)
    const members = res.json<SenderPoolView>().members
    expect(members.map((m) => [m.inRotation, m.outOfRotation])).toEqual([
      [true, null],
      [false, 'quality_red'],
      [false, 'paused'],
    ])
    expect(members[1]?.health.qualityRating).toBe('RED')
  })
})

describe('binding a key to a pool', () => {
  it("moves a key whose sender is not a member to the pool's first member, in one audited change", async () => {
    const biz = business()
    const a = await sender({ businessId: biz })
    const b = await sender({ businessId: biz })
    const pool = await createPool([{ senderId: a.id }, { senderId: b.id }])
    const key = await activeKey(app)
    const res = await call('PATCH', `/api/admin/api-keys/${key.id}`, { senderPoolId: pool.id.toUpperCase() })
    expect(res.statusCode, res.body).toBe(200)
    expect(res.json()).toMatchObject({ senderPoolId: pool.id, senderId: a.id })
    const detail = (await call('GET', `/api/admin/api-keys/${key.id}`)).json<ApiKeyAdminDetail>()
    expect(Value.Check(ApiKeyAdminDetail, detail)).toBe(true)
    expect(detail.history.at(-1)).toMatchObject({
      actor: 'ana',
      changes: { senderPoolId: { from: null, to: pool.id }, senderId: { from: null, to: a.id } },
    })
    // Another member is fine; a sender outside the pool is not.
    expect((await call('PATCH', `/api/admin/api-keys/${key.id}`, { senderId: b.id })).json()).toMatchObject({
      senderId: b.id,
      senderPoolId: pool.id,
    })
    const outsider = await sender({ businessId: biz })
    expectError(
      await call('PATCH', `/api/admin/api-keys/${key.id}`, { senderId: outsider.id }),
      422,
      'INVALID_REFERENCE',
      /not a member/,
    )
    expectError(
      await call('PATCH', `/api/admin/api-keys/${key.id}`, { senderPoolId: pool.id, senderId: outsider.id }),
      422,
      'INVALID_REFERENCE',
    )
    expect((await call('GET', `/api/admin/sender-pools/${pool.id}`)).json()).toMatchObject({ boundKeys: 1 })
    // The key itself learns nothing of the pool.
    const me = await app.inject({ method: 'GET', url: '/api/api-keys/me', headers: { 'x-api-key': key.key } })
    expect(me.statusCode).toBe(200)
    expect(me.body).not.toContain(pool.id)
  })

  it('refuses an unknown pool with 422, and a malformed id with 400', async () => {
    const key = await activeKey(app)
    const unknown = randomUUID()
    expectError(
      await call('PATCH', `/api/admin/api-keys/${key.id}`, { senderPoolId: unknown }),
      422,
      'INVALID_REFERENCE',
      new RegExp(unknown),
    )
    expectError(
      await call('PATCH', `/api/admin/api-keys/${key.id}`, { senderPoolId: 'pool-1' }),
      400,
      'VALIDATION_ERROR',
    )
  })
})

describe('changing and deleting a pool', () => {
  it("keeps a bound key's own sender in the pool (409), and otherwise replaces the members, audited", async () => {
    const biz = business()
    const a = await sender({ businessId: biz })
    const b = await sender({ businessId: biz })
    const c = await sender({ businessId: biz })
    const pool = await createPool([{ senderId: a.id }, { senderId: b.id }])
    const key = await activeKey(app)
    await call('PATCH', `/api/admin/api-keys/${key.id}`, { senderPoolId: pool.id })
    const refused = await call('PATCH', `/api/admin/sender-pools/${pool.id}`, {
      members: [{ senderId: b.id }],
    })
    expectError(refused, 409, 'SENDER_POOL_IN_USE', new RegExp(key.id))
    const res = await call(
      'PATCH',
      `/api/admin/sender-pools/${pool.id}`,
      { name: 'Renamed', members: [{ senderId: c.id, weight: 2 }, { senderId: a.id }] },
      asAdmin(ADMIN.ops),
    )
    expect(res.statusCode, res.body).toBe(200)
    expect(res.json<SenderPoolView>()).toMatchObject({
      name: 'Renamed',
      members: [
        { senderId: c.id, position: 0, weight: 2 },
        { senderId: a.id, position: 1, weight: 1 },
      ],
    })
    expect((await auditOf(pool.id)).at(-1)).toEqual({
      actor: 'ops',
      action: 'sender_pool.update',
      details: {
        name: { from: 'Support numbers', to: 'Renamed' },
        members: {
          from: [
            { senderId: a.id, weight: 1 },
            { senderId: b.id, weight: 1 },
          ],
          to: [
            { senderId: c.id, weight: 2 },
            { senderId: a.id, weight: 1 },
          ],
        },
      },
    })
    const other = await sender({ businessId: business() })
    expectError(
      await call('PATCH', `/api/admin/sender-pools/${pool.id}`, {
        members: [{ senderId: a.id }, { senderId: other.id }],
      }),
      422,
      'SENDER_POOL_BUSINESS_MISMATCH',
    )
  })

  it('deletes a pool only once no key is bound to it (409 before), audited; then it is gone', async () => {
    const a = await sender({ businessId: business() })
    const pool = await createPool([{ senderId: a.id }])
    const key = await activeKey(app)
    await call('PATCH', `/api/admin/api-keys/${key.id}`, { senderPoolId: pool.id })
    expectError(await call('DELETE', `/api/admin/sender-pools/${pool.id}`), 409, 'SENDER_POOL_IN_USE')
    expect(
      (await call('PATCH', `/api/admin/api-keys/${key.id}`, { senderPoolId: null })).json(),
    ).toMatchObject({
      senderPoolId: null,
      senderId: a.id,
    })
    const res = await call('DELETE', `/api/admin/sender-pools/${pool.id}`)
    expect(res.statusCode, res.body).toBe(204)
    expectError(await call('GET', `/api/admin/sender-pools/${pool.id}`), 404, 'NOT_FOUND')
    expectError(await call('DELETE', `/api/admin/sender-pools/${pool.id}`), 404, 'NOT_FOUND')
    expect((await auditOf(pool.id)).map((r) => r.action)).toEqual([
      'sender_pool.create',
      'sender_pool.delete',
    ])
  })

  it('lets a deleted sender leave every pool it was in', async () => {
    const biz = business()
    const a = await sender({ businessId: biz })
    const b = await sender({ businessId: biz })
    const pool = await createPool([{ senderId: a.id }, { senderId: b.id }])
    expect((await call('DELETE', `/api/admin/senders/${b.id}`)).statusCode).toBe(204)
    const read = (await call('GET', `/api/admin/sender-pools/${pool.id}`)).json<SenderPoolView>()
    expect(read.members.map((m) => m.senderId)).toEqual([a.id])
  })
})

describe('two admins at once', () => {
  it('never leave a bound key with an own sender outside its pool, whoever wins', async () => {
    const biz = business()
    const a = await sender({ businessId: biz })
    const b = await sender({ businessId: biz })
    for (let round = 0; round < 8; round++) {
      const pool = await createPool([{ senderId: a.id }, { senderId: b.id }])
      const key = await activeKey(app)
      // One binds the key to b while the other takes b out of the pool.
      const [bind, shrink] = await Promise.all([
        call('PATCH', `/api/admin/api-keys/${key.id}`, { senderPoolId: pool.id, senderId: b.id }),
        call(
          'PATCH',
          `/api/admin/sender-pools/${pool.id}`,
          { members: [{ senderId: a.id }] },
          asAdmin(ADMIN.ops),
        ),
      ])
      expect([bind.statusCode, shrink.statusCode].sort(), `${bind.body} ${shrink.body}`).toEqual(
        bind.statusCode === 200 ? [200, 409] : [200, 422],
      )
      const [row] = await world.sql`select sender_id, sender_pool_id from api_keys where id = ${key.id}`
      const members = await world.sql`select sender_id from sender_pool_members where pool_id = ${pool.id}`
      if (row?.sender_pool_id) expect(members.map((m) => m.sender_id)).toContain(row.sender_id)
    }
  })
})

describe('listing pools', () => {
  it('pages them with their members, and finds them by name', async () => {
    const a = await sender({ businessId: business() })
    const name = `Listed ${randomUUID()}`
    const pool = await createPool([{ senderId: a.id }], name)
    const res = await call(
      'GET',
      `/api/admin/sender-pools?take=10&q=${encodeURIComponent(name.slice(7, 20))}`,
    )
    expect(res.statusCode).toBe(200)
    const list = res.json<SenderPoolList>()
    expect(Value.Check(SenderPoolList, list)).toBe(true)
    expect(list.itemCount).toBe(1)
    expect(list.data).toEqual([pool])
  })
})

describe('who may touch pools', () => {
  it('refuses every pool route to a key, a wrong token and no credential: 401, changing nothing', async () => {
    const a = await sender({ businessId: business() })
    const pool = await createPool([{ senderId: a.id }])
    const key = await activeKey(app, { scopes: ['send:free-text', 'read:messages'] })
    const attempts: Record<string, string>[] = [
      {},
      { authorization: 'Bearer not-a-real-token' },
      { authorization: `Bearer ${key.key}` },
      { 'x-api-key': key.key },
    ]
    const routes = [
      { method: 'GET' as const, url: '/api/admin/sender-pools' },
      {
        method: 'POST' as const,
        url: '/api/admin/sender-pools',
        payload: { name: 'Evil', members: [{ senderId: a.id }] },
      },
      { method: 'GET' as const, url: `/api/admin/sender-pools/${pool.id}` },
      { method: 'PATCH' as const, url: `/api/admin/sender-pools/${pool.id}`, payload: { name: 'Evil' } },
      { method: 'DELETE' as const, url: `/api/admin/sender-pools/${pool.id}` },
    ]
    for (const [n, route] of routes.entries()) {
      for (const headers of attempts) {
        const res = await app.inject({ ...route, headers, remoteAddress: `192.0.2.${n + 40}` })
        expectError(res, 401, 'ADMIN_AUTH_REQUIRED')
      }
    }
    expect((await call('GET', `/api/admin/sender-pools/${pool.id}`)).json()).toEqual(pool)
  })

  it('answers 404 for an id that is not one of ours, whatever its spelling', async () => {
    for (const id of [randomUUID(), 'not-an-id', `urn:uuid:${randomUUID()}`]) {
      expectError(await call('GET', `/api/admin/sender-pools/${encodeURIComponent(id)}`), 404, 'NOT_FOUND')
    }
  })
})
