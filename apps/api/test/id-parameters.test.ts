import { randomUUID } from 'node:crypto'
import { STATUS_CODES } from 'node:http'
import { ErrorBody, Scopes } from '@dispatch/contracts'
import { startWebhookReceiver, type WebhookReceiver } from '@dispatch/testing'
import type { LightMyRequestResponse } from 'fastify'
import Value from 'typebox/value'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Endpoint, endpointsOf, fillPath, type Parameter } from './attack-matrix.ts'
import { acmeRecord, createEverything, inject } from './attack-matrix-victim.ts'
import { activeKey, asAdmin, buildTestApp, createWorld, type TestApp, type TestWorld } from './helpers.ts'

/**
 * Issue 46: one rule for every id in a path. Every operation of the OpenAPI document with a path
 * parameter (so a new route is walked without anyone listing it) is called with the spellings of
 * an id that are not ours — `urn:uuid:…`, `{…}`, no hyphens, junk of an id's length, an unknown
 * id, an upper-case unknown id, and (for a key) another tenant's id. A parameter the document
 * declares an id of ours (`format: uuid`, `PathId`) answers each with 404 NOT_FOUND in the error
 * body, as an unknown id does; any other parameter (a sender's name, a phone, Meta's media id)
 * answers a 4xx in the error body. None answers 5xx, nor 400 for one route and 404 for another.
 * Upper-case hex is the same id (RFC 9562): it answers what the lower-case id answers.
 */

/**
 * Path parameters named like ids that are not ids of ours, and why: a new `…id` parameter is an id
 * of ours (`PathId`, judged by the one rule) unless it is here.
 */
const NOT_OUR_IDS: Record<string, string> = {
  'GET /api/admin/senders/{id}': "a sender's name (`default`, or one an admin chose), not a UUID",
  'PATCH /api/admin/senders/{id}': "a sender's name",
  'DELETE /api/admin/senders/{id}': "a sender's name",
  'POST /api/admin/senders/{id}/templates/sync': "a sender's name",
  'GET /api/admin/senders/{id}/templates': "a sender's name",
  'POST /api/third-party/messages/{messageId}/read': "a reply's id, or its wamid (Meta's id)",
  'GET /api/third-party/media/{mediaId}/content': "Meta's media id, or an upload's",
  'POST /api/third-party/webhook-endpoints/{id}/events/{eventId}/retry': "{eventId}: an event's `msg_…` id",
  'GET /api/third-party/webhook-endpoints/{id}/events/{eventId}': "{eventId}: an event's `msg_…` id",
  'GET /api/third-party/suppressions/{idOrRecipient}': 'an entry id, or a recipient (phone or userId)',
}

let world: TestWorld
let app: TestApp
let receiver: WebhookReceiver
let endpoints: Endpoint[]
/** Evil's own ids (an admin's: any), by the parameter (or the resource before `{id}`) they fill. */
let ownIds: Record<string, string[]>
/** Acme's ids, aimed at by evil's key. */
let acmeIds: Record<string, string[]>
let evilKey: string

beforeAll(async () => {
  world = await createWorld()
  receiver = await startWebhookReceiver()
  app = await buildTestApp(world, {
    WHATSAPP_VERIFY_TOKEN: 'ids-verify-token',
    WHATSAPP_APP_SECRET: 'ids-app-secret',
    WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    API_KEY_FAILURE_MAX: '100000',
    ADMIN_AUTH_FAILURE_MAX: '100000',
    MESSAGE_RATE_PER_SECOND: '10000',
  })
  endpoints = endpointsOf(app.swagger() as never).filter((e) => e.pathParams.length > 0)
  const scopes = Object.values(Scopes)
  const acme = await activeKey(app, { tenantId: 'acme', scopes, clientName: 'Acme', email: 'ops@acme.test' })
  const evil = await activeKey(app, { tenantId: 'evil', scopes, clientName: 'Evil', email: 'ops@evil.test' })
  evilKey = evil.key
  // No worker runs: an event id is made up (its format is `msg_` and hex), and nothing is sent.
  const event = `msg_${'0'.repeat(32)}`
  acmeIds = acmeRecord(await createEverything(app, receiver, acme.key, 'acme'), event, acme.id).ids
  ownIds = acmeRecord(await createEverything(app, receiver, evil.key, 'evil'), event, evil.id).ids
}, 60_000)

afterAll(async () => {
  await app?.close()
  await receiver?.close()
  await world?.close()
})

