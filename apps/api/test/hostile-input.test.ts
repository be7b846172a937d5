import type { AddressInfo } from 'node:net'
import { ErrorBody, Scopes } from '@dispatch/contracts'
import { rawRequest, signWebhook } from '@dispatch/testing'
import Value from 'typebox/value'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  ADMIN,
  activeKey,
  asAdmin,
  buildTestApp,
  createWorld,
  expectError,
  keyRequest,
  storedMessages,
  type TestApp,
  type TestWorld,
  validSends,
} from './helpers.ts'

/**
 * Every route, every string it takes, as an attacker would send them: the routes and their fields
 * come from the API's own OpenAPI document, so a route added later is covered without editing this.
 */

const APP_SECRET = 'hostile-app-secret-0123'
let world: TestWorld
let app: TestApp
let apiKey: string
beforeAll(async () => {
  world = await createWorld()
  app = await buildTestApp(world, {
    WHATSAPP_VERIFY_TOKEN: 'hostile-verify-token',
    WHATSAPP_APP_SECRET: APP_SECRET,
  })
  apiKey = (await activeKey(app, { tenantId: 'hostile', scopes: Object.values(Scopes) })).key
})
afterAll(async () => {
  await app?.close()
  await world?.close()
})

type Schema = Record<string, unknown> & {
  type?: string | string[]
  properties?: Record<string, Schema>
  additionalProperties?: boolean | Schema
  items?: Schema
  anyOf?: Schema[]
  oneOf?: Schema[]
  allOf?: Schema[]
}
interface Operation {
  parameters?: { in: string; name: string }[]
  requestBody?: { content: Record<string, { schema: Schema }> }
  security?: Record<string, unknown>[]
}
type Path = (string | number)[]

/** The paths to every string a body schema takes, at any depth (one item of each array, one entry of each map). */
function stringFields(schema: Schema | undefined, path: Path = []): Path[] {
  if (!schema) return []
  const variants = schema.anyOf ?? schema.oneOf ?? schema.allOf
  if (variants) return variants.flatMap((variant) => stringFields(variant, path))
  const types = [schema.type].flat()
  if (types.includes('string')) return [path]
  if (types.includes('array')) return stringFields(schema.items, [...path, 0])
  const fields = Object.entries(schema.properties ?? {}).flatMap(([name, child]) =>
    stringFields(child, [...path, name]),
  )
  if (typeof schema.additionalProperties === 'object') {
    fields.push(...stringFields(schema.additionalProperties, [...path, 'entry']))
  }
  return fields
}

/** `body.headerVariables[0].value`: how the error message names a field. */
const describePath = (root: string, path: Path) =>
  path.reduce<string>((acc, part) => (typeof part === 'number' ? `${acc}[${part}]` : `${acc}.${part}`), root)

/** A copy of `base` with `value` at `path`, making the objects and arrays on the way. */
function withValueAt(base: unknown, path: Path, value: unknown): unknown {
  const [head, ...rest] = path
  if (head === undefined) return value
  const copy = (
    Array.isArray(base)
      ? [...base]
      : base && typeof base === 'object'
        ? { ...base }
        : typeof head === 'number'
          ? []
          : {}
  ) as Record<string | number, unknown>
  copy[head] = withValueAt(copy[head], rest, value)
  return copy
}

/**
 * Bodies that are valid but for the one bad string, where this test knows one: a send that holds a
 * NUL must be refused, not accepted and then failed. Other routes get only the bad field.
 */
const VALID_BODIES: Record<string, unknown> = {
  ...Object.fromEntries(
    Object.entries(validSends).flatMap(([path, body]) => [
      [`POST /api/third-party/messages/${path}`, body],
      [`POST /third-party/messages/${path}`, body],
    ]),
  ),
  'POST /api/api-keys/request': keyRequest(),
}

/** The signed platform webhook stores what the platform sends, sanitized (its own tests), rather than refusing it. */
const PLATFORM_INPUT = new Set(['POST /api/webhooks/whatsapp'])

const BAD_STRINGS = { NUL: 'a\u0000b', 'a lone high surrogate': 'a\ud800b', 'a lone low surrogate': '\udfff' }
const PLACEHOLDER_ID = '00000000-0000-4000-8000-000000000000'

interface Case {
  name: string
  method: string
  url: string
  headers: Record<string, string>
  payload?: string
  field: string
}

