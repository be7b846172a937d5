import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import type { AdminSession, MessageView, PortalSession } from '@dispatch/contracts'
import type { LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  ADMIN,
  activeKey,
  buildTestApp,
  createWorld,
  decide,
  expectError,
  SEND_SCOPES,
  send,
  type TestApp,
  type TestWorld,
} from '../helpers.ts'

/**
 * The console's and the portal's sessions, tried from outside as an attacker would: no answer
 * without a session, no change without its CSRF token, a portal cookie worth nothing on the admin
 * side, another key's data out of reach, and the session gone at sign-out and at expiry.
 */

const TTL_MS = 3_600_000
let world: TestWorld
let app: TestApp
let dist: string
/** The API's clock runs this far ahead of the real one (a session's expiry, without waiting). */
let ahead = 0

beforeAll(async () => {
  world = await createWorld()
  // A stand-in for the built console: the server's part (files, fallbacks, headers) is tested here.
  dist = mkdtempSync(path.join(tmpdir(), 'console-dist-'))
  mkdirSync(path.join(dist, 'assets'))
  writeFileSync(
    path.join(dist, 'index.html'),
    '<!doctype html><title>Dispatch</title><script type="module" src="/console/assets/app-1a2b.js"></script>',
  )
  writeFileSync(path.join(dist, 'assets', 'app-1a2b.js'), 'console.log("app")')
  app = await buildTestApp(
    world,
    {
      CONSOLE_SESSION_TTL_MS: String(TTL_MS),
      CONSOLE_DIST_DIR: dist,
      ADMIN_AUTH_FAILURE_MAX: '5',
      ADMIN_AUTH_FAILURE_WINDOW_MS: '60000',
    },
    undefined,
    { clock: () => new Date(Date.now() + ahead) },
  )
})
afterAll(async () => {
  await app?.close()
  await world?.close()
  rmSync(dist, { recursive: true, force: true })
})

/** The cookie a sign-in set, as a browser would send it back, and its attributes. */
function cookieOf(res: LightMyRequestResponse, name: string) {
  const header = ([] as string[])
    .concat(res.headers['set-cookie'] ?? [])
    .find((c) => c.startsWith(`${name}=`))
  if (!header) throw new Error(`no ${name} cookie in ${JSON.stringify(res.headers['set-cookie'])}`)
  const [pair, ...attributes] = header.split(/;\s*/)
  return { pair: pair as string, attributes: attributes.map((a) => a.toLowerCase()) }
}

async function adminSession(name = 'ana', token = ADMIN.ana) {
  const res = await app.inject({ method: 'POST', url: '/api/admin/session', payload: { name, token } })
  expect(res.statusCode, res.body).toBe(201)
  return { cookie: cookieOf(res, 'dispatch_console').pair, session: res.json<AdminSession>() }
}

async function portalSession(key: string) {
  const res = await app.inject({ method: 'POST', url: '/api/third-party/session', payload: { apiKey: key } })
  expect(res.statusCode, res.body).toBe(201)
  return { cookie: cookieOf(res, 'dispatch_portal').pair, session: res.json<PortalSession>() }
}

