import { ApiKeyAdminDetail, ApiKeyList } from '@dispatch/contracts'
import Value from 'typebox/value'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  ADMIN,
  activeKey,
  asAdmin,
  buildTestApp,
  createWorld,
  decide,
  expectError,
  requestKey,
  type TestApp,
  type TestWorld,
} from '../helpers.ts'

let world: TestWorld
let app: TestApp
beforeAll(async () => {
  world = await createWorld()
  app = await buildTestApp(world)
})
afterAll(async () => {
  await app.close()
  await world.close()
})

const get = (url: string, headers: Record<string, string> = asAdmin()) =>
  app.inject({ method: 'GET', url, headers })

describe('admin authentication, as an attacker would try it', () => {
  it('refuses every admin route without a valid bearer token: 401 ADMIN_AUTH_REQUIRED', async () => {
    const key = await activeKey(app)
    const id = key.id
    const attempts: Array<Record<string, string>> = [
      {},
      { authorization: 'Bearer ' },
      { authorization: 'Bearer not-a-real-token' },
      { authorization: `Basic ${Buffer.from(`ana:${ADMIN.ana}`).toString('base64')}` },
      { authorization: ADMIN.ana },
      { authorization: `Bearer ${ADMIN.ana}x` },
      { authorization: `Bearer ${ADMIN.ana.slice(0, -1)}` },
      { authorization: `Bearer ${key.key}` },
      { 'x-api-key': key.key },
    ]
    const routes = [
      { method: 'GET' as const, url: '/api/admin/api-keys' },
      { method: 'GET' as const, url: `/api/admin/api-keys/${id}` },
      { method: 'POST' as const, url: `/api/admin/api-keys/${id}/approve` },
      { method: 'POST' as const, url: `/api/admin/api-keys/${id}/reject` },
      { method: 'POST' as const, url: `/api/admin/api-keys/${id}/revoke` },
    ]
    // Each route from its own address, so these 45 failures stay under the per-address limit
    // (auth-brute-force.test.ts is about the limit).
    for (const [n, route] of routes.entries()) {
      for (const headers of attempts) {
        const res = await app.inject({ ...route, headers, remoteAddress: `192.0.2.${n + 1}` })
        expectError(res, 401, 'ADMIN_AUTH_REQUIRED')
        expect(res.headers['www-authenticate']).toBe('Bearer')
      }
    }
    // Nothing changed: the key is still approved and has one audit row.
    const [row] = await world.sql`select status from api_keys where id = ${id}`
    expect(row?.status).toBe('approved')
  })

  it('checks the token before looking at the body or the id', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/api/admin/api-keys/not-an-id/reject',
      payload: '{oops',
    })
    expectError(res, 401, 'ADMIN_AUTH_REQUIRED')
  })

  it('accepts each configured token and records its name as the actor', async () => {
    const key = await requestKey(app)
    expect((await decide(app, key.id, 'approve', undefined, ADMIN.ops)).json().decidedBy).toBe('ops')
    expect((await decide(app, key.id, 'revoke', undefined, ADMIN.ana)).json().decidedBy).toBe('ana')
  })
})

