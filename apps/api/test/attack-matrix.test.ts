import { Scopes } from '@dispatch/contracts'
import { startWebhookReceiver, type WebhookReceiver, waitFor } from '@dispatch/testing'
import type { RunningWorker } from '@dispatch/worker'
import type { LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  type Attack,
  alternatives,
  attackName,
  combinations,
  type Endpoint,
  endpointsOf,
  fastifyPath,
  fillPath,
  leaks,
  refusalProblem,
  registeredRoutes,
} from './attack-matrix.ts'
import {
  ACME,
  acmeRecord,
  acmeView,
  createEverything,
  inject as injectInto,
  ok,
  session,
} from './attack-matrix-victim.ts'
import {
  ADMIN,
  activeKey,
  asAdmin,
  buildTestApp,
  createWorld,
  decide,
  startTestWorker,
  type TestApp,
  type TestWorld,
} from './helpers.ts'
import { png } from './media/images.ts'
import { serials } from './orders/fixtures.ts'

/**
 * The generated attack matrix (issue 41): every operation of the OpenAPI document, called by every
 * attacker that should get nothing from it: no credential, the wrong kind of credential, a revoked
 * key, and tenant `evil`'s key aimed at what tenant `acme` created. Each answer is a refusal (401,
 * 403 or 404 in the error body) unless the operation serves the caller's own data, and no answer
 * shows anything of acme's. The operations come from the document, so a new route is attacked
 * without anyone listing it; only the ones that take no credential by design are listed, below.
 */

/** Operations that take no credential by design, and why. Each must still be in the document. */
const PUBLIC: Record<string, string> = {
  'GET /healthz': "the orchestrator's liveness probe: says nothing of any tenant",
  'GET /readyz': "the orchestrator's readiness probe: says nothing of any tenant",
  'POST /api/api-keys/request': 'anyone may ask for a key; it does nothing until an admin approves it',
  'POST /api/admin/session': "the console's sign-in: the admin's name and token are in its body",
  'POST /api/third-party/session': "the portal's sign-in: the key is in its body",
  'GET /api/webhooks/whatsapp': "Meta's subscription check, proved by the verify token",
  'POST /api/webhooks/whatsapp': "Meta's deliveries, proved by the signature over the body",
}

/**
 * The routes outside the document, by path prefix: public by design (with the reason), or taking a
 * credential of their own, attacked with no credential and the wrong kinds as the document's are.
 * The message routes' `/third-party/messages` alias is attacked as its documented twin. A route
 * outside the document and outside these fails the second test until it is placed here.
 */
const OUTSIDE_DOCUMENT: { prefix: string; public?: string; credential?: string }[] = [
  { prefix: '/docs', public: 'the API documentation: the document this matrix reads' },
  { prefix: '/console', public: "the console's static files: its data comes through the admin routes" },
  { prefix: '/portal', public: "the portal's static files: its data comes through the key routes" },
  { prefix: '/metrics', credential: 'the metrics token (Prometheus)' },
  { prefix: '/admin/queues', credential: "Bull Board: the admins' HTTP Basic login" },
]
const outsideRule = (route: string) => {
  const path = route.slice(route.indexOf(' ') + 1)
  return OUTSIDE_DOCUMENT.find(
    ({ prefix }) => path === prefix || path.startsWith(`${prefix}/`) || path.startsWith(`${prefix}*`),
  )
}
/** Every route the app serves outside the document (its documented aliases left out). */
const routesOutside = () => {
  const documented = new Set(endpoints.map((e) => `${e.method} ${fastifyPath(e.path)}`))
  return registeredRoutes(app.printRoutes({ commonPrefix: false })).filter((route) =>
    alternatives(route).every((one) => !documented.has(one) && !documented.has(one.replace(' /', ' /api/'))),
  )
}

/**
 * Cases that fail today because of a known defect, by defect, each asserted to still
 * fail: when a fix lands, this test names the entries to remove. Names are `attackName`'s.
 */
