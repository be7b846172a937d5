import { randomUUID } from 'node:crypto'
import { Scopes } from '@dispatch/contracts'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SCOPES_BY_REQUEST } from '../../src/routes/authenticate.ts'
import { type Endpoint, endpointsOf, fillPath } from '../attack-matrix.ts'
import { activeKey, buildTestApp, createWorld, type TestApp, type TestWorld } from '../helpers.ts'

/**
 * Issue 46: every key operation's OpenAPI entry says the scope it needs — `security:
 * [{ apiKey: [scope] }]`, or for a scope the request decides (a message's type), the scopes it may
 * ask for in `x-scopes-by-request` — and the service asks for exactly that one. Checked from the
 * outside: each documented scope is refused without it (403 INSUFFICIENT_SCOPE naming it) and
 * enough with it alone; a key holding every scope the document names is refused nowhere; and
 * those scopes are every scope the service knows (`Scopes`).
 */

let world: TestWorld
let app: TestApp
let keyOperations: Endpoint[]
const ALL = Object.values(Scopes) as string[]

beforeAll(async () => {
  world = await createWorld()
  app = await buildTestApp(world, {
    WHATSAPP_VERIFY_TOKEN: 'scopes-verify-token',
    WHATSAPP_APP_SECRET: 'scopes-app-secret',
    API_KEY_FAILURE_MAX: '100000',
    MESSAGE_RATE_PER_SECOND: '10000',
  })
  keyOperations = endpointsOf(app.swagger() as never).filter((e) => e.audience === 'key')
})
afterAll(async () => {
  await app?.close()
  await world?.close()
})

/** The scopes of the operation's `apiKey` requirement: all of them needed. */
const requiredScopes = (e: Endpoint) => e.operation.security?.find((r) => 'apiKey' in r)?.apiKey ?? []
const byRequest = (e: Endpoint) =>
  (e.operation as Record<string, unknown>)[SCOPES_BY_REQUEST] as string[] | undefined

/** The operation's URL with made-up values: no row is found, nothing is changed. */
const urlOf = (e: Endpoint) =>
  fillPath(
    e.path,
    Object.fromEntries(
      e.pathParams.map((name) => [name, name === 'phone' ? '+5511900000000' : randomUUID()]),
    ),
  )

async function call(e: Endpoint, key: string) {
  const json = 'application/json' in (e.operation.requestBody?.content ?? {})
  return app.inject({
    method: e.method as 'GET',
    url: urlOf(e),
    headers: { 'x-api-key': key },
    ...(json ? { payload: {} } : {}),
  })
}

let keys = 0
const keyWith = async (scopes: string[]) =>
  (await activeKey(app, { scopes, tenantId: 'scoped', email: `scopes-${++keys}@scopes.test` })).key

describe('the scope each operation documents (issue 46)', () => {
  it('documents a scope, or the scopes the request decides among, for every key operation', () => {
    expect(keyOperations.length).toBeGreaterThan(40)
    for (const e of keyOperations) {
      const portal = e.operation.security?.find((r) => 'portalSession' in r)?.portalSession
      // The portal session acts with its key's scopes: the same requirement.
      expect(portal, e.name).toEqual(requiredScopes(e))
      const fixed = requiredScopes(e)
      const decided = byRequest(e)
      expect(fixed.length <= 1, `${e.name} names more than one scope`).toBe(true)
      if (decided) {
        expect(fixed, `${e.name} documents both a scope and scopes by request`).toEqual([])
        expect(decided.length, e.name).toBeGreaterThan(0)
      }
      for (const scope of [...fixed, ...(decided ?? [])]) expect(ALL, `${e.name}: ${scope}`).toContain(scope)
    }
  })

  it('names every scope the service enforces, and no other', () => {
    const documented = new Set(keyOperations.flatMap((e) => [...requiredScopes(e), ...(byRequest(e) ?? [])]))
    expect([...documented].sort()).toEqual([...ALL].sort())
  })

  it('refuses each documented scope when the key lacks it, and takes the key that holds it alone', async () => {
    const byScope = new Map<string, Endpoint[]>()
    for (const e of keyOperations) {
      const [scope] = requiredScopes(e)
      if (scope) byScope.set(scope, [...(byScope.get(scope) ?? []), e])
    }
    const problems: string[] = []
    for (const [scope, operations] of byScope) {
      const without = await keyWith(ALL.filter((s) => s !== scope))
      const alone = await keyWith([scope])
      for (const e of operations) {
        const refused = await call(e, without)
        if (refused.statusCode !== 403 || refused.json().errorCode !== 'INSUFFICIENT_SCOPE') {
          problems.push(`${e.name} without ${scope}: ${refused.statusCode} ${refused.body}`)
        } else if (!refused.json().message.includes(`"${scope}"`)) {
          problems.push(`${e.name} without ${scope} names another scope: ${refused.body}`)
        }
        const taken = await call(e, alone)
        if (taken.statusCode === 403 && taken.json().errorCode === 'INSUFFICIENT_SCOPE') {
          problems.push(`${e.name} with ${scope} alone: ${taken.body}`)
        }
      }
    }
    expect(problems, problems.join('\n')).toEqual([])
    expect(byScope.size).toBeGreaterThan(15)
  }, 120_000)

  it('refuses no operation to a key holding every scope the document names', async () => {
    const documented = [
      ...new Set(keyOperations.flatMap((e) => [...requiredScopes(e), ...(byRequest(e) ?? [])])),
    ]
    const key = await keyWith(documented)
    const refused: string[] = []
    for (const e of keyOperations) {
      const res = await call(e, key)
      if (res.statusCode === 403 && res.json().errorCode === 'INSUFFICIENT_SCOPE')
        refused.push(`${e.name}: ${res.body}`)
      expect(res.statusCode, `${e.name}: ${res.body}`).toBeLessThan(500)
    }
    expect(refused, refused.join('\n')).toEqual([])
  }, 60_000)
})
