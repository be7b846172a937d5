import { ApiKeySelf } from '@dispatch/contracts'
import { startTcpProxy, waitFor } from '@dispatch/testing'
import Value from 'typebox/value'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  activeKey,
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
  app = await buildTestApp(world, {}, (app) => {
    // A route that needs a scope, so the scope check is exercised from outside.
    app.get('/test/needs-send-image', { onRequest: app.requireApiKey('send:image') }, async () => ({
      ok: true,
    }))
  })
})
afterAll(async () => {
  await app.close()
  await world.close()
})

const me = (headers: Record<string, string> = {}, on: TestApp = app) =>
  on.inject({ method: 'GET', url: '/api/api-keys/me', headers })

describe('GET /api/api-keys/me', () => {
  it('returns the calling key: id, client name, scopes, tenant and status', async () => {
    const key = await activeKey(app, { tenantId: 'acme', scopes: ['send:template'] })
    const res = await me({ 'x-api-key': key.key })
    expect(res.statusCode).toBe(200)
    expect(Value.Check(ApiKeySelf, res.json())).toBe(true)
    expect(res.json()).toMatchObject({
      id: key.id,
      clientName: 'Acme Notifications',
      scopes: ['send:template'],
      tenantId: 'acme',
      status: 'approved',
      environment: 'development',
    })
    expect(res.body).not.toContain(key.key)
  })

  it('reads the header case-insensitively (the order spec writes X-API-KEY)', async () => {
    const key = await activeKey(app)
    expect((await me({ 'X-API-KEY': key.key })).statusCode).toBe(200)
  })

  it('refuses a request without a key: 401 API_KEY_MISSING', async () => {
    expectError(await me(), 401, 'API_KEY_MISSING')
    expectError(await me({ 'x-api-key': '' }), 401, 'API_KEY_MISSING')
  })

  it('refuses an unknown key, a mangled key and a key of the other environment: 401 API_KEY_INVALID', async () => {
    const key = await activeKey(app)
    expectError(await me({ 'x-api-key': 'mdk_dev_doesnotexist000000000000000000' }), 401, 'API_KEY_INVALID')
    expectError(await me({ 'x-api-key': `${key.key}x` }), 401, 'API_KEY_INVALID')
    expectError(await me({ 'x-api-key': key.key.replace('mdk_dev_', 'mdk_prod_') }), 401, 'API_KEY_INVALID')
    expectError(await me({ 'x-api-key': "' or 1=1 --" }), 401, 'API_KEY_INVALID')
  })

  it('refuses a development key on a production instance, even though it exists', async () => {
    const key = await activeKey(app)
    const production = await buildTestApp(world, {
      APP_ENV: 'production',
      // Production refuses to start without its own key for the senders' tokens.
      SECRETS_KEY: Buffer.alloc(32, 7).toString('base64'),
    })
    try {
      expectError(await me({ 'x-api-key': key.key }, production), 401, 'API_KEY_INVALID')
    } finally {
      await production.close()
    }
  })

  it('refuses pending, rejected and revoked keys: 403 API_KEY_NOT_ACTIVE naming the status', async () => {
    const pending = await requestKey(app)
    expectError(await me({ 'x-api-key': pending.key }), 403, 'API_KEY_NOT_ACTIVE', /pending/)

    const rejected = await requestKey(app)
    await decide(app, rejected.id, 'reject', { reason: 'unknown company' })
    expectError(await me({ 'x-api-key': rejected.key }), 403, 'API_KEY_NOT_ACTIVE', /rejected/)

    const revoked = await activeKey(app)
    expect((await me({ 'x-api-key': revoked.key })).statusCode).toBe(200)
    await decide(app, revoked.id, 'revoke')
    expectError(await me({ 'x-api-key': revoked.key }), 403, 'API_KEY_NOT_ACTIVE', /revoked/)
  })

  it('accepts a key as soon as it is approved, though its pending state was cached', async () => {
    const key = await requestKey(app)
    expectError(await me({ 'x-api-key': key.key }), 403, 'API_KEY_NOT_ACTIVE')
    await decide(app, key.id, 'approve')
    expect((await me({ 'x-api-key': key.key })).statusCode).toBe(200)
  })
})

describe('scopes', () => {
  it('admits a key with the route scope and refuses one without: 403 INSUFFICIENT_SCOPE', async () => {
    const withScope = await activeKey(app, { scopes: ['send:image'] })
    const without = await activeKey(app, { scopes: ['send:free-text'] })
    const call = (key: string) =>
      app.inject({ method: 'GET', url: '/test/needs-send-image', headers: { 'x-api-key': key } })
    expect((await call(withScope.key)).statusCode).toBe(200)
    expectError(await call(without.key), 403, 'INSUFFICIENT_SCOPE', /send:image/)
  })
})

describe('the key cache', () => {
  it('serves a busy key from memory: it keeps working while Postgres is unreachable', async () => {
    const url = new URL(world.databaseUrl)
    const proxy = await startTcpProxy({ host: url.hostname, port: Number(url.port || 5432) })
    url.host = new URL(proxy.url('postgres')).host
    const behindProxy = await buildTestApp(world, { DATABASE_URL: url.toString() })
    try {
      const key = await activeKey(behindProxy)
      const unseen = await activeKey(app)
      expect((await me({ 'x-api-key': key.key }, behindProxy)).statusCode).toBe(200)

      await proxy.cut()
      for (let i = 0; i < 20; i++)
        expect((await me({ 'x-api-key': key.key }, behindProxy)).statusCode).toBe(200)
      // A key it has never seen needs Postgres: the honest answer is 503, not 500 and not 401.
      const res = await me({ 'x-api-key': unseen.key }, behindProxy)
      expectError(res, 503, 'SERVICE_UNAVAILABLE')
      expect(res.headers['retry-after']).toBe('1')
    } finally {
      await proxy.restore()
      await behindProxy.close()
      await proxy.close()
    }
  })

  it('refuses a revoked key on a second instance sharing the same Redis within 1 second', async () => {
    const second = await buildTestApp(world)
    try {
      const key = await activeKey(app)
      // Both instances have the approved key cached.
      expect((await me({ 'x-api-key': key.key }, app)).statusCode).toBe(200)
      expect((await me({ 'x-api-key': key.key }, second)).statusCode).toBe(200)

      expect((await decide(app, key.id, 'revoke')).statusCode).toBe(200)
      const revokedAt = Date.now()
      await waitFor(async () => (await me({ 'x-api-key': key.key }, second)).statusCode === 403, {
        timeoutMs: 1000,
        intervalMs: 10,
        what: 'the second instance to refuse the revoked key',
      })
      expect(Date.now() - revokedAt).toBeLessThan(1000)
      expectError(await me({ 'x-api-key': key.key }, second), 403, 'API_KEY_NOT_ACTIVE', /revoked/)
    } finally {
      await second.close()
    }
  })
})
