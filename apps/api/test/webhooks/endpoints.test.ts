import { WebhookEndpointList, WebhookEndpointView, WebhookEndpointWithSecret } from '@dispatch/contracts'
import { createSecretBox } from '@dispatch/runtime'
import Value from 'typebox/value'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  activeKey,
  buildTestApp,
  createWorld,
  expectError,
  type TestApp,
  type TestWorld,
} from '../helpers.ts'

const SCOPES = ['manage:webhooks']
const SECRET = /^whsec_[A-Za-z0-9+/]{43}=$/
/** The API under test has no SECRETS_KEY: it seals with the development key, as this box does. */
const box = createSecretBox({ APP_ENV: 'development' })
const SEALED = /^v1\.[0-9a-f]{8}\.[\w-]+\.[\w-]+\.[\w-]+$/

const storedSecrets = async (id: string) => {
  const [row] = await world.sql`select secret, previous_secret from webhook_endpoints where id = ${id}`
  return row as { secret: string; previous_secret: string | null }
}

let world: TestWorld
let app: TestApp
let key: { id: string; key: string }
let other: { id: string; key: string }
beforeAll(async () => {
  world = await createWorld()
  app = await buildTestApp(world)
  key = await activeKey(app, { scopes: SCOPES })
  other = await activeKey(app, { scopes: SCOPES })
})
afterAll(async () => {
  await app.close()
  await world.close()
})

const call = (
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE',
  path: string,
  apiKey: string,
  payload?: object,
  on: TestApp = app,
) =>
  on.inject({
    method,
    url: `/api/third-party/webhook-endpoints${path}`,
    headers: { 'x-api-key': apiKey },
    ...(payload ? { payload } : {}),
  })

const register = (payload: object, apiKey = key.key, on: TestApp = app) =>
  call('POST', '', apiKey, payload, on)
const hook = { url: 'http://127.0.0.1:9999/hook', events: ['message.sent', 'message.delivered'] }

describe('webhook endpoints: happy path', () => {
  it('registers, lists, reads, changes and deletes an endpoint; the secret is shown once', async () => {
    const created = await register({ ...hook, description: 'ops receiver' })
    expect(created.statusCode, created.body).toBe(201)
    const body = created.json()
    expect(Value.Check(WebhookEndpointWithSecret, body), created.body).toBe(true)
    expect(body).toMatchObject({
      ...hook,
      description: 'ops receiver',
      enabled: true,
      previousSecretExpiresAt: null,
    })
    expect(body.secret).toMatch(SECRET)
    // Stored sealed under SECRETS_KEY, never as shown; the worker opens it to sign.
    const stored = await storedSecrets(body.id)
    expect(stored.secret).toMatch(SEALED)
    expect(stored.secret).not.toContain(body.secret)
    expect(box.open(stored.secret)).toBe(body.secret)
    expect(stored.previous_secret).toBeNull()

    const one = await call('GET', `/${body.id}`, key.key)
    expect(one.statusCode, one.body).toBe(200)
    expect(Value.Check(WebhookEndpointView, one.json()), one.body).toBe(true)
    const { secret, ...view } = body
    expect(one.json()).toEqual(view)
    expect(one.body).not.toContain(secret)
    expect(one.body).not.toContain('whsec_')

    const list = await call('GET', '?take=10', key.key)
    expect(list.statusCode, list.body).toBe(200)
    expect(Value.Check(WebhookEndpointList, list.json()), list.body).toBe(true)
    expect(list.json()).toMatchObject({ page: 1, take: 10, itemCount: 1, pageCount: 1, data: [view] })
    expect(list.body).not.toContain('whsec_')

    const patched = await call('PATCH', `/${body.id}`, key.key, {
      url: 'https://127.0.0.1/other',
      events: ['message.failed'],
      enabled: false,
    })
    expect(patched.statusCode, patched.body).toBe(200)
    expect(patched.json()).toMatchObject({
      url: 'https://127.0.0.1/other',
      events: ['message.failed'],
      enabled: false,
      description: 'ops receiver',
    })

    const deleted = await call('DELETE', `/${body.id}`, key.key)
    expect(deleted.statusCode, deleted.body).toBe(204)
    expect(deleted.body).toBe('')
    expectError(await call('GET', `/${body.id}`, key.key), 404, 'NOT_FOUND')
  })

  it('lists with the paging envelope, one page at a time (take defaults to 1)', async () => {
    const lister = await activeKey(app, { scopes: SCOPES })
    for (let i = 0; i < 3; i++) expect((await register(hook, lister.key)).statusCode).toBe(201)
    const first = (await call('GET', '', lister.key)).json()
    expect(first).toMatchObject({ page: 1, take: 1, itemCount: 3, pageCount: 3, hasNextPage: true })
    expect(first.data).toHaveLength(1)
    const last = (await call('GET', '?page=3&take=1&order=ASC', lister.key)).json()
    expect(last).toMatchObject({ page: 3, hasNextPage: false, hasPreviousPage: true })
  })

  it('rotates the secret: a new one shown once, the previous one signing for 24 h (its expiry shown, not its value)', async () => {
    const created = (await register(hook)).json()
    const sealedBefore = (await storedSecrets(created.id)).secret
    const before = Date.now()
    const rotated = await call('POST', `/${created.id}/rotate-secret`, key.key)
    expect(rotated.statusCode, rotated.body).toBe(200)
    const body = rotated.json()
    expect(Value.Check(WebhookEndpointWithSecret, body), rotated.body).toBe(true)
    expect(body.secret).toMatch(SECRET)
    expect(body.secret).not.toBe(created.secret)
    const expires = Date.parse(body.previousSecretExpiresAt)
    expect(expires - before).toBeGreaterThan(24 * 3600 * 1000 - 60_000)
    expect(expires - before).toBeLessThan(24 * 3600 * 1000 + 60_000)

    const detail = await call('GET', `/${created.id}`, key.key)
    expect(detail.json().previousSecretExpiresAt).toBe(body.previousSecretExpiresAt)
    expect(detail.body).not.toContain('whsec_')
    // Stored for signing, both sealed: the new secret current, the old one moved as it was stored.
    const row = await storedSecrets(created.id)
    expect(row.secret).toMatch(SEALED)
    expect(box.open(row.secret)).toBe(body.secret)
    expect(row.previous_secret).toBe(sealedBefore)
    expect(box.open(row.previous_secret ?? '')).toBe(created.secret)
    expect(JSON.stringify(row)).not.toContain('whsec_')
  })
})