const KNOWN_OPEN: Record<string, string[]> = {}

const EVIL_PHONE = '+5511922220001'
const ALL_SCOPES = Object.values(Scopes)

let world: TestWorld
let app: TestApp
let worker: RunningWorker
let receiver: WebhookReceiver
let endpoints: Endpoint[]
/** Everything of acme's an answer to another must never show, by what it is. */
let secrets: Record<string, string>
/** acme's ids by the path parameter (or the resource before `{id}`) they fill. */
let acmeIds: Record<string, string[]>
/** The revoked key's own ids, for its calls. */
const revokedIds: Record<string, string[]> = {}
let acmeKey: { id: string; key: string }
let evilKey: { id: string; key: string }
let revokedKey: { id: string; key: string }
let revokedScheduledId: string
let credentials: Record<string, Record<string, string>>
let acmeBefore: Record<string, unknown>
const evilErasureIds: string[] = []
/** Evil's sends naming one of acme's messages or uploads, accepted: their outcome is compared below. */
const evilReferences: { name: string; kind: string; messageId: string }[] = []
/** The sends whose body names another message (a reaction) or an upload (media kinds) by id. */
const REFERENCING_KINDS = new Set(['reaction', 'image', 'document', 'video', 'audio', 'sticker'])
const inject = (method: string, url: string, headers: Record<string, string>, payload?: unknown) =>
  injectInto(app, method, url, headers, payload)

beforeAll(async () => {
  const started = Date.now()
  world = await createWorld()
  receiver = await startWebhookReceiver()
  app = await buildTestApp(world, {
    WHATSAPP_VERIFY_TOKEN: 'matrix-verify-token',
    WHATSAPP_APP_SECRET: 'matrix-app-secret',
    WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    // Hundreds of refused credentials from one address: the limiters are not what is tested here.
    API_KEY_FAILURE_MAX: '100000',
    ADMIN_AUTH_FAILURE_MAX: '100000',
    MESSAGE_RATE_PER_SECOND: '10000',
    // As production must have it (or metrics on a listener of their own).
    METRICS_TOKEN: 'matrix-metrics-token-0123456789',
  })
  worker = await startTestWorker(world, { WEBHOOK_RETRY_SCHEDULE: '1h' })
  endpoints = endpointsOf(app.swagger() as never)

  acmeKey = await activeKey(app, {
    tenantId: 'acme',
    scopes: ALL_SCOPES,
    clientName: 'Acme',
    email: 'ops@acme.test',
  })
  evilKey = await activeKey(app, {
    tenantId: 'evil',
    scopes: ALL_SCOPES,
    clientName: 'Evil',
    email: 'ops@evil.test',
  })
  const acme = await createEverything(app, receiver, acmeKey.key, 'acme')

  // The revoked key: acme's too, with a scheduled message and a portal session, then revoked.
  revokedKey = await activeKey(app, { tenantId: 'acme', scopes: ALL_SCOPES, clientName: 'Acme old' })
  const revokedPortal = await session(app, '/api/third-party/session', { apiKey: revokedKey.key })
  const revoked = await ok(
    inject(
      'POST',
      '/api/third-party/messages/send-text',
      { 'x-api-key': revokedKey.key },
      {
        phone: ACME.textPhone,
        text: ACME.scheduledText,
        sendAt: new Date(Date.now() + 3_600_000).toISOString(),
      },
    ),
    202,
    'revoked key schedules',
  )
  revokedScheduledId = revoked.messageId
  await ok(decide(app, revokedKey.id, 'revoke', { reason: 'leaked in a log' }), 200, 'revoke')

  // acme's message is sent and its endpoint told: a delivery event of acme's to aim at.
  await waitFor(async () => receiver.received.find((r) => r.path.startsWith('/acme-hook')), {
    what: "acme's endpoint told of its message",
    timeoutMs: 20_000,
  })
  const attempts = await ok(
    inject('GET', `/api/third-party/webhook-endpoints/${acme.endpoint.id}/attempts?take=100`, {
      'x-api-key': acmeKey.key,
    }),
    200,
    'attempts',
  )
  const eventId = attempts.data[0]?.eventId as string
  if (!eventId) throw new Error(`no attempt on acme's endpoint: ${JSON.stringify(attempts)}`)

  ;({ secrets, ids: acmeIds } = acmeRecord(acme, eventId, acmeKey.id))
  revokedIds.messageId = [revokedScheduledId]
  credentials = {
    'an API key': { 'x-api-key': evilKey.key },
    'a portal session': await session(app, '/api/third-party/session', { apiKey: evilKey.key }),
    'a console session': await session(app, '/api/admin/session', { name: 'ana', token: ADMIN.ana }),
    'a revoked key': { 'x-api-key': revokedKey.key },
    "a revoked key's portal session": revokedPortal,
  }
  acmeBefore = await acmeView(app, acmeKey.key, secrets)
  console.info(`attack matrix: acme's world made in ${Date.now() - started} ms`)
}, 60_000)