function casesFor(route: string, method: string, operation: Operation): Case[] {
  const security = JSON.stringify(operation.security ?? [])
  const headers: Record<string, string> = security.includes('adminToken')
    ? asAdmin()
    : security.includes('apiKey')
      ? { 'x-api-key': apiKey }
      : {}
  const params = operation.parameters ?? []
  const pathParams = params.filter((p) => p.in === 'path').map((p) => p.name)
  const urlWith = (badParam?: string) =>
    route.replace(/\{([^}]+)\}/g, (_, name: string) => (name === badParam ? 'a%00b' : PLACEHOLDER_ID))
  const cases: Case[] = []
  const jsonHeaders = { ...headers, 'content-type': 'application/json' }
  const bodySchema = operation.requestBody?.content['application/json']?.schema
  // Whatever the route takes, a valid-looking empty body keeps the request well formed.
  const filler = bodySchema ? JSON.stringify({}) : undefined

  for (const name of pathParams) {
    cases.push({
      name: `${method} ${route} path ${name}`,
      method,
      url: urlWith(name),
      headers: filler ? jsonHeaders : headers,
      ...(filler ? { payload: filler } : {}),
      field: `params.${name}`,
    })
  }
  for (const { name } of params.filter((p) => p.in === 'query')) {
    cases.push({
      name: `${method} ${route} query ${name}`,
      method,
      url: `${urlWith()}?${encodeURIComponent(name)}=a%00b`,
      headers: filler ? jsonHeaders : headers,
      ...(filler ? { payload: filler } : {}),
      field: `querystring.${name}`,
    })
  }
  const validBody = VALID_BODIES[`${method} ${route}`] ?? {}
  for (const path of stringFields(bodySchema)) {
    for (const [what, bad] of Object.entries(BAD_STRINGS)) {
      cases.push({
        name: `${method} ${route} ${describePath('body', path)} with ${what}`,
        method,
        url: urlWith(),
        headers: jsonHeaders,
        // JSON.stringify writes a NUL and a lone surrogate as \u escapes: the bytes an attacker sends.
        payload: JSON.stringify(withValueAt(validBody, path, bad)),
        field: describePath('body', path),
      })
    }
  }
  if (bodySchema?.type === 'object') {
    for (const [what, bad] of Object.entries(BAD_STRINGS)) {
      cases.push({
        name: `${method} ${route} a property name with ${what}`,
        method,
        url: urlWith(),
        headers: jsonHeaders,
        payload: JSON.stringify({ ...(validBody as object), [bad]: 'x' }),
        field: 'body has a property name',
      })
    }
  }
  return cases
}

async function tableCounts() {
  const [row] = await world.sql<{ counts: string }[]>`
    select concat_ws(',', (select count(*) from api_keys), (select count(*) from api_key_audit_log),
      (select count(*) from outbox), (select count(*) from messages), (select count(*) from orders),
      (select count(*) from channels), (select count(*) from projects), (select count(*) from products))
      as counts`
  return row?.counts
}

describe('NUL bytes and lone surrogates', () => {
  it('are refused with 400 VALIDATION_ERROR naming the field, on every route and every string, and nothing is stored or queued', async () => {
    const document = app.swagger() as { paths: Record<string, Record<string, Operation>> }
    const cases = Object.entries(document.paths).flatMap(([route, operations]) =>
      Object.entries(operations)
        .filter(([method]) => !PLATFORM_INPUT.has(`${method.toUpperCase()} ${route}`))
        .flatMap(([method, operation]) => casesFor(route, method.toUpperCase(), operation)),
    )
    // The generator found the routes that matter: a send's nested fields, the orders' filters, an admin reason.
    const names = cases.map((c) => c.name)
    for (const expected of [
      'POST /api/third-party/messages/send-image body.image.mediaId with NUL',
      'POST /api/third-party/messages/send-template body.variables.entry with a lone high surrogate',
      'GET /api/third-party/orders query tenantId',
      'POST /api/admin/api-keys/{id}/reject body.reason with a lone low surrogate',
      'POST /api/api-keys/request body.clientName with NUL',
    ]) {
      expect(names).toContain(expected)
    }

    const before = await tableCounts()
    const failures: string[] = []
    for (const c of cases) {
      const res = await app.inject({
        method: c.method as 'GET',
        url: c.url,
        headers: c.headers,
        ...(c.payload !== undefined ? { payload: c.payload } : {}),
      })
      const body = res.json()
      const ok =
        res.statusCode === 400 &&
        Value.Check(ErrorBody, body) &&
        body.errorCode === 'VALIDATION_ERROR' &&
        body.message.startsWith(c.field)
      if (!ok) failures.push(`${c.name}: ${res.statusCode} ${res.body}`)
    }
    expect(failures).toEqual([])
    expect(cases.length).toBeGreaterThan(150)

    expect(await tableCounts()).toBe(before)
    const queue = storedMessages(world)
    try {
      expect(await queue.count()).toBe(0)
    } finally {
      await queue.close()
    }
    // Every route times every string field: 15 s alone, twice that beside the rest of the suite.
  }, 90_000)

  it('in a signed platform webhook are stored safely: never a 500', async () => {
    const body = JSON.stringify({
      object: 'whatsapp_business_account',
      entry: [
        {
          id: 'a\u0000b',
          changes: [
            {
              field: 'messages',
              value: {
                statuses: [
                  {
                    id: 'wamid.\ud800',
                    status: 'failed',
                    timestamp: String(Math.floor(Date.now() / 1000)),
                    errors: [{ code: 131026, title: 'bad \u0000 title', message: '\udfff' }],
                  },
                ],
              },
            },
          ],
        },
      ],
    })
    const res = await app.inject({
      method: 'POST',
      url: '/api/webhooks/whatsapp',
      headers: { 'content-type': 'application/json', 'x-hub-signature-256': signWebhook(body, APP_SECRET) },
      payload: body,
    })
    expect(res.statusCode, res.body).toBe(200)
  })
})