describe('webhook endpoints: another key, scopes', () => {
  it("answers 404 for another key's endpoint on GET, PATCH, DELETE and rotate, and changes nothing", async () => {
    const created = (await register(hook)).json()
    const id = created.id as string
    expectError(await call('GET', `/${id}`, other.key), 404, 'NOT_FOUND')
    expectError(await call('PATCH', `/${id}`, other.key, { enabled: false }), 404, 'NOT_FOUND')
    expectError(await call('DELETE', `/${id}`, other.key), 404, 'NOT_FOUND')
    expectError(await call('POST', `/${id}/rotate-secret`, other.key), 404, 'NOT_FOUND')
    expect(
      (await call('GET', '?take=100', other.key)).json().data.map((e: { id: string }) => e.id),
    ).not.toContain(id)
    const mine = (await call('GET', `/${id}`, key.key)).json()
    expect(mine).toMatchObject({ enabled: true, previousSecretExpiresAt: null })
  })

  it('deletes an endpoint with its attempts log, and only its own; a DELETE by another key deletes nothing', async () => {
    const gone = (await register(hook)).json().id as string
    const kept = (await register(hook)).json().id as string
    // Attempts as the worker records them (the endpoint's receiver answered each).
    const attempts = (endpointId: string) => world.sql`
      select count(*)::int as n from webhook_attempts where endpoint_id = ${endpointId}`
    for (const endpointId of [gone, kept]) {
      await world.sql`
        insert into webhook_attempts (endpoint_id, event_id, attempt, status_code, duration_ms, response_excerpt)
        select ${endpointId}, 'msg_' || g, 1, 500, 12, 'receiver said no' from generate_series(1, 3) g`
    }
    expectError(await call('DELETE', `/${gone}`, other.key), 404, 'NOT_FOUND')
    expect((await attempts(gone))[0]?.n).toBe(3)

    expect((await call('DELETE', `/${gone}`, key.key)).statusCode).toBe(204)
    expect((await attempts(gone))[0]?.n).toBe(0)
    expect((await attempts(kept))[0]?.n).toBe(3)
    const listed = await call('GET', `/${kept}/attempts`, key.key)
    expect(listed.statusCode, listed.body).toBe(200)
  })

  it('answers 404 for a malformed or unknown id', async () => {
    expectError(await call('GET', '/not-a-uuid', key.key), 404, 'NOT_FOUND')
    expectError(await call('DELETE', '/00000000-0000-4000-8000-000000000000', key.key), 404, 'NOT_FOUND')
  })

  it('refuses a key without manage:webhooks: 403 INSUFFICIENT_SCOPE', async () => {
    const sender = await activeKey(app, { scopes: ['send:free-text'] })
    expectError(await register(hook, sender.key), 403, 'INSUFFICIENT_SCOPE')
    expectError(await call('GET', '', sender.key), 403, 'INSUFFICIENT_SCOPE')
    expectError(await call('GET', '', ''), 401, 'API_KEY_MISSING')
  })
})