describe('GET /api/admin/api-keys', () => {
  // The keys of this block asked for one tenant; pending keys are bound to none, so the block
  // isolates them with `requestedTenantId` (`tenantId` filters the bound tenant, tested below).
  let tenant: string
  beforeAll(async () => {
    tenant = `list-${Date.now()}`
    for (const name of ['Alpha Ltd', 'Beta GmbH', 'Gamma 100% Inc'])
      await requestKey(app, { clientName: name, tenantId: tenant })
    const approved = await requestKey(app, { clientName: 'Delta SA', tenantId: tenant })
    await decide(app, approved.id, 'approve')
  })

  it('pages with the envelope, taking 1 by default, newest first', async () => {
    const res = await get(`/api/admin/api-keys?requestedTenantId=${tenant}`)
    expect(res.statusCode).toBe(200)
    const body = res.json()
    expect(Value.Check(ApiKeyList, body)).toBe(true)
    expect(body).toMatchObject({
      page: 1,
      take: 1,
      itemCount: 4,
      pageCount: 4,
      hasPreviousPage: false,
      hasNextPage: true,
    })
    expect(body.data.map((k: { clientName: string }) => k.clientName)).toEqual(['Delta SA'])
    expect(JSON.stringify(body)).not.toMatch(/keyHash|key_hash|mdk_dev_[A-Za-z0-9_-]{32}/)
  })

  it('is right at the edges: last page, page past the end, empty result', async () => {
    const last = (await get(`/api/admin/api-keys?requestedTenantId=${tenant}&take=3&page=2`)).json()
    expect(last).toMatchObject({
      page: 2,
      take: 3,
      itemCount: 4,
      pageCount: 2,
      hasPreviousPage: true,
      hasNextPage: false,
    })
    expect(last.data).toHaveLength(1)
    const past = (await get(`/api/admin/api-keys?requestedTenantId=${tenant}&take=3&page=9`)).json()
    expect(past).toMatchObject({
      itemCount: 4,
      pageCount: 2,
      hasPreviousPage: true,
      hasNextPage: false,
      data: [],
    })
    const none = (await get('/api/admin/api-keys?requestedTenantId=nobody-here&take=10')).json()
    expect(none).toMatchObject({
      page: 1,
      itemCount: 0,
      pageCount: 0,
      hasPreviousPage: false,
      hasNextPage: false,
      data: [],
    })
  })

  it('filters by status and searches client name and e-mail, taking q literally', async () => {
    const approved = (
      await get(`/api/admin/api-keys?requestedTenantId=${tenant}&status=approved&take=10`)
    ).json()
    expect(approved.data.map((k: { clientName: string }) => k.clientName)).toEqual(['Delta SA'])
    const byName = (await get(`/api/admin/api-keys?requestedTenantId=${tenant}&q=gmbh&take=10`)).json()
    expect(byName.data.map((k: { clientName: string }) => k.clientName)).toEqual(['Beta GmbH'])
    const literal = (
      await get(`/api/admin/api-keys?requestedTenantId=${tenant}&q=${encodeURIComponent('100%')}&take=10`)
    ).json()
    expect(literal.data.map((k: { clientName: string }) => k.clientName)).toEqual(['Gamma 100% Inc'])
    const byEmail = (await get(`/api/admin/api-keys?requestedTenantId=${tenant}&q=acme.test&take=10`)).json()
    expect(byEmail.itemCount).toBe(4)
  })

  it('orders by an allowed field both ways', async () => {
    const names = async (order: string) =>
      (
        await get(
          `/api/admin/api-keys?requestedTenantId=${tenant}&take=10&orderField=clientName&order=${order}`,
        )
      )
        .json()
        .data.map((k: { clientName: string }) => k.clientName)
    expect(await names('ASC')).toEqual(['Alpha Ltd', 'Beta GmbH', 'Delta SA', 'Gamma 100% Inc'])
    expect(await names('DESC')).toEqual(['Gamma 100% Inc', 'Delta SA', 'Beta GmbH', 'Alpha Ltd'])
  })

  const badQueries: Array<[string, RegExp]> = [
    ['take=0', /querystring\.take/],
    ['take=1001', /querystring\.take/],
    ['take=ten', /querystring\.take/],
    ['page=0', /querystring\.page/],
    ['order=UP', /querystring\.order/],
    ['orderField=keyHash', /querystring\.orderField/],
    ['status=active', /querystring\.status/],
    ['deleted=maybe', /querystring\.deleted/],
    ['sort=clientName', /unknown property "sort"/],
  ]
  it.each(badQueries)('rejects %s with 400 naming the parameter', async (query, message) => {
    expectError(await get(`/api/admin/api-keys?${query}`), 400, 'VALIDATION_ERROR', message)
  })
})

describe('GET /api/admin/api-keys/:id', () => {
  it('returns the key with its decision history, never its hash', async () => {
    const key = await requestKey(app)
    await decide(app, key.id, 'approve', { tenantId: 'acme' })
    await decide(app, key.id, 'revoke', { reason: 'leaked in a public repo' }, ADMIN.ops)
    const res = await get(`/api/admin/api-keys/${key.id}`)
    expect(res.statusCode).toBe(200)
    const body = res.json()
    expect(Value.Check(ApiKeyAdminDetail, body)).toBe(true)
    expect(body).toMatchObject({
      id: key.id,
      status: 'revoked',
      tenantId: 'acme',
      statusReason: 'leaked in a public repo',
    })
    expect(body.history).toMatchObject([
      { actor: 'ana', fromStatus: 'pending', toStatus: 'approved', reason: null },
      { actor: 'ops', fromStatus: 'approved', toStatus: 'revoked', reason: 'leaked in a public repo' },
    ])
    expect(res.body).not.toContain(key.key)
  })

  it('answers 404 for an unknown id and for a malformed one', async () => {
    expectError(await get('/api/admin/api-keys/00000000-0000-4000-8000-000000000000'), 404, 'NOT_FOUND')
    expectError(await get('/api/admin/api-keys/42'), 404, 'NOT_FOUND')
    expectError(await get(`/api/admin/api-keys/${'a'.repeat(500)}`), 404, 'NOT_FOUND')
    expectError(await get(`/api/admin/api-keys/${encodeURIComponent("1' or '1'='1")}`), 404, 'NOT_FOUND')
  })
})