const isOurId = (e: Endpoint, name: string) => {
  const parameter = (e.operation.parameters ?? []).find(
    (p): p is Parameter & { schema?: { format?: string } } =>
      'name' in p && p.name === name && p.in === 'path',
  )
  return parameter?.schema?.format === 'uuid'
}

/** The values `{name}` takes in `ids`: `{id}` those of the resource it follows. */
function valuesFor(e: Endpoint, name: string, ids: Record<string, string[]>): string[] {
  const resource = ['id', 'idOrRecipient'].includes(name)
    ? (e.path.split(`/{${name}}`)[0]?.split('/').pop() as string)
    : name
  const values = ids[resource]
  if (!values?.length) throw new Error(`no id for {${name}} in ${e.name}: add one to acmeRecord's ids`)
  return values
}

const credentialOf = (e: Endpoint): Record<string, string> =>
  e.audience === 'admin' ? asAdmin() : { 'x-api-key': evilKey }

/**
 * A valid body for the operations that require one: a malformed id is judged before the body, but
 * a well-formed one (unknown, another tenant's) reaches the body's validation first, and its 404
 * must not hide behind a 400. Others get `{}`; a new one that needs more fails naming `body`.
 */
const BODIES: Record<string, object> = {
  'PATCH /api/admin/api-keys/{id}': { transactional: false },
  'POST /api/admin/api-keys/{id}/reject': { reason: 'an id of the wrong form' },
  'DELETE /api/admin/suppressions/{id}': { reason: 'an id of the wrong form' },
  'DELETE /api/third-party/suppressions/{id}': { reason: 'an id of the wrong form' },
  'PATCH /api/admin/channels/{id}': { name: 'Renamed' },
  'PATCH /api/admin/sender-pools/{id}': { name: 'Renamed' },
  'PATCH /api/admin/projects/{id}': { name: 'Renamed' },
  'PATCH /api/admin/products/{id}': { name: 'Renamed' },
  'PATCH /api/third-party/webhook-endpoints/{id}': { enabled: false },
  'POST /api/third-party/webhook-endpoints/{id}/send-example': { eventType: 'message.sent' },
  'POST /api/third-party/webhook-endpoints/{id}/replay': {
    since: new Date(Date.now() - 3_600_000).toISOString(),
  },
}
const payloadOf = (e: Endpoint) =>
  'application/json' in (e.operation.requestBody?.content ?? {}) ? (BODIES[e.name] ?? {}) : undefined

interface Case {
  name: string
  url: string
  ourId: boolean
  e: Endpoint
}

/** Each malformed spelling of one parameter's value, the others left as the caller's own. */
function casesOf(e: Endpoint): Case[] {
  const own = Object.fromEntries(e.pathParams.map((n) => [n, valuesFor(e, n, ownIds)[0] as string]))
  return e.pathParams.flatMap((name) => {
    const real = own[name] as string
    const unknown = randomUUID()
    const forms: Record<string, string> = {
      'urn:uuid: form of an id of the caller': `urn:uuid:${real}`,
      'braced id of the caller': `{${real}}`,
      'id of the caller without hyphens': real.replace(/-/g, ''),
      '36 characters of junk': 'zzzzzzzz-zzzz-zzzz-zzzz-zzzzzzzzzzzz',
      'an unknown id': unknown,
      'an unknown id in upper case': unknown.toUpperCase(),
      ...(e.audience === 'key' ? { "another tenant's id": valuesFor(e, name, acmeIds)[0] as string } : {}),
    }
    // A name without hyphens is itself (`default`): that is not a malformed spelling of it.
    return Object.entries(forms)
      .filter(([, value]) => value !== real)
      .map(([form, value]) => ({
        name: `${e.name} {${name}} = ${form}`,
        url: fillPath(e.path, { ...own, [name]: value }),
        ourId: isOurId(e, name),
        e,
      }))
  })
}

/** Why an answer is not the refusal the rule asks for, or undefined. */
function problemOf(c: Case, res: LightMyRequestResponse): string | undefined {
  let body: unknown
  try {
    body = res.json()
  } catch {
    return `answered ${res.statusCode} without a JSON body`
  }
  if (!Value.Check(ErrorBody, body)) return `answered ${res.statusCode} without the error body: ${res.body}`
  const { statusCode, errorCode, error } = body as { statusCode: number; errorCode: string; error: string }
  if (statusCode !== res.statusCode || error !== STATUS_CODES[res.statusCode]) {
    return `answered ${res.statusCode} with a body saying ${statusCode} ${error}`
  }
  if (c.ourId && (res.statusCode !== 404 || errorCode !== 'NOT_FOUND')) {
    return `answered ${res.statusCode} ${errorCode}, not 404 NOT_FOUND: ${res.body}`
  }
  if (res.statusCode < 400 || res.statusCode >= 500) return `answered ${res.statusCode}: ${res.body}`
  return undefined
}