describe('webhook endpoints: validation', () => {
  it.each([
    ['no events', { ...hook, events: [] }, /body\.events/],
    ['an unknown event', { ...hook, events: ['message.exploded'] }, /body\.events/],
    ['a repeated event', { ...hook, events: ['message.sent', 'message.sent'] }, /body\.events/],
    ['a long description', { ...hook, description: 'x'.repeat(201) }, /body\.description/],
    ['a long url', { ...hook, url: `https://127.0.0.1/${'a'.repeat(2048)}` }, /body\.url/],
    ['not a URL', { ...hook, url: 'receiver' }, /^body\.url/],
    ['an ftp URL', { ...hook, url: 'ftp://127.0.0.1/hook' }, /^body\.url/],
    ['credentials in the URL', { ...hook, url: 'https://user:pw@127.0.0.1/hook' }, /^body\.url/],
    ['a name that does not resolve', { ...hook, url: 'https://nowhere.invalid/hook' }, /^body\.url/],
  ])('refuses %s: 400 VALIDATION_ERROR', async (_, payload, message) => {
    expectError(await register(payload), 400, 'VALIDATION_ERROR', message)
  })

  it('checks a changed url too', async () => {
    const created = (await register(hook)).json()
    expectError(
      await call('PATCH', `/${created.id}`, key.key, { url: 'gopher://x' }),
      400,
      'VALIDATION_ERROR',
      /^body\.url/,
    )
    expectError(
      await call('PATCH', `/${created.id}`, key.key, { events: [] }),
      400,
      'VALIDATION_ERROR',
      /body\.events/,
    )
  })

  it('accepts a loopback http receiver in development', async () => {
    expect((await register({ url: 'http://127.0.0.1:9999/hook', events: ['message.read'] })).statusCode).toBe(
      201,
    )
  })
})

describe('webhook endpoints in production', () => {
  let production: TestApp
  let prodKey: { id: string; key: string }
  // Production refuses to start without its own key for the senders' tokens and signing secrets.
  const SECRETS_KEY = Buffer.alloc(32, 7).toString('base64')
  beforeAll(async () => {
    production = await buildTestApp(world, { APP_ENV: 'production', SECRETS_KEY })
    prodKey = await activeKey(production, { scopes: SCOPES })
    expect(prodKey.key).toMatch(/^mdk_prod_/)
  })
  afterAll(async () => {
    await production.close()
  })

  it.each([
    'http://93.184.216.34/hook',
    'https://127.0.0.1/hook',
    'https://10.0.0.1/hook',
    'https://172.16.5.4/hook',
    'https://192.168.1.1/hook',
    'https://169.254.169.254/latest/meta-data',
    'https://[::1]/hook',
    'https://[fd00:ec2::254]/hook',
    'https://[fe80::1]/hook',
    'https://[::ffff:127.0.0.1]/hook',
    'https://0.0.0.0/hook',
    'https://localhost/hook',
  ])('refuses %s: 400 naming url', async (url) => {
    expectError(
      await register({ url, events: ['message.sent'] }, prodKey.key, production),
      400,
      'VALIDATION_ERROR',
      /^body\.url/,
    )
  })

  it('accepts an https URL on a public address', async () => {
    const res = await register(
      { url: 'https://93.184.216.34/hook', events: ['message.sent'] },
      prodKey.key,
      production,
    )
    expect(res.statusCode, res.body).toBe(201)
    // Sealed under the configured SECRETS_KEY, which the development key does not open.
    const { secret } = await storedSecrets(res.json().id)
    expect(createSecretBox({ APP_ENV: 'production', SECRETS_KEY }).open(secret)).toBe(res.json().secret)
    expect(() => box.open(secret)).toThrow(/key this process does not hold/)
  })

  it('refuses a private target when a PATCH moves the endpoint there', async () => {
    const created = (
      await register({ url: 'https://93.184.216.34/hook', events: ['message.sent'] }, prodKey.key, production)
    ).json()
    const res = await call(
      'PATCH',
      `/${created.id}`,
      prodKey.key,
      { url: 'https://10.1.2.3/hook' },
      production,
    )
    expectError(res, 400, 'VALIDATION_ERROR', /^body\.url/)
  })
})