afterAll(async () => {
  await worker?.close()
  await app?.close()
  await receiver?.close()
  await world?.close()
})

const EVIL = "tenant evil's key"
const EVIL_PORTAL = "tenant evil's portal session"
const hourAgo = () => new Date(Date.now() - 3_600_000).toISOString()

/** A valid body for each key operation that takes one, as evil sends it: naming acme's things where it can. */
function evilBody(e: Endpoint): object | undefined {
  const kind = e.path.match(/\/messages\/send-(\w+)$/)?.[1]
  if (kind) return { phone: EVIL_PHONE, ...sendBodies()[kind] }
  const bodies: Record<string, object> = {
    'POST /api/third-party/messages/batch': { messages: [{ type: 'text', phone: EVIL_PHONE, text: 'evil' }] },
    'POST /api/third-party/messages/validate': { type: 'text', phone: EVIL_PHONE, text: 'evil' },
    'POST /api/third-party/messages/{messageId}/read': {},
    'POST /api/third-party/orders': {
      order: { projectId: secrets["acme's project id"], channelId: acmeIds.channels?.[0] },
      orderItems: [
        {
          productId: secrets["acme's product id"],
          price: 2500,
          quantity: 1,
          kitSerials: serials(1, 'evil-SN'),
        },
      ],
    },
    'POST /api/third-party/webhook-endpoints': { url: `${receiver.url}/evil-hook`, events: ['message.sent'] },
    // A campaign of its own, with acme's campaign's name: the answer is evil's campaign.
    'POST /api/third-party/campaigns': {
      name: 'evil campaign',
      template: { templateId: 'order_shipped', language: 'pt_BR' },
    },
    'PATCH /api/third-party/webhook-endpoints/{id}': { enabled: false, url: `${receiver.url}/evil-hook` },
    'POST /api/third-party/webhook-endpoints/{id}/replay': { since: hourAgo() },
    // An example to acme's endpoint: it must not reach acme's receiver.
    'POST /api/third-party/webhook-endpoints/{id}/send-example': { eventType: 'message.sent' },
    // An opt-out of its own for a phone acme opted out: the answer is evil's entry, never acme's.
    'POST /api/third-party/suppressions': { phone: ACME.optOutPhone, reason: 'evil adds its own' },
    'DELETE /api/third-party/suppressions/{id}': { reason: 'evil lifts it' },
    // Evil erases a phone acme opted out: its erasure must leave acme's entry readable.
    'POST /api/third-party/erasures': { phone: ACME.erasedByEvilPhone },
  }
  return bodies[e.documented]
}