describe('console sessions (admins)', () => {
  it('exchanges a name and token for an HttpOnly, SameSite=Strict cookie; the token is not in it', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/api/admin/session',
      payload: { name: 'ana', token: ADMIN.ana },
    })
    expect(res.statusCode, res.body).toBe(201)
    const body = res.json<AdminSession>()
    expect(body).toMatchObject({ kind: 'admin', actor: 'ana', csrfToken: expect.any(String) })
    expect(Date.parse(body.expiresAt) - Date.now()).toBeGreaterThan(TTL_MS - 60_000)
    const cookie = cookieOf(res, 'dispatch_console')
    expect(cookie.attributes).toEqual(
      expect.arrayContaining(['httponly', 'samesite=strict', 'path=/', `max-age=${TTL_MS / 1000}`]),
    )
    // Not production: no Secure (the development server is plain HTTP).
    expect(cookie.attributes).not.toContain('secure')
    expect(res.body).not.toContain(ADMIN.ana)
    expect(cookie.pair).not.toContain(ADMIN.ana)
    // Only a digest of the session id is kept in Redis; the admin's token is nowhere in the answer.
    expect(app.logs.text()).not.toContain(ADMIN.ana)
  })

  it('refuses a wrong token, and a right token under another admin’s name', async () => {
    for (const payload of [
      { name: 'ana', token: 'not-the-token-at-all-0000' },
      { name: 'ops', token: ADMIN.ana },
      { name: 'nobody', token: ADMIN.ana },
    ]) {
      const res = await app.inject({ method: 'POST', url: '/api/admin/session', payload })
      expectError(res, 401, 'ADMIN_AUTH_REQUIRED')
      expect(res.headers['set-cookie']).toBeUndefined()
    }
  })

  it('answers admin routes with the cookie, none without a session, and refuses a change without its CSRF token', async () => {
    const { cookie, session } = await adminSession()
    const listed = await app.inject({ method: 'GET', url: '/api/admin/api-keys', headers: { cookie } })
    expect(listed.statusCode, listed.body).toBe(200)

    for (const url of [
      '/api/admin/api-keys',
      '/api/admin/overview',
      '/api/admin/queues',
      '/api/admin/session',
    ]) {
      expectError(await app.inject({ method: 'GET', url }), 401, 'ADMIN_AUTH_REQUIRED')
      // A cookie we never issued is no session either.
      expectError(
        await app.inject({ method: 'GET', url, headers: { cookie: `dispatch_console=${'A'.repeat(43)}` } }),
        401,
        'ADMIN_AUTH_REQUIRED',
      )
    }

    const pause = (headers: Record<string, string>) =>
      app.inject({
        method: 'POST',
        url: '/api/admin/queues/email/pause',
        headers,
        payload: { reason: 'drill' },
      })
    expectError(await pause({ cookie }), 403, 'CSRF_TOKEN_INVALID')
    expectError(await pause({ cookie, 'x-csrf-token': 'guessed' }), 403, 'CSRF_TOKEN_INVALID')
    // Another session's token is not this one's.
    const other = await adminSession('ops', ADMIN.ops)
    expectError(await pause({ cookie, 'x-csrf-token': other.session.csrfToken }), 403, 'CSRF_TOKEN_INVALID')
    const [row] = await world.sql`select count(*)::int as count from queue_controls where paused`
    expect(row?.count).toBe(0)

    const paused = await pause({ cookie, 'x-csrf-token': session.csrfToken })
    expect(paused.statusCode, paused.body).toBe(200)
    // Audited under the admin's name, as through the API.
    const [control] = await world.sql`select actor, reason from queue_controls where name = 'email'`
    expect(control).toEqual({ actor: 'ana', reason: 'drill' })
    const resumed = await app.inject({
      method: 'POST',
      url: '/api/admin/queues/email/resume',
      headers: { cookie, 'x-csrf-token': session.csrfToken },
    })
    expect(resumed.statusCode, resumed.body).toBe(200)
  })

  it('reads the session back (its CSRF token after a reload), and ends it at sign-out', async () => {
    const { cookie, session } = await adminSession()
    const read = await app.inject({ method: 'GET', url: '/api/admin/session', headers: { cookie } })
    expect(read.json()).toEqual(session)

    expectError(
      await app.inject({ method: 'DELETE', url: '/api/admin/session', headers: { cookie } }),
      403,
      'CSRF_TOKEN_INVALID',
    )
    const out = await app.inject({
      method: 'DELETE',
      url: '/api/admin/session',
      headers: { cookie, 'x-csrf-token': session.csrfToken },
    })
    expect(out.statusCode, out.body).toBe(204)
    expect(
      cookieOf(out, 'dispatch_console').attributes.some((a) => a.startsWith('expires=thu, 01 jan 1970')),
    ).toBe(true)
    // The old cookie, replayed, is worth nothing now.
    expectError(
      await app.inject({ method: 'GET', url: '/api/admin/api-keys', headers: { cookie } }),
      401,
      'ADMIN_AUTH_REQUIRED',
      /session has ended/,
    )
  })

  it('ends a session at its lifetime', async () => {
    const { cookie } = await adminSession()
    expect(
      (await app.inject({ method: 'GET', url: '/api/admin/session', headers: { cookie } })).statusCode,
    ).toBe(200)
    ahead = TTL_MS + 1000
    try {
      expectError(
        await app.inject({ method: 'GET', url: '/api/admin/api-keys', headers: { cookie } }),
        401,
        'ADMIN_AUTH_REQUIRED',
      )
    } finally {
      ahead = 0
    }
  })

  it('shares the admin brute-force limit with the admin API', async () => {
    // A fresh address, so the other tests' failures do not count.
    const from = { remoteAddress: '203.0.113.77' }
    for (let i = 0; i < 5; i++) {
      const res = await app.inject({
        method: 'POST',
        url: '/api/admin/session',
        payload: { name: 'ana', token: `wrong-${i}-xxxxxxxxxxxx` },
        ...from,
      })
      expectError(res, 401, 'ADMIN_AUTH_REQUIRED')
    }
    // Past the limit, even the right token is refused, on the sign-in and on the API alike.
    const blocked = await app.inject({
      method: 'POST',
      url: '/api/admin/session',
      payload: { name: 'ana', token: ADMIN.ana },
      ...from,
    })
    expectError(blocked, 429, 'RATE_LIMITED')
    expect(blocked.headers['retry-after']).toBeDefined()
    expectError(
      await app.inject({
        method: 'GET',
        url: '/api/admin/api-keys',
        headers: { authorization: `Bearer ${ADMIN.ana}` },
        ...from,
      }),
      429,
      'RATE_LIMITED',
    )
  })
})

