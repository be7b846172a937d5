import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  activeKey,
  buildTestApp,
  createWorld,
  expectError,
  send,
  type TestApp,
  type TestWorld,
} from './helpers.ts'

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

describe('health', () => {
  it('GET /healthz answers while the process is up', async () => {
    const res = await app.inject({ method: 'GET', url: '/healthz' })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ status: 'ok' })
  })

  it('GET /readyz answers 200 when Postgres and Redis are reachable', async () => {
    const res = await app.inject({ method: 'GET', url: '/readyz' })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ status: 'ok', checks: { postgres: 'ok', redis: 'ok' } })
  })

  it('GET /readyz answers 200 degraded when only Postgres is down: known keys still send', async () => {
    const noPostgres = await buildTestApp(world, {
      DATABASE_URL: world.databaseUrl.replace(/:\d+\//, ':1/'),
    })
    try {
      const res = await noPostgres.inject({ method: 'GET', url: '/readyz' })
      expect(res.statusCode, res.body).toBe(200)
      expect(res.json()).toEqual({ status: 'degraded', checks: { postgres: 'unreachable', redis: 'ok' } })
    } finally {
      await noPostgres.close()
    }
  })

  it('GET /readyz answers 503 naming Redis when Redis alone is down: nothing can be accepted', async () => {
    const noRedis = await buildTestApp(world, { REDIS_URL: 'redis://127.0.0.1:1' })
    try {
      expectError(
        await noRedis.inject({ method: 'GET', url: '/readyz' }),
        503,
        'SERVICE_UNAVAILABLE',
        /: Redis unreachable/,
      )
    } finally {
      await noRedis.close()
    }
  })

  it('GET /readyz answers 503 with the error body naming what is down', async () => {
    const broken = await buildTestApp(world, {
      REDIS_URL: 'redis://127.0.0.1:1',
      DATABASE_URL: world.databaseUrl.replace(/:\d+\//, ':1/'),
    })
    try {
      const res = await broken.inject({ method: 'GET', url: '/readyz' })
      expectError(res, 503, 'SERVICE_UNAVAILABLE', /Postgres and Redis unreachable/)
      // Liveness is about the process only.
      expect((await broken.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200)
    } finally {
      await broken.close()
    }
  })
})

describe('OpenAPI', () => {
  it('documents every route from the same schemas at /docs/json', async () => {
    const res = await app.inject({ method: 'GET', url: '/docs/json' })
    expect(res.statusCode).toBe(200)
    const doc = res.json()
    expect(doc.openapi).toMatch(/^3\./)
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining([
        '/api/api-keys/request',
        '/api/api-keys/me',
        '/api/admin/api-keys',
        '/api/admin/api-keys/{id}',
        '/api/admin/api-keys/{id}/approve',
        '/api/admin/api-keys/{id}/reject',
        '/api/admin/api-keys/{id}/revoke',
      ]),
    )
    const request = doc.paths['/api/api-keys/request'].post
    expect(request.requestBody.content['application/json'].schema.required).toEqual([
      'clientName',
      'email',
      'scopes',
    ])
    expect(Object.keys(request.responses)).toEqual(expect.arrayContaining(['201', '400', '429']))
    expect(doc.components.securitySchemes.apiKey).toMatchObject({
      type: 'apiKey',
      in: 'header',
      name: 'x-api-key',
    })
  })

  it('serves Swagger UI at /docs', async () => {
    const res = await app.inject({ method: 'GET', url: '/docs/' })
    expect(res.statusCode).toBe(200)
    expect(res.headers['content-type']).toMatch(/text\/html/)
    expect(res.body).toMatch(/swagger/i)
  })
})

describe('every answer is nosniff', () => {
  it('success, refusal, unknown route, bad JSON and an accepted send all carry X-Content-Type-Options: nosniff', async () => {
    const key = await activeKey(app, { scopes: ['send:free-text'] })
    const answers = [
      await app.inject({ method: 'GET', url: '/healthz' }),
      await app.inject({ method: 'GET', url: '/api/admin/api-keys' }),
      await app.inject({ method: 'GET', url: '/no/such/route' }),
      await app.inject({
        method: 'POST',
        url: '/api/api-keys/request',
        headers: { 'content-type': 'application/json' },
        payload: '{"clientName":',
      }),
      await send(app, 'send-text', key.key, { phone: '+5511911112222', text: 'hi' }),
    ]
    expect(answers.map((res) => res.statusCode)).toEqual([200, 401, 404, 400, 202])
    for (const res of answers) expect(res.headers['x-content-type-options'], res.body).toBe('nosniff')
  })
})