function sendBodies(): Record<string, object> {
  const mediaId = secrets["acme's media id"]
  return {
    text: { text: 'evil text' },
    template: { templateId: 'order_shipped', language: 'pt_BR', variables: { '1': 'Ana', '2': 'BR-1042' } },
    // acme's uploaded media, named by its id.
    image: { image: { mediaId } },
    document: { document: { mediaId, filename: 'invoice.pdf' } },
    video: { video: { mediaId } },
    audio: { audio: { mediaId } },
    sticker: { sticker: { mediaId } },
    location: { location: { latitude: -23.56, longitude: -46.65 } },
    contacts: { contacts: [{ name: { formatted_name: 'Ana Lima', first_name: 'Ana' } }] },
    interactive: {
      interactive: {
        type: 'button',
        body: { text: 'Ok?' },
        action: { buttons: [{ type: 'reply', reply: { id: 'y', title: 'Yes' } }] },
      },
    },
    // A reaction to acme's message, named by its Dispatch id.
    reaction: { reaction: { messageId: secrets["acme's message id"], emoji: '👍' } },
  }
}

/** The request body and its Content-Type for an operation (a PNG for the media upload). */
async function payloadFor(e: Endpoint, body: object | undefined) {
  const content = e.operation.requestBody?.content ?? {}
  if ('multipart/form-data' in content) {
    const form = new FormData()
    form.append('file', new Blob([png(2)], { type: 'image/png' }), 'evil.png')
    const encoded = new Response(form)
    return {
      payload: Buffer.from(await encoded.arrayBuffer()),
      contentType: encoded.headers.get('content-type') as string,
    }
  }
  if ('application/json' in content)
    return { payload: JSON.stringify(body ?? {}), contentType: 'application/json' }
  return undefined
}

/** A phone names a person, not a tenant's row: an operation on one answers the caller's own data about it. */
const PHONE_PARAMS = new Set(['phone', 'recipient'])

/** The value of each of acme's query filters a list may take. */
const acmeFilters = (): Record<string, string> => ({
  phone: ACME.textPhone,
  recipient: ACME.optOutPhone,
  clientReference: ACME.clientReference,
  batchId: secrets["acme's batch id"] as string,
  orderId: secrets["acme's order id"] as string,
  projectId: secrets["acme's project id"] as string,
  serial: secrets["acme's kit serial"] as string,
  eventId: secrets["acme's event id"] as string,
  q: ACME.clientReference,
  tenantId: 'acme',
})

/** The values for each path parameter: `{id}` takes the ids of the resource it follows. */
function pathChoices(e: Endpoint, ids: Record<string, string[]>): Record<string, string[]> {
  return Object.fromEntries(
    e.pathParams.map((name) => {
      // `{id}` (and `{idOrRecipient}`, given ids only) takes the ids of the resource it follows.
      const resource = ['id', 'idOrRecipient'].includes(name)
        ? (e.path.split(`/{${name}}`)[0]?.split('/').pop() as string)
        : name
      const values = ids[resource] ?? acmeIds[resource]
      if (!values) {
        throw new Error(`the matrix knows no id of acme's for {${name}} in ${e.name}: add one to acmeIds`)
      }
      return [name, values]
    }),
  )
}

const secretName = (value: string) => Object.entries(secrets).find(([, v]) => v === value)?.[0] ?? value