describe('portal sessions (a key holder)', () => {
  it('exchanges a key for a session that sees only that key’s messages, and never an admin route', async () => {
    const mine = await activeKey(app, { scopes: SEND_SCOPES })
    const theirs = await activeKey(app, { scopes: SEND_SCOPES })
    const { cookie, session } = await portalSession(mine.key)
    expect(session).toMatchObject({ kind: 'portal', keyId: mine.id, actor: mine.id, scopes: SEND_SCOPES })
    expect(JSON.stringify(session)).not.toContain(mine.key)

    const own = (await send(app, 'send-text', mine.key)).json<{ messageId: string }>().messageId
    const other = (await send(app, 'send-text', theirs.key)).json<{ messageId: string }>().messageId
    const read = (id: string, headers: Record<string, string>) =>
      app.inject({ method: 'GET', url: `/api/third-party/messages/${id}`, headers })
    expect((await read(own, { cookie })).json<MessageView>().messageId).toBe(own)
    // Changing the id reaches nothing: another key's message is not found, as through the API.
    expectError(await read(other, { cookie }), 404, 'NOT_FOUND')
    const timeline = await app.inject({
      method: 'GET',
      url: `/api/third-party/messages/${other}/timeline`,
      headers: { cookie },
    })
    expectError(timeline, 404, 'NOT_FOUND')
    const me = await app.inject({ method: 'GET', url: '/api/api-keys/me', headers: { cookie } })
    expect(me.json()).toMatchObject({ id: mine.id })

    // The portal's cookie on the admin side: refused, under its own name or the console's.
    expectError(
      await app.inject({ method: 'GET', url: '/api/admin/api-keys', headers: { cookie } }),
      401,
      'ADMIN_AUTH_REQUIRED',
    )
    const forged = cookie.replace('dispatch_portal=', 'dispatch_console=')
    expectError(
      await app.inject({ method: 'GET', url: '/api/admin/api-keys', headers: { cookie: forged } }),
      401,
      'ADMIN_AUTH_REQUIRED',
    )
    // …and the console's on the key side.
    const admin = await adminSession()
    expectError(await read(own, { cookie: admin.cookie }), 401, 'API_KEY_MISSING')
    expectError(
      await read(own, { cookie: admin.cookie.replace('dispatch_console=', 'dispatch_portal=') }),
      401,
      'API_KEY_INVALID',
    )
  })

  it('sends only with the CSRF token, and stops working when the key is revoked', async () => {
    const key = await activeKey(app, { scopes: SEND_SCOPES })
    const { cookie, session } = await portalSession(key.key)
    const sendText = (headers: Record<string, string>) =>
      app.inject({
        method: 'POST',
        url: '/api/third-party/messages/send-text',
        headers,
        payload: { phone: '+5511987654321', text: 'from the portal' },
      })
    expectError(await sendText({ cookie }), 403, 'CSRF_TOKEN_INVALID')
    const accepted = await sendText({ cookie, 'x-csrf-token': session.csrfToken })
    expect(accepted.statusCode, accepted.body).toBe(202)

    expect((await decide(app, key.id, 'revoke', { reason: 'test' })).statusCode).toBe(200)
    expectError(
      await app.inject({ method: 'GET', url: '/api/api-keys/me', headers: { cookie } }),
      403,
      'API_KEY_NOT_ACTIVE',
    )
  })

  it('refuses a key that is not valid or not approved, and ends at sign-out', async () => {
    expectError(
      await app.inject({
        method: 'POST',
        url: '/api/third-party/session',
        payload: { apiKey: 'mdk_test_nope' },
      }),
      401,
      'API_KEY_INVALID',
    )
    const { cookie, session } = await portalSession((await activeKey(app)).key)
    const out = await app.inject({
      method: 'DELETE',
      url: '/api/third-party/session',
      headers: { cookie, 'x-csrf-token': session.csrfToken },
    })
    expect(out.statusCode, out.body).toBe(204)
    expectError(
      await app.inject({ method: 'GET', url: '/api/api-keys/me', headers: { cookie } }),
      401,
      'API_KEY_INVALID',
    )
  })
})

