import { randomBytes } from 'node:crypto'
import type { ErasureView } from '@dispatch/contracts'
import { recipientHasher, suppressionKey, suppressionsLoadedKey } from '@dispatch/runtime'
import {
  inboundMessage,
  messageWebhook,
  startWebhookReceiver,
  type WebhookReceiver,
  waitFor,
} from '@dispatch/testing'
import type { RunningWorker } from '@dispatch/worker'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  activeKey,
  asAdmin,
  buildTestApp,
  createWorld,
  expectError,
  postPlatformWebhook,
  startTestWorker,
  type TestApp,
  type TestWorld,
  untilMessageStatus,
} from '../helpers.ts'

/**
 * Issue 41: the suppression list across tenants. Two tenants' keys (`acme`, `evil`) on the same
 * `default` sender, and two keys with no tenant: each tenant's entries are its own; the recipient's
 * own opt-out blocks every key and is lifted by them or an admin only.
 */
const APP_SECRET = 'app-secret-0123456789'
const SANDBOX_NUMBER = '100000000000001'
const SCOPES = ['send:free-text', 'read:messages', 'manage:suppressions', 'manage:data', 'manage:webhooks']

let world: TestWorld
let app: TestApp
let worker: RunningWorker
let receiver: WebhookReceiver
type Key = { id: string; key: string }
let acme: Key
let acmeToo: Key
let evil: Key
let loner: Key
let lonerToo: Key
let phones = 0
const newPhone = () => `+55117${String(Date.now()).slice(-6)}${phones++}`.slice(0, 14)
const secret = (what: string) => `${what}-${randomBytes(6).toString('hex')}`

const as = (key: Key) => ({ 'x-api-key': key.key })
const sendText = (key: Key, phone: string, extra: object = {}) =>
  app.inject({
    method: 'POST',
    url: '/api/third-party/messages/send-text',
    headers: as(key),
    payload: { phone, text: 'Our weekly offers', ...extra },
  })
const suppress = async (key: Key, phone: string, reason: string, scope = 'all') => {
  const res = await app.inject({
    method: 'POST',
    url: '/api/third-party/suppressions',
    headers: as(key),
    payload: { phone, reason, scope },
  })
  expect(res.statusCode, res.body).toBe(201)
  return res.json<{ id: string }>()
}
const get = (key: Key, url: string) => app.inject({ method: 'GET', url, headers: as(key) })
const lift = (key: Key, id: string) =>
  app.inject({
    method: 'DELETE',
    url: `/api/third-party/suppressions/${id}`,
    headers: as(key),
    payload: { reason: 'Customer asked again' },
  })
const customerSays = (phone: string, text: string) =>
  postPlatformWebhook(
    app,
    messageWebhook(SANDBOX_NUMBER, inboundMessage('text', { phone }, { text })),
    APP_SECRET,
  )
/** The key's consent events about the phone (its own sends' `message.*` events are not these). */
const consentEventsOf = async (key: Key, phone: string) =>
  world.sql<{ type: string }[]>`
    select type from webhook_events
    where api_key_id = ${key.id} and type like 'recipient.%' and payload->'data'->>'phone' = ${phone}
    order by sequence`

beforeAll(async () => {
  world = await createWorld()
  receiver = await startWebhookReceiver()
  app = await buildTestApp(world, { WHATSAPP_APP_SECRET: APP_SECRET, SCHEDULE_MIN_AHEAD_SECONDS: '1' })
  worker = await startTestWorker(world, { WORKER_SENDERS: 'default', SERVICE_WINDOW_CHECK_MS: '200' })
  acme = await activeKey(app, { scopes: SCOPES, tenantId: 'acme' })
  acmeToo = await activeKey(app, { scopes: SCOPES, tenantId: 'acme' })
  evil = await activeKey(app, { scopes: SCOPES, tenantId: 'evil' })
  loner = await activeKey(app, { scopes: SCOPES })
  lonerToo = await activeKey(app, { scopes: SCOPES })
  // Every key with an endpoint subscribed to consent events: who hears of which entry is checked.
  for (const key of [acme, acmeToo, evil, loner, lonerToo]) {
    const res = await app.inject({
      method: 'POST',
      url: '/api/third-party/webhook-endpoints',
      headers: as(key),
      payload: { url: receiver.url, events: ['recipient.opted_out', 'recipient.opted_in'] },
    })
    expect(res.statusCode, res.body).toBe(201)
  }
})