async function attacksOn(e: Endpoint): Promise<Attack[]> {
  const attacks: Attack[] = []
  const make = async (
    attacker: string,
    headers: Record<string, string>,
    values: Record<string, string>,
    extra: Partial<Attack> = {},
  ) => {
    const body = await payloadFor(e, attacker === EVIL || attacker === EVIL_PORTAL ? evilBody(e) : undefined)
    attacks.push({
      operation: e.name,
      attacker,
      detail: '',
      method: e.method,
      url: fillPath(e.path, values),
      headers: body ? { ...headers, 'content-type': body.contentType } : headers,
      ...(body ? { payload: body.payload } : {}),
      ownData: false,
      ...extra,
    })
  }
  const first = (choices: Record<string, string[]>) =>
    Object.fromEntries(Object.entries(choices).map(([k, v]) => [k, v[0] as string]))
  if (e.audience === 'public') return attacks
  const wrong =
    e.audience === 'admin'
      ? ['no credential', 'an API key', 'a portal session']
      : ['no credential', 'a console session', 'a revoked key', "a revoked key's portal session"]
  for (const attacker of wrong) {
    const ids = attacker.startsWith('a revoked') ? revokedIds : acmeIds
    // Signing out of one's own session needs no live key: it ends the session and shows nothing.
    const ownData =
      e.name === 'DELETE /api/third-party/session' && attacker === "a revoked key's portal session"
    await make(attacker, credentials[attacker] ?? {}, first(pathChoices(e, ids)), { detail: '', ownData })
  }
  if (e.audience !== 'key') return attacks
  const ownData = e.pathParams.every((p) => PHONE_PARAMS.has(p))
  for (const attacker of [EVIL, EVIL_PORTAL]) {
    const headers = attacker === EVIL ? { 'x-api-key': evilKey.key } : (credentials['a portal session'] ?? {})
    for (const values of combinations(pathChoices(e, acmeIds))) {
      const detail = Object.entries(values)
        .map(([k, v]) => `{${k}}=${secretName(v)}`)
        .join(', ')
      await make(attacker, headers, values, { detail, ownData })
    }
    if (e.method !== 'GET' || e.pathParams.length > 0) continue
    // A list: everything on one page, then filtered by each of acme's values it takes.
    const take = e.queryParams.includes('take') ? 'take=100' : ''
    const last = attacks.at(-1) as Attack
    last.url += take ? `?${take}` : ''
    for (const [name, value] of Object.entries(acmeFilters()).filter(([n]) => e.queryParams.includes(n))) {
      const query = [take, `${name}=${encodeURIComponent(value)}`].filter(Boolean).join('&')
      attacks.push({ ...last, url: `${e.path}?${query}`, detail: `?${name}=${secretName(value)}` })
    }
  }
  return attacks
}

/** Reads first, then changes, deletions last, signing out at the very end: a change that wrongly lands cannot hide a leak. */
const order = (a: Attack) =>
  (a.attacker === EVIL || a.attacker === EVIL_PORTAL ? 10 : 0) +
  ({ GET: 0, POST: 1, PATCH: 1, PUT: 1, DELETE: 2 }[a.method] ?? 1) +
  (a.url.endsWith('/session') && a.method === 'DELETE' ? 20 : 0)

/**
 * A body naming another tenant's row gets the answer an unknown id gets, which confirms nothing:
 * the operations whose documented answer to that is not a 404.
 */
const UNKNOWN_REFERENCE: Record<string, { statusCode: number; errorCode: string }> = {
  'POST /api/third-party/orders': { statusCode: 422, errorCode: 'INVALID_REFERENCE' },
}

const asUnknown = (attack: Attack, res: LightMyRequestResponse) => {
  const expected = UNKNOWN_REFERENCE[attack.operation]
  return (
    expected !== undefined &&
    res.statusCode === expected.statusCode &&
    res.json().errorCode === expected.errorCode
  )
}

/** Runs each attack, a few at once within each step of `order`; answers each failing case's name and what went wrong. */
async function run(attacks: Attack[]): Promise<Map<string, string>> {
  const failures = new Map<string, string>()
  const steps = Map.groupBy(attacks, order)
  for (const step of [...steps.keys()].sort((a, b) => a - b)) {
    const batch = steps.get(step) as Attack[]
    // Evil's changes one at a time: which of two lifts finds acme's entry is then not a race.
    const width = step > 10 ? 1 : 8
    for (let i = 0; i < batch.length; i += width) {
      await Promise.all(batch.slice(i, i + width).map((attack) => judge(attack, failures)))
    }
  }
  return failures
}