describe('the console’s pages', () => {
  it('serves the app with a strict Content-Security-Policy, assets cached, any sub-path falling back to the app', async () => {
    for (const url of ['/console', '/console/', '/console/messages/123', '/portal', '/portal/webhooks']) {
      const res = await app.inject({ method: 'GET', url })
      expect(res.statusCode, url).toBe(200)
      expect(res.headers['content-type']).toMatch(/^text\/html/)
      expect(res.body).toContain('<title>Dispatch</title>')
      const csp = String(res.headers['content-security-policy'])
      expect(csp).toContain("script-src 'self'")
      expect(csp).toContain("frame-ancestors 'none'")
      expect(csp).not.toContain('unsafe-inline')
      expect(res.headers['x-content-type-options']).toBe('nosniff')
      expect(res.headers['cache-control']).toBe('no-store')
    }
    const asset = await app.inject({ method: 'GET', url: '/console/assets/app-1a2b.js' })
    expect(asset.statusCode).toBe(200)
    expect(asset.headers['content-type']).toMatch(/javascript/)
    expect(asset.headers['cache-control']).toContain('immutable')
    // No path escapes the build's folder.
    const outside = await app.inject({ method: 'GET', url: '/console/..%2f..%2fpackage.json' })
    expect(outside.body).not.toContain('"dependencies"')
    // The API's own answers do not carry the pages' headers (nothing added to the send path).
    const health = await app.inject({ method: 'GET', url: '/healthz' })
    expect(health.headers['content-security-policy']).toBeUndefined()
  })
})