afterAll(async () => {
  await worker?.close()
  await app?.close()
  await receiver?.close()
  await world?.close()
})

describe("a key's entry belongs to its tenant", () => {
  it('another tenant on the same sender neither lists, reads nor lifts it, hears nothing of it, and keeps sending', async () => {
    const phone = newPhone()
    const reason = secret('Asked acme by phone')
    const entry = await suppress(acme, phone, reason)
    expectError(await sendText(acme, phone), 422, 'RECIPIENT_OPTED_OUT')
    // The tenant's other key is blocked too, and manages the entry.
    expectError(await sendText(acmeToo, phone), 422, 'RECIPIENT_OPTED_OUT')
    expect((await get(acmeToo, '/api/third-party/suppressions?take=100')).json()).toMatchObject({
      itemCount: 1,
      data: [{ id: entry.id, reason }],
    })

    const listed = await get(evil, '/api/third-party/suppressions?take=100')
    expect(listed.statusCode, listed.body).toBe(200)
    expect(listed.json()).toMatchObject({ itemCount: 0, data: [] })
    const filtered = await get(evil, `/api/third-party/suppressions?recipient=${encodeURIComponent(phone)}`)
    expect(filtered.json().data).toEqual([])
    expectError(await get(evil, `/api/third-party/suppressions/${entry.id}`), 404, 'NOT_FOUND')
    expectError(await lift(evil, entry.id), 404, 'NOT_FOUND')
    for (const res of [listed, filtered]) expect(res.body).not.toContain(reason)

    // Still acme's, still blocking acme; evil sends as if nothing were there.
    expect((await get(acme, `/api/third-party/suppressions/${entry.id}`)).json()).toMatchObject({
      reason,
      tenantId: 'acme',
      apiKeyId: acme.id,
    })
    expectError(await sendText(acme, phone), 422, 'RECIPIENT_OPTED_OUT')
    expect((await sendText(evil, phone)).statusCode).toBe(202)
    expect(await consentEventsOf(acme, phone)).toEqual([{ type: 'recipient.opted_out' }])
    expect(await consentEventsOf(evil, phone)).toEqual([])

    // Lifted by its tenant: acme sends again, and only acme's keys hear of it.
    expect((await lift(acmeToo, entry.id)).statusCode).toBe(200)
    expect((await sendText(acme, phone)).statusCode).toBe(202)
    expect(await consentEventsOf(acme, phone)).toEqual([
      { type: 'recipient.opted_out' },
      { type: 'recipient.opted_in' },
    ])
    expect(await consentEventsOf(evil, phone)).toEqual([])
  })

  it("a key with no tenant owns its entries alone: another tenantless key doesn't see or obey them", async () => {
    const phone = newPhone()
    const entry = await suppress(loner, phone, secret('loner'))
    expectError(await sendText(loner, phone), 422, 'RECIPIENT_OPTED_OUT')
    expect((await sendText(lonerToo, phone)).statusCode).toBe(202)
    expect((await get(lonerToo, '/api/third-party/suppressions')).json().data).toEqual([])
    expectError(await get(lonerToo, `/api/third-party/suppressions/${entry.id}`), 404, 'NOT_FOUND')
    expectError(await lift(lonerToo, entry.id), 404, 'NOT_FOUND')
  })

  it("blocks the tenant's messages already scheduled at delivery, and not another tenant's", async () => {
    const phone = newPhone()
    const sendAt = new Date(Date.now() + 2500).toISOString()
    const ours = await sendText(acme, phone, { sendAt })
    const theirs = await sendText(evil, phone, { sendAt })
    expect(ours.statusCode, ours.body).toBe(202)
    expect(theirs.statusCode, theirs.body).toBe(202)
    await suppress(acme, phone, 'Stop everything')
    const [canceled, sent] = await Promise.all([
      untilMessageStatus(app, acme.key, ours.json().messageId, ['canceled', 'sent']),
      untilMessageStatus(app, evil.key, theirs.json().messageId, ['canceled', 'sent']),
    ])
    expect(canceled).toMatchObject({ status: 'canceled', lastError: { code: 'RECIPIENT_OPTED_OUT' } })
    expect(sent.status).toBe('sent')
  })
})

