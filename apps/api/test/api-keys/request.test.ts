import { createHash } from 'node:crypto'
import { ApiKeyCreated } from '@dispatch/contracts'
import Value from 'typebox/value'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  buildTestApp,
  createWorld,
  expectError,
  keyRequest,
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

const post = (payload: unknown, headers: Record<string, string> = {}) =>
  app.inject({
    method: 'POST',
    url: '/api/api-keys/request',
    headers: { 'content-type': 'application/json', ...headers },
    payload: typeof payload === 'string' ? payload : JSON.stringify(payload),
  })

describe('POST /api/api-keys/request', () => {
  it('answers 201 with the key shown once, pending, and stores only its hash', async () => {
    const res = await post(keyRequest({ tenantId: 'acme' }))
    expect(res.statusCode).toBe(201)
    const body = res.json()
    expect(Value.Check(ApiKeyCreated, body)).toBe(true)
    expect(body).toMatchObject({
      status: 'pending',
      clientName: 'Acme Notifications',
      email: 'ops@acme.test',
      scopes: ['send:free-text', 'read:messages'],
      tenantId: null,
      requestedTenantId: 'acme',
    })
    expect(body.key).toMatch(/^mdk_dev_[A-Za-z0-9_-]{32}$/)
    expect(Object.keys(body).sort()).toEqual(
      [
        'clientName',
        'createdAt',
        'email',
        'id',
        'key',
        'requestedTenantId',
        'scopes',
        'status',
        'tenantId',
      ].sort(),
    )

    const [row] = await world.sql`select * from api_keys where id = ${body.id}`
    expect(row?.key_hash).toBe(createHash('sha256').update(body.key).digest('hex'))
    expect(body.key.startsWith(row?.key_prefix)).toBe(true)
    expect(row?.key_prefix.length).toBeLessThan(20)
    expect(row).toMatchObject({ requested_tenant_id: 'acme', tenant_id: null })
    expect(JSON.stringify(row)).not.toContain(body.key)
  })

  it('gives every request a different key', async () => {
    const [a, b] = await Promise.all([post(keyRequest()), post(keyRequest())])
    expect(a.json().key).not.toBe(b.json().key)
  })

  it('accepts unknown but well-formed scopes, and no tenant', async () => {
    const res = await post(keyRequest({ scopes: ['read:weather', 'send:free-text'] }))
    expect(res.statusCode).toBe(201)
    expect(res.json()).toMatchObject({ tenantId: null, requestedTenantId: null })
  })

  const invalid: Array<[string, unknown, RegExp]> = [
    ['clientName missing', { email: 'a@b.co', scopes: ['send:image'] }, /body\.clientName is required/],
    ['clientName empty', keyRequest({ clientName: '' }), /body\.clientName/],
    ['clientName blank', keyRequest({ clientName: '   ' }), /body\.clientName/],
    ['clientName too long', keyRequest({ clientName: 'x'.repeat(201) }), /body\.clientName/],
    ['clientName a number', keyRequest({ clientName: 42 }), /body\.clientName must be string/],
    ['email missing', { clientName: 'A', scopes: ['send:image'] }, /body\.email is required/],
    ['email malformed', keyRequest({ email: 'not-an-address' }), /body\.email must match format "email"/],
    ['scopes missing', { clientName: 'A', email: 'a@b.co' }, /body\.scopes is required/],
    ['scopes empty', keyRequest({ scopes: [] }), /body\.scopes/],
    ['scopes a string', keyRequest({ scopes: 'send:image' }), /body\.scopes must be array/],
    ['scope malformed', keyRequest({ scopes: ['SEND TEXT'] }), /body\.scopes\[0\] must match pattern/],
    ['scope repeated', keyRequest({ scopes: ['send:image', 'send:image'] }), /body\.scopes/],
    [
      'too many scopes',
      keyRequest({ scopes: Array.from({ length: 51 }, (_, i) => `read:thing-${i}`) }),
      /body\.scopes/,
    ],
    ['tenantId malformed', keyRequest({ tenantId: 'has spaces' }), /body\.tenantId/],
    ['unknown property', keyRequest({ role: 'admin' }), /body has unknown property "role"/],
    ['an array body', [keyRequest()], /body must be object/],
  ]
  it.each(invalid)('rejects %s with 400 naming the field', async (_, payload, message) => {
    expectError(await post(payload), 400, 'VALIDATION_ERROR', message)
  })

  it('rejects malformed JSON with 400, never 500', async () => {
    expectError(await post('{"clientName": "A",'), 400, 'VALIDATION_ERROR', /not valid JSON/)
  })

  it('rejects an empty JSON body with 400', async () => {
    expectError(await post(''), 400, 'VALIDATION_ERROR')
  })

  it('rejects a body that is not JSON with 415', async () => {
    expectError(await post('clientName=A', { 'content-type': 'text/plain' }), 415, 'UNSUPPORTED_MEDIA_TYPE')
    expectError(
      await post('clientName=A', { 'content-type': 'application/x-www-form-urlencoded' }),
      415,
      'UNSUPPORTED_MEDIA_TYPE',
    )
  })

  it('rejects a body over the size limit with 413', async () => {
    const res = await post(keyRequest({ clientName: 'x'.repeat(70_000) }))
    expectError(res, 413, 'PAYLOAD_TOO_LARGE')
  })

  it('is rate-limited per client IP, with Retry-After', async () => {
    const limited = await buildTestApp(world, {
      KEY_REQUEST_RATE_MAX: '2',
      QUEUE_PREFIX: `${world.queuePrefix}-rl`,
    })
    try {
      const from = (ip: string) =>
        limited.inject({
          method: 'POST',
          url: '/api/api-keys/request',
          payload: keyRequest(),
          remoteAddress: ip,
        })
      expect((await from('10.0.0.1')).statusCode).toBe(201)
      expect((await from('10.0.0.1')).statusCode).toBe(201)
      const third = await from('10.0.0.1')
      expectError(third, 429, 'RATE_LIMITED')
      expect(Number(third.headers['retry-after'])).toBeGreaterThan(0)
      expect((await from('10.0.0.2')).statusCode).toBe(201)
    } finally {
      await limited.close()
    }
  })
})

describe('errors everywhere', () => {
  it('answers an unknown route with the error body', async () => {
    expectError(
      await app.inject({ method: 'GET', url: '/api/nothing-here' }),
      404,
      'NOT_FOUND',
      /GET \/api\/nothing-here/,
    )
  })

  it('answers a known path with the wrong method with the error body', async () => {
    const res = await app.inject({ method: 'DELETE', url: '/api/api-keys/request' })
    expectError(res, 404, 'NOT_FOUND')
  })

  it('answers a malformed URL and an over-long path parameter with the error body', async () => {
    expectError(
      await app.inject({ method: 'GET', url: '/api/admin/api-keys/%E0%A4%A' }),
      400,
      'VALIDATION_ERROR',
    )
    const long = await app.inject({ method: 'GET', url: `/api/admin/api-keys/${'a'.repeat(500)}` })
    expectError(long, 404, 'NOT_FOUND')
  })

  it('echoes a sane x-request-id and makes one up otherwise', async () => {
    const given = await app.inject({ method: 'GET', url: '/healthz', headers: { 'x-request-id': 'abc-123' } })
    expect(given.headers['x-request-id']).toBe('abc-123')
    const hostile = await app.inject({
      method: 'GET',
      url: '/healthz',
      headers: { 'x-request-id': 'a\nb'.repeat(100) },
    })
    expect(hostile.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/)
    const none = await app.inject({ method: 'GET', url: '/healthz' })
    expect(none.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/)
  })
})