describe('every id in a path, by one rule (issue 46)', () => {
  it('walks the operations with path parameters: ids of ours are declared so, or said why not', () => {
    expect(endpoints.length).toBeGreaterThan(30)
    for (const e of endpoints) {
      for (const name of e.pathParams.filter((n) => /id$/i.test(n) || n === 'idOrRecipient')) {
        if (isOurId(e, name)) continue
        expect(
          NOT_OUR_IDS[e.name],
          `${e.name} {${name}} is neither a PathId nor in NOT_OUR_IDS`,
        ).toBeDefined()
      }
    }
    const documented = new Set(endpoints.map((e) => e.name))
    for (const name of Object.keys(NOT_OUR_IDS)) expect(documented.has(name), name).toBe(true)
  })

  it('answers every malformed, unknown or foreign id with a refusal in the error body: 404 for an id of ours, never 5xx', async () => {
    const problems: string[] = []
    let calls = 0
    for (const e of endpoints.filter((one) => one.audience !== 'public')) {
      for (const c of casesOf(e)) {
        const res = await inject(app, e.method, c.url, credentialOf(e), payloadOf(e))
        calls++
        const problem = problemOf(c, res)
        if (problem) problems.push(`${c.name}: ${problem}`)
      }
    }
    expect(problems, problems.join('\n')).toEqual([])
    expect(calls).toBeGreaterThan(200)
  }, 120_000)

  it('reads an id in upper case as the same id: each GET answers what the lower-case id answers', async () => {
    let compared = 0
    for (const e of endpoints.filter((one) => one.method === 'GET' && one.audience !== 'public')) {
      const ours = e.pathParams.filter((n) => isOurId(e, n))
      if (ours.length === 0) continue
      const own = Object.fromEntries(e.pathParams.map((n) => [n, valuesFor(e, n, ownIds)[0] as string]))
      const upper = Object.fromEntries(
        Object.entries(own).map(([n, v]) => [n, ours.includes(n) ? v.toUpperCase() : v]),
      )
      const lower = await inject(app, e.method, fillPath(e.path, own), credentialOf(e))
      const shouted = await inject(app, e.method, fillPath(e.path, upper), credentialOf(e))
      expect(shouted.statusCode, `${e.name}: ${shouted.body}`).toBe(lower.statusCode)
      if (lower.statusCode === 200) {
        compared++
        // A timeline or a view read twice is the same record; `requestId`-like fields are not in them.
        // An export is text (CSV), not JSON: the same bytes.
        if (String(lower.headers['content-type']).startsWith('application/json'))
          expect(shouted.json(), e.name).toEqual(lower.json())
        else expect(shouted.body, e.name).toBe(lower.body)
      }
    }
    expect(compared).toBeGreaterThan(3)
  }, 60_000)
})

describe('an id in a query string, by the same rule', () => {
  it('refuses a urn:uuid:, braced or hyphenless id filter with 400 VALIDATION_ERROR naming it, never 5xx', async () => {
    let calls = 0
    const problems: string[] = []
    for (const e of endpointsOf(app.swagger() as never)) {
      if (e.method !== 'GET' || e.audience === 'public') continue
      for (const p of (e.operation.parameters ?? []) as (Parameter & {
        schema?: Record<string, unknown>
      })[]) {
        const schema = p.schema as { format?: string; items?: { format?: string } } | undefined
        if (p.in !== 'query' || (schema?.format !== 'uuid' && schema?.items?.format !== 'uuid')) continue
        const id = randomUUID()
        for (const value of [`urn:uuid:${id}`, `{${id}}`, id.replace(/-/g, '')]) {
          const res = await inject(
            app,
            'GET',
            `${e.path}?${p.name}=${encodeURIComponent(value)}`,
            credentialOf(e),
          )
          calls++
          const body = res.json()
          if (
            res.statusCode !== 400 ||
            body.errorCode !== 'VALIDATION_ERROR' ||
            !body.message.includes(p.name)
          ) {
            problems.push(`${e.name}?${p.name}=${value}: ${res.statusCode} ${res.body}`)
          }
        }
      }
    }
    expect(problems, problems.join('\n')).toEqual([])
    expect(calls).toBeGreaterThan(20)
  })
})