describe('the Redis copy', () => {
  it("keeps each owner's entry beside the recipient's own, and is rebuilt so from Postgres", async () => {
    const phone = newPhone()
    await suppress(acme, phone, 'acme', 'marketing')
    await suppress(loner, phone, 'loner')
    // The recipient's own opt-out of marketing (the "Stop promotions" button), beside both.
    const tap = inboundMessage('quick_reply', { phone }, { text: 'Stop promotions' })
    expect((await postPlatformWebhook(app, messageWebhook(SANDBOX_NUMBER, tap), APP_SECRET)).statusCode).toBe(
      200,
    )
    const key = suppressionKey(world.queuePrefix, SANDBOX_NUMBER, recipientHasher({})(phone))
    const redis = new Redis(world.redisUrl)
    try {
      const before = await redis.get(key)
      expect(before?.split('|')).toHaveLength(3)
      // What a Redis restart without persistence leaves: no entry, no marker.
      await redis.del(key, suppressionsLoadedKey(world.queuePrefix))
      await waitFor(
        async () => (await redis.exists(suppressionsLoadedKey(world.queuePrefix))) === 1 || undefined,
        {
          what: 'the suppression copy rebuilt',
        },
      )
      const after = (await redis.get(key)) ?? ''
      expect(after.split('|').sort()).toEqual((before ?? '').split('|').sort())
      expectError(await sendText(loner, phone), 422, 'RECIPIENT_OPTED_OUT')
      expect((await sendText(lonerToo, phone)).statusCode).toBe(202)
      expect((await sendText(acme, phone)).statusCode).toBe(202)
      expect((await sendText(evil, phone)).statusCode).toBe(202)
    } finally {
      redis.disconnect()
    }
  })
})

describe("the recipient's own opt-out", () => {
  it('blocks every key on the number; no key lifts it, an admin does', async () => {
    const phone = newPhone()
    expect((await customerSays(phone, 'STOP')).statusCode).toBe(200)
    for (const key of [acme, evil, loner]) expectError(await sendText(key, phone), 422, 'RECIPIENT_OPTED_OUT')
    const listed = await app.inject({
      url: `/api/admin/suppressions?recipient=${encodeURIComponent(phone)}`,
      headers: asAdmin(),
    })
    const [entry] = listed.json().data
    expect(entry).toMatchObject({ source: 'keyword' })
    for (const key of [acme, evil]) {
      expectError(await lift(key, entry.id), 404, 'NOT_FOUND')
      expectError(await get(key, `/api/third-party/suppressions/${entry.id}`), 404, 'NOT_FOUND')
    }
    expectError(await sendText(evil, phone), 422, 'RECIPIENT_OPTED_OUT')
    // Every key on the number heard of it.
    expect(await consentEventsOf(evil, phone)).toEqual([{ type: 'recipient.opted_out' }])
    expect(await consentEventsOf(acme, phone)).toEqual([{ type: 'recipient.opted_out' }])

    const lifted = await app.inject({
      method: 'DELETE',
      url: `/api/admin/suppressions/${entry.id}`,
      headers: asAdmin(),
      payload: { reason: 'Support confirmed the opt-in' },
    })
    expect(lifted.statusCode, lifted.body).toBe(200)
    expect((await sendText(evil, phone)).statusCode).toBe(202)
  })
})