async function judge(attack: Attack, failures: Map<string, string>) {
  {
    const res = await app.inject({
      method: attack.method as 'GET',
      url: attack.url,
      headers: attack.headers,
      ...(attack.payload === undefined ? {} : { payload: attack.payload }),
    })
    if (attack.operation.endsWith('/erasures') && res.statusCode === 202) evilErasureIds.push(res.json().id)
    const sendKind = attack.operation.match(/\/messages\/send-(\w+)$/)?.[1]
    if (sendKind && REFERENCING_KINDS.has(sendKind) && attack.attacker === EVIL && res.statusCode === 202) {
      evilReferences.push({ name: attackName(attack), kind: sendKind, messageId: res.json().messageId })
    }
    const problems: string[] = []
    const refused = refusalProblem(res)
    if (res.statusCode >= 500) problems.push(`answered ${res.statusCode}: ${res.body.slice(0, 200)}`)
    else if (refused && !(attack.ownData && res.statusCode < 300) && !asUnknown(attack, res)) {
      problems.push(`${refused}: ${res.body.slice(0, 200)}`)
    }
    const request = `${decodeURIComponent(attack.url)} ${attack.payload?.toString() ?? ''}`
    const leaked = leaks(res.body, secrets, request)
    if (leaked.length) problems.push(`its answer (${res.statusCode}) shows ${leaked.join(', ')}`)
    if (problems.length) failures.set(attackName(attack), problems.join('; '))
  }
}

describe('the attack matrix', () => {
  it('lists as public only operations that exist, take no credential, and are all the public ones', () => {
    const publicOps = endpoints.filter((e) => e.audience === 'public').map((e) => e.name)
    expect(
      Object.keys(PUBLIC).filter((name) => !publicOps.includes(name)),
      'listed in PUBLIC but not a public operation of the document (gone, or now takes a credential): remove it',
    ).toEqual([])
    expect(
      publicOps.filter((name) => !(name in PUBLIC)),
      'operations that take no credential: give them security, or list them in PUBLIC with the reason',
    ).toEqual([])
  })

  it('places every route outside the document: public with its reason, or taking a credential', () => {
    const outside = routesOutside()
    expect(
      outside.filter((route) => !outsideRule(route)),
      'routes outside the OpenAPI document: document them, or place them in OUTSIDE_DOCUMENT',
    ).toEqual([])
    expect(
      OUTSIDE_DOCUMENT.filter((rule) => !outside.some((route) => outsideRule(route) === rule)).map(
        (r) => r.prefix,
      ),
      'OUTSIDE_DOCUMENT entries no route matches any more: remove them',
    ).toEqual([])
    expect(outside.filter((route) => outsideRule(route)?.credential).length).toBeGreaterThan(10)
  })

  it('refuses every operation to every attacker and shows none of acme’s data', async () => {
    const started = Date.now()
    // The message routes are served under /third-party too, outside the document: attacked the same.
    const aliases = endpoints
      .filter((e) => e.path.startsWith('/api/') && e.audience !== 'public')
      .map((e) => ({
        ...e,
        path: e.path.slice(4),
        name: `${e.method} ${e.path.slice(4)} (undocumented alias)`,
      }))
      .filter((e) => app.hasRoute({ method: e.method as 'GET', url: e.path.replace(/\{([^}]+)\}/g, ':$1') }))
    const attacks = (await Promise.all([...endpoints, ...aliases].map(attacksOn))).flat()
    for (const route of routesOutside().filter((r) => outsideRule(r)?.credential)) {
      const [method, path] = route.split(' ') as [string, string]
      // Any value for a parameter: the credential is checked first.
      const url = path.replace(/:[^/]+/g, 'messages').replace(/\*$/, '/x')
      for (const attacker of ['no credential', 'an API key', 'a portal session']) {
        const headers = credentials[attacker] ?? {}
        attacks.push({ operation: route, attacker, detail: '', method, url, headers, ownData: false })
      }
    }
    const failures = await run(attacks)
    console.info(`attack matrix: ${attacks.length} calls in ${Date.now() - started} ms`)

    // What evil did changed nothing of acme's (its erasure done first).
    await untilErased(evilErasureIds)
    const after = await acmeView(app, acmeKey.key, secrets)
    for (const [what, before] of Object.entries(acmeBefore)) {
      const now = after[what as keyof typeof after]
      if (JSON.stringify(now) !== JSON.stringify(before)) {
        failures.set(
          `acme's data after evil's calls: ${what}`,
          `was ${JSON.stringify(before)}, now ${JSON.stringify(now)}`,
        )
      }
    }
    // A send naming acme's message or upload ends as one naming an unknown id does: the id is
    // neither confirmed nor used.
    for (const [name, problem] of await referenceOutcomes()) failures.set(name, problem)
    // The revoked key's scheduled message, as an admin reads it.
    const listed = await ok(
      inject('GET', `/api/admin/messages?apiKeyId=${revokedKey.id}&take=100`, asAdmin()),
      200,
      'admin list',
    )
    const status = listed.data.find((m: { messageId: string }) => m.messageId === revokedScheduledId)?.status
    if (status !== 'canceled') failures.set("a revoked key's scheduled message", `is ${status}, not canceled`)

    const known = new Map(
      Object.entries(KNOWN_OPEN).flatMap(([defect, names]) => names.map((n) => [n, defect])),
    )
    expect(
      [...failures].filter(([name]) => !known.has(name)).map(([name, problem]) => `${name}: ${problem}`),
      'attacks that got through',
    ).toEqual([])
    expect(
      [...known].filter(([name]) => !failures.has(name)).map(([name, defect]) => `${name} (${defect})`),
      'KNOWN_OPEN cases that pass now (the defect is fixed, or the case is gone): remove them from KNOWN_OPEN',
    ).toEqual([])
    expect(attacks.length).toBeGreaterThan(300)
  }, 90_000)
})