describe('what the HTTP parser refuses, sent over a raw socket', () => {
  let port: number
  beforeAll(async () => {
    await app.listen({ host: '127.0.0.1', port: 0 })
    port = (app.server.address() as AddressInfo).port
  })

  const cases: [string, string, number, string][] = [
    [
      'a Content-Length that is not a number',
      'POST /api/api-keys/request HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: abc\r\n\r\n{}',
      400,
      'VALIDATION_ERROR',
    ],
    [
      'two different Content-Lengths',
      'POST /api/api-keys/request HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}',
      400,
      'VALIDATION_ERROR',
    ],
    [
      'Content-Length beside Transfer-Encoding: chunked',
      'POST /api/api-keys/request HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n{}',
      400,
      'VALIDATION_ERROR',
    ],
    [
      'a NUL in a header',
      'GET /healthz HTTP/1.1\r\nHost: x\r\nX-Note: a\u0000b\r\n\r\n',
      400,
      'VALIDATION_ERROR',
    ],
    [
      'a NUL in the x-api-key header',
      `GET /api/api-keys/me HTTP/1.1\r\nHost: x\r\nx-api-key: mdk_dev_\u0000\r\n\r\n`,
      400,
      'VALIDATION_ERROR',
    ],
    ['an unknown method', 'FOO / HTTP/1.1\r\nHost: x\r\n\r\n', 400, 'VALIDATION_ERROR'],
    [
      'a 20 KB header',
      `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
      431,
      'HEADERS_TOO_LARGE',
    ],
    [
      'CONNECT',
      'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n',
      405,
      'METHOD_NOT_ALLOWED',
    ],
    ['a request line that is not HTTP', 'HELLO\r\n\r\n', 400, 'VALIDATION_ERROR'],
  ]

  it.each(cases)(
    '%s: an answer with the error body, then the connection closes',
    async (_, bytes, status, code) => {
      const res = await rawRequest(port, bytes)
      expect(res.statusCode, res.body).toBe(status)
      expect(res.headers['content-type']).toMatch(/^application\/json/)
      expect(Number(res.headers['content-length'])).toBe(Buffer.byteLength(res.body))
      const body = JSON.parse(res.body)
      expect(Value.Check(ErrorBody, body), res.body).toBe(true)
      expect(body).toMatchObject({ statusCode: status, errorCode: code })
      if (status === 405) expect(res.headers.allow).toContain('POST')
    },
  )

  it('still answers a well-formed request on a new connection after all that', async () => {
    const res = await rawRequest(port, 'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')
    expect(res.statusCode).toBe(200)
    const me = await rawRequest(
      port,
      `GET /api/admin/api-keys?tenantId=a%00b HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ADMIN.ana}\r\nConnection: close\r\n\r\n`,
    )
    expectError(
      { statusCode: me.statusCode, json: () => JSON.parse(me.body), body: me.body } as never,
      400,
      'VALIDATION_ERROR',
      /^querystring\.tenantId/,
    )
  })
})
