import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import type { AdminSession, MessageView, PortalSession } from '@dispatch/contracts'
import type { LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  ADMIN,
  activeKey,
  asAdmin,
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
const IDLE_MS = 600_000
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
      CONSOLE_SESSION_IDLE_MS: String(IDLE_MS),
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
    // Plain HTTP to loopback (inject's Host is localhost): no Secure, no __Host- (session-cookies.ts).
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

describe('an admin session ends with its admin', () => {
  const adminsGet = (target: TestApp, cookie: string) =>
    target.inject({ method: 'GET', url: '/api/admin/api-keys', headers: { cookie } })

  it('ends when its admin leaves ADMIN_TOKENS, or its token changes, from the next start on', async () => {
    const removed = await adminSession('ops', ADMIN.ops)
    const rotated = await adminSession('ops', ADMIN.ops)
    const stays = await adminSession('ana', ADMIN.ana)
    // The same Redis, restarted with ops removed, then with ops' token rotated.
    const withoutOps = await buildTestApp(world, { ADMIN_TOKENS: `ana=${ADMIN.ana}` })
    const opsRotated = await buildTestApp(world, {
      ADMIN_TOKENS: `ana=${ADMIN.ana},ops=ops-new-token-0123456789abcdef`,
    })
    try {
      expectError(
        await withoutOps.inject({ method: 'GET', url: '/api/admin/api-keys', headers: asAdmin(ADMIN.ops) }),
        401,
        'ADMIN_AUTH_REQUIRED',
      )
      expectError(
        await adminsGet(withoutOps, removed.cookie),
        401,
        'ADMIN_AUTH_REQUIRED',
        /session has ended/,
      )
      expectError(
        await withoutOps.inject({
          method: 'GET',
          url: '/api/admin/session',
          headers: { cookie: removed.cookie },
        }),
        401,
        'ADMIN_AUTH_REQUIRED',
      )
      expectError(await adminsGet(opsRotated, rotated.cookie), 401, 'ADMIN_AUTH_REQUIRED')
      // Ended for good: the instance still configured with ops' old token does not revive them.
      expectError(await adminsGet(app, removed.cookie), 401, 'ADMIN_AUTH_REQUIRED')
      expectError(await adminsGet(app, rotated.cookie), 401, 'ADMIN_AUTH_REQUIRED')
      // Another admin's session is untouched.
      expect((await adminsGet(withoutOps, stays.cookie)).statusCode).toBe(200)
      expect((await adminsGet(opsRotated, stays.cookie)).statusCode).toBe(200)
    } finally {
      await withoutOps.close()
      await opsRotated.close()
    }
  })

  it('ends after CONSOLE_SESSION_IDLE_MS unused; each use keeps it alive until its lifetime', async () => {
    const { cookie } = await adminSession()
    const portal = await portalSession((await activeKey(app)).key)
    const me = () =>
      app.inject({ method: 'GET', url: '/api/api-keys/me', headers: { cookie: portal.cookie } })
    try {
      for (const step of [0.9, 1.8, 2.7]) {
        ahead = step * IDLE_MS
        expect((await adminsGet(app, cookie)).statusCode, `after ${step} idle periods, used`).toBe(200)
        expect((await me()).statusCode).toBe(200)
      }
      ahead = 3.8 * IDLE_MS
      expectError(await adminsGet(app, cookie), 401, 'ADMIN_AUTH_REQUIRED', /session has ended/)
      expectError(await me(), 401, 'API_KEY_INVALID')
    } finally {
      ahead = 0
    }
    // Over for good, whatever the clock says now.
    expectError(await adminsGet(app, cookie), 401, 'ADMIN_AUTH_REQUIRED')
  })

  it('lets an admin end every session of an admin, on every instance, audited', async () => {
    const revoke = (headers: Record<string, string>, payload: Record<string, unknown>) =>
      app.inject({ method: 'POST', url: '/api/admin/sessions/revoke', headers, payload })
    // The other tests' sessions of ops, out of the way.
    expect((await revoke(asAdmin(), { admin: 'ops' })).statusCode).toBe(200)
    const laptop = await adminSession('ops', ADMIN.ops)
    const phone = await adminSession('ops', ADMIN.ops)
    const own = await adminSession('ana', ADMIN.ana)
    const other = await buildTestApp(world)
    try {
      expect((await adminsGet(other, phone.cookie)).statusCode).toBe(200)

      expectError(await revoke({}, { admin: 'ops' }), 401, 'ADMIN_AUTH_REQUIRED')
      expectError(await revoke({ cookie: own.cookie }, { admin: 'ops' }), 403, 'CSRF_TOKEN_INVALID')
      expectError(await revoke(asAdmin(), { admin: '' }), 400, 'VALIDATION_ERROR')
      expectError(await revoke(asAdmin(), { admin: 'ops', extra: 1 }), 400, 'VALIDATION_ERROR')
      expect((await adminsGet(app, laptop.cookie)).statusCode).toBe(200)

      const res = await revoke(
        { cookie: own.cookie, 'x-csrf-token': own.session.csrfToken },
        { admin: 'ops' },
      )
      expect(res.statusCode, res.body).toBe(200)
      expect(res.json()).toEqual({ admin: 'ops', ended: 2 })
      for (const cookie of [laptop.cookie, phone.cookie]) {
        expectError(await adminsGet(app, cookie), 401, 'ADMIN_AUTH_REQUIRED')
        expectError(await adminsGet(other, cookie), 401, 'ADMIN_AUTH_REQUIRED')
      }
      // The acting admin's session and ops' token itself go on.
      expect((await adminsGet(app, own.cookie)).statusCode).toBe(200)
      const byToken = await app.inject({
        method: 'GET',
        url: '/api/admin/api-keys',
        headers: asAdmin(ADMIN.ops),
      })
      expect(byToken.statusCode).toBe(200)
      expect((await revoke(asAdmin(), { admin: 'ops' })).json()).toEqual({ admin: 'ops', ended: 0 })

      const audit = await world.sql`
        select actor, details from admin_audit_log
        where action = 'sessions.revoke' and target_type = 'admin' and target_id = 'ops' order by id`
      expect(audit.slice(-3)).toEqual([
        { actor: 'ana', details: { ended: expect.any(Number) } },
        { actor: 'ana', details: { ended: 2 } },
        { actor: 'ana', details: { ended: 0 } },
      ])
    } finally {
      await other.close()
    }
  })
})

describe('session cookies', () => {
  const signIn = (host: string) =>
    app.inject({
      method: 'POST',
      url: '/api/admin/session',
      headers: { host },
      payload: { name: 'ana', token: ADMIN.ana },
    })

  it('are Secure and named __Host- (Path=/, no Domain) everywhere but plain HTTP on loopback', async () => {
    const res = await signIn('dispatch.example.com')
    expect(res.statusCode, res.body).toBe(201)
    const cookie = cookieOf(res, '__Host-dispatch_console')
    expect(cookie.attributes).toEqual(
      expect.arrayContaining(['secure', 'httponly', 'samesite=strict', 'path=/']),
    )
    expect(cookie.attributes.some((a) => a.startsWith('domain='))).toBe(false)
    const read = (cookieHeader: string, host = 'dispatch.example.com') =>
      app.inject({ method: 'GET', url: '/api/admin/session', headers: { host, cookie: cookieHeader } })
    expect((await read(cookie.pair)).statusCode).toBe(200)
    // The same id under the name a plain-HTTP page could set is not read there…
    const unprefixed = cookie.pair.replace('__Host-', '')
    expectError(await read(unprefixed), 401, 'ADMIN_AUTH_REQUIRED')
    // …and a __Host- cookie is not read on loopback, where the other name is the one.
    expectError(await read(cookie.pair, '127.0.0.1:3000'), 401, 'ADMIN_AUTH_REQUIRED')
    expect((await read(unprefixed, '127.0.0.1:3000')).statusCode).toBe(200)

    for (const host of ['localhost:3000', '127.0.0.1:3000', '[::1]:3000']) {
      const local = await signIn(host)
      const plain = cookieOf(local, 'dispatch_console')
      expect(plain.attributes).not.toContain('secure')
      expect(plain.attributes).toEqual(expect.arrayContaining(['httponly', 'samesite=strict', 'path=/']))
    }
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
    // The session ends with its key: it reads nothing, sends nothing, and is not even read back.
    for (const url of ['/api/api-keys/me', '/api/third-party/session', '/api/third-party/messages']) {
      expectError(await app.inject({ method: 'GET', url, headers: { cookie } }), 403, 'API_KEY_NOT_ACTIVE')
    }
    expectError(await sendText({ cookie, 'x-csrf-token': session.csrfToken }), 403, 'API_KEY_NOT_ACTIVE')
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