describe('decisions', () => {
  it('approves a pending key, binding the tenant the admin names', async () => {
    const key = await requestKey(app, { tenantId: 'requested' })
    const res = await decide(app, key.id, 'approve', { tenantId: 'bound-by-admin' })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toMatchObject({
      status: 'approved',
      tenantId: 'bound-by-admin',
      requestedTenantId: 'requested',
      decidedBy: 'ana',
    })
  })

  it('approves with no body at all binding no tenant, whatever was requested', async () => {
    const key = await requestKey(app, { tenantId: 'requested' })
    const res = await decide(app, key.id, 'approve')
    expect(res.statusCode).toBe(200)
    expect(res.json()).toMatchObject({ status: 'approved', tenantId: null, requestedTenantId: 'requested' })
  })

  it('rejects with a reason, which is required', async () => {
    const key = await requestKey(app)
    expectError(await decide(app, key.id, 'reject'), 400, 'VALIDATION_ERROR', /body\.reason is required/)
    expectError(
      await decide(app, key.id, 'reject', { reason: '  ' }),
      400,
      'VALIDATION_ERROR',
      /body\.reason/,
    )
    const res = await decide(app, key.id, 'reject', { reason: 'Use your company domain' })
    expect(res.json()).toMatchObject({ status: 'rejected', statusReason: 'Use your company domain' })
  })

  it('rejects unknown body properties on decisions', async () => {
    const key = await requestKey(app)
    expectError(
      await decide(app, key.id, 'approve', { status: 'approved' }),
      400,
      'VALIDATION_ERROR',
      /unknown property "status"/,
    )
    expectError(await decide(app, key.id, 'revoke', { reason: 1 }), 400, 'VALIDATION_ERROR', /body\.reason/)
  })

  const forbidden: Array<['pending' | 'approved' | 'rejected' | 'revoked', 'approve' | 'reject' | 'revoke']> =
    [
      ['pending', 'revoke'],
      ['approved', 'approve'],
      ['approved', 'reject'],
      ['rejected', 'approve'],
      ['rejected', 'reject'],
      ['rejected', 'revoke'],
      ['revoked', 'approve'],
      ['revoked', 'reject'],
      ['revoked', 'revoke'],
    ]
  it.each(forbidden)(
    'refuses to move a %s key with %s: 409 INVALID_STATE_TRANSITION',
    async (from, decision) => {
      const key = await requestKey(app)
      if (from === 'approved' || from === 'revoked') await decide(app, key.id, 'approve')
      if (from === 'revoked') await decide(app, key.id, 'revoke')
      if (from === 'rejected') await decide(app, key.id, 'reject', { reason: 'no' })
      const before = await world.sql`select count(*)::int as n from outbox`
      const res = await decide(app, key.id, decision, decision === 'reject' ? { reason: 'again' } : undefined)
      expectError(res, 409, 'INVALID_STATE_TRANSITION', new RegExp(`${decision} an API key that is ${from}`))
      const [row] = await world.sql`select status from api_keys where id = ${key.id}`
      expect(row?.status).toBe(from)
      const after = await world.sql`select count(*)::int as n from outbox`
      expect(after[0]?.n).toBe(before[0]?.n)
    },
  )

  it('answers 404 for a decision on an unknown key', async () => {
    expectError(await decide(app, '00000000-0000-4000-8000-000000000000', 'approve'), 404, 'NOT_FOUND')
  })

  it('writes exactly one audit row and one outbox e-mail per decision', async () => {
    const key = await requestKey(app, { email: 'audit@acme.test' })
    await decide(app, key.id, 'approve')
    await decide(app, key.id, 'revoke', { reason: 'contract ended' })
    const audit =
      await world.sql`select actor, from_status, to_status, reason from api_key_audit_log where api_key_id = ${key.id} order by id`
    expect(audit).toEqual([
      { actor: 'ana', from_status: 'pending', to_status: 'approved', reason: null },
      { actor: 'ana', from_status: 'approved', to_status: 'revoked', reason: 'contract ended' },
    ])
    const emails =
      await world.sql`select payload from outbox where payload->'data'->>'keyId' = ${key.id} order by id`
    expect(emails.map((e) => [e.payload.to, e.payload.template, e.payload.data.reason])).toEqual([
      ['audit@acme.test', 'api-key.approved', null],
      ['audit@acme.test', 'api-key.revoked', 'contract ended'],
    ])
  })

  it('lets exactly one of two admins win when they decide the same key at the same moment', async () => {
    for (let round = 0; round < 10; round++) {
      const key = await requestKey(app)
      const [approve, reject] = await Promise.all([
        decide(app, key.id, 'approve', undefined, ADMIN.ana),
        decide(app, key.id, 'reject', { reason: 'race' }, ADMIN.ops),
      ])
      const statuses = [approve.statusCode, reject.statusCode].sort()
      expect(statuses).toEqual([200, 409])
      const winner = approve.statusCode === 200 ? 'approved' : 'rejected'
      const [row] = await world.sql`select status from api_keys where id = ${key.id}`
      expect(row?.status).toBe(winner)
      const audit = await world.sql`select to_status from api_key_audit_log where api_key_id = ${key.id}`
      expect(audit.map((a) => a.to_status)).toEqual([winner])
      const emails = await world.sql`select 1 from outbox where payload->'data'->>'keyId' = ${key.id}`
      expect(emails).toHaveLength(1)
    }
  })
})