describe('GET /api/third-party/suppressions/:recipient', () => {
  it('tells a key whether a recipient is blocked for it, by what, without other tenants’ reasons or ids', async () => {
    const phone = newPhone()
    const reason = secret('acme marketing')
    const entry = await suppress(acme, phone, reason, 'marketing')
    const url = `/api/third-party/suppressions/${encodeURIComponent(phone)}`

    const forEvil = await get(evil, url)
    expect(forEvil.statusCode, forEvil.body).toBe(200)
    expect(forEvil.json()).toEqual({ recipient: phone, blocked: false, scope: null, entries: [] })
    expect(forEvil.body).not.toContain(entry.id)

    expect((await get(acme, url)).json()).toEqual({
      recipient: phone,
      blocked: true,
      scope: 'marketing',
      entries: [
        {
          scope: 'marketing',
          source: 'api',
          owner: 'tenant',
          senderId: 'default',
          id: entry.id,
          reason,
          createdAt: expect.any(String),
        },
      ],
    })

    // The recipient's own STOP then blocks both, named by source, its id and reason not given.
    await customerSays(phone, 'STOP')
    const both = await get(evil, url)
    expect(both.json()).toEqual({
      recipient: phone,
      blocked: true,
      scope: 'all',
      entries: [
        {
          scope: 'all',
          source: 'keyword',
          owner: 'recipient',
          senderId: 'default',
          id: null,
          reason: null,
          createdAt: expect.any(String),
        },
      ],
    })
    expect((await get(acme, url)).json()).toMatchObject({ scope: 'all', entries: [{}, {}] })
  })

  it('takes a userId, answers 400 for anything else and 404 for an unknown entry id', async () => {
    expect((await get(evil, '/api/third-party/suppressions/US.13491208655302741918')).json()).toMatchObject({
      blocked: false,
    })
    expectError(
      await get(evil, '/api/third-party/suppressions/not-a-recipient'),
      400,
      'VALIDATION_ERROR',
      /idOrRecipient/,
    )
    expectError(
      await get(evil, '/api/third-party/suppressions/5511987654321'),
      400,
      'VALIDATION_ERROR',
      /E\.164/,
    )
    expectError(
      await get(evil, '/api/third-party/suppressions/7d1f0b0e-1c7e-4b33-9a36-9f0d6c1b2a11'),
      404,
      'NOT_FOUND',
    )
    expectError(
      await app.inject({ url: '/api/third-party/suppressions/%2B5511987654321' }),
      401,
      'API_KEY_MISSING',
    )
  })
})

describe('export and erasure across tenants', () => {
  it("a key that never messaged a phone exports none of another tenant's entry or reason", async () => {
    const phone = newPhone()
    const reason = secret('acme reason')
    const entry = await suppress(acme, phone, reason)

    const exported = await app.inject({
      url: `/api/third-party/recipients/${encodeURIComponent(phone)}/export`,
      headers: as(evil),
    })
    expect(exported.statusCode, exported.body).toBe(200)
    expect(exported.body).not.toContain(reason)
    expect(exported.body).not.toContain(entry.id)
    // Its owner's export holds it.
    const own = await app.inject({
      url: `/api/third-party/recipients/${encodeURIComponent(phone)}/export`,
      headers: as(acme),
    })
    expect(own.body).toContain(reason)
  })

  it("a key's erasure of a phone leaves another tenant's entry readable, and still blocking", async () => {
    const phone = newPhone()
    const reason = secret('acme reason')
    const entry = await suppress(acme, phone, reason)

    const erasure = await app.inject({
      method: 'POST',
      url: '/api/third-party/erasures',
      headers: as(evil),
      payload: { phone },
    })
    expect(erasure.statusCode, erasure.body).toBe(202)
    const done = await waitFor(
      async () => {
        const view = (
          await get(evil, `/api/third-party/erasures/${erasure.json<ErasureView>().id}`)
        ).json<ErasureView>()
        return view.status === 'completed' || view.status === 'failed' ? view : undefined
      },
      { what: 'the erasure to end', timeoutMs: 20_000, intervalMs: 100 },
    )
    expect(done.status).toBe('completed')
    expect((await get(acme, `/api/third-party/suppressions/${entry.id}`)).json()).toMatchObject({
      recipient: phone,
      reason,
    })
    expect(
      (await get(acme, `/api/third-party/suppressions?recipient=${encodeURIComponent(phone)}`)).json().data,
    ).toHaveLength(1)
    expectError(await sendText(acme, phone), 422, 'RECIPIENT_OPTED_OUT')
  })
})