/** Each erasure evil's calls started has run. */
async function untilErased(ids: string[]) {
  for (const id of ids) {
    await waitFor(
      async () => {
        const view = await inject('GET', `/api/third-party/erasures/${id}`, { 'x-api-key': evilKey.key })
        return ['completed', 'failed'].includes(view.json<{ status: string }>().status) || undefined
      },
      { what: `evil's erasure ${id} done`, timeoutMs: 20_000 },
    )
  }
}

/**
 * Each of evil's accepted sends naming acme's message or upload, beside the same send naming an
 * id no one has: both must end alike (status and error code), or acme's id was found and used.
 */
async function referenceOutcomes(): Promise<[string, string][]> {
  const as = { 'x-api-key': evilKey.key }
  const unknown = crypto.randomUUID()
  const bodies = sendBodies()
  const controls = await Promise.all(
    evilReferences.map(async ({ kind }) => {
      const body = JSON.parse(
        JSON.stringify(bodies[kind])
          .replaceAll(secrets["acme's message id"] as string, unknown)
          .replaceAll(secrets["acme's media id"] as string, unknown),
      )
      const res = await inject('POST', `/api/third-party/messages/send-${kind}`, as, {
        phone: EVIL_PHONE,
        ...body,
      })
      return res.statusCode === 202 ? (res.json().messageId as string) : `refused ${res.statusCode}`
    }),
  )
  const outcome = (id: string) =>
    waitFor(
      async () => {
        if (id.startsWith('refused')) return id
        const view = (await inject('GET', `/api/third-party/messages/${id}`, as)).json()
        return ['queued', 'scheduled', 'sending'].includes(view.status)
          ? undefined
          : `${view.status}${view.lastError ? ` ${view.lastError.code}` : ''}`
      },
      { what: `evil's message ${id} to end`, timeoutMs: 20_000, intervalMs: 100 },
    )
  const failures: [string, string][] = []
  for (const [i, reference] of evilReferences.entries()) {
    const [named, control] = await Promise.all([outcome(reference.messageId), outcome(controls[i] as string)])
    if (named !== control) {
      failures.push([
        `${reference.name}, its outcome`,
        `ends ${named}, where one naming an unknown id ends ${control}: acme's id was found and used`,
      ])
    }
  }
  return failures
}
