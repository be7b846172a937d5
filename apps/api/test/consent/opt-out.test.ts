import { randomBytes } from 'node:crypto'
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
  addWebhookEndpoint,
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

const APP_SECRET = 'app-secret-0123456789'
const SANDBOX_NUMBER = '100000000000001'

let world: TestWorld
let app: TestApp
let second: TestApp
let receiver: WebhookReceiver
let worker: RunningWorker
let acme: { id: string; key: string }
let phones = 0
const newPhone = () => `+55118${String(Date.now()).slice(-6)}${phones++}`.slice(0, 14)

const sendText = (on: TestApp, phone: string, key = acme.key) =>
  on.inject({
    method: 'POST',
    url: '/api/third-party/messages/send-text',
    headers: { 'x-api-key': key },
    payload: { phone, text: 'Our weekly offers' },
  })

const customerSays = (phone: string, text: string) =>
  postPlatformWebhook(
    app,
    messageWebhook(SANDBOX_NUMBER, inboundMessage('text', { phone }, { text })),
    APP_SECRET,
  )

beforeAll(async () => {
  world = await createWorld()
  receiver = await startWebhookReceiver()
  app = await buildTestApp(world, { WHATSAPP_APP_SECRET: APP_SECRET, SCHEDULE_MIN_AHEAD_SECONDS: '1' })
  second = await buildTestApp(world, { WHATSAPP_APP_SECRET: APP_SECRET })
  worker = await startTestWorker(world, { SERVICE_WINDOW_CHECK_MS: '200' })
  acme = await activeKey(app, {
    scopes: ['send:free-text', 'read:messages', 'manage:webhooks', 'manage:suppressions'],
  })
  await addWebhookEndpoint(app, acme.key, {
    url: receiver.url,
    events: ['recipient.opted_out', 'recipient.opted_in'],
  })
})

afterAll(async () => {
  await worker?.close()
  await second?.close()
  await app?.close()
  await receiver?.close()
  await world?.close()
})

describe('opt-out keywords', () => {
  it.each([['STOP'], ['  stop. '], ['Párar'], ['SAIR'], ['baja']])(
    '%j from the customer: the next send is 422 on two API instances; START lifts it',
    async (word) => {
      const phone = newPhone()
      expect((await sendText(app, phone)).statusCode).toBe(202)
      expect((await customerSays(phone, word)).statusCode).toBe(200)
      for (const on of [app, second]) {
        expectError(
          await sendText(on, phone),
          422,
          'RECIPIENT_OPTED_OUT',
          /body\.phone: \+55\d+ opted out of messages/,
        )
      }
      const event = await waitFor(() =>
        receiver.received.find((r) => r.json.type === 'recipient.opted_out' && r.json.data.phone === phone),
      )
      expect(event.json.data).toMatchObject({ phone, senderId: 'default', scope: 'all', source: 'keyword' })
      expect((await customerSays(phone, 'Start')).statusCode).toBe(200)
      expect((await sendText(second, phone)).statusCode).toBe(202)
      await waitFor(() =>
        receiver.received.find((r) => r.json.type === 'recipient.opted_in' && r.json.data.phone === phone),
      )
    },
  )

  it('a message scheduled before the STOP ends canceled with that reason, never sent', async () => {
    const phone = newPhone()
    const scheduled = await app.inject({
      method: 'POST',
      url: '/api/third-party/messages/send-text',
      headers: { 'x-api-key': acme.key },
      payload: { phone, text: 'Reminder', sendAt: new Date(Date.now() + 2000).toISOString() },
    })
    expect(scheduled.statusCode, scheduled.body).toBe(202)
    expect((await customerSays(phone, 'stop')).statusCode).toBe(200)
    const view = await untilMessageStatus(app, acme.key, scheduled.json().messageId, ['canceled', 'sent'])
    expect(view.status).toBe('canceled')
    expect(view.lastError).toMatchObject({ code: 'RECIPIENT_OPTED_OUT' })
  })

  it('a text that only contains the word is not an opt-out', async () => {
    const phone = newPhone()
    expect((await customerSays(phone, 'please do not stop sending me offers')).statusCode).toBe(200)
    expect((await sendText(app, phone)).statusCode).toBe(202)
  })

  it('refuses the opted-out item of a batch with its own code, and queues the others', async () => {
    const [out, fine] = [newPhone(), newPhone()]
    await customerSays(out, 'STOP')
    const res = await app.inject({
      method: 'POST',
      url: '/api/third-party/messages/batch',
      headers: { 'x-api-key': acme.key },
      payload: {
        messages: [
          { type: 'text', phone: out, text: 'hi' },
          { type: 'text', phone: fine, text: 'hi' },
        ],
      },
    })
    expect(res.statusCode, res.body).toBe(202)
    expect(res.json().results[0].error).toMatchObject({ errorCode: 'RECIPIENT_OPTED_OUT' })
    expect(res.json().results[1]).toMatchObject({ status: 'queued' })
  })
})

describe('the Redis copy', () => {
  it('is rebuilt from Postgres when Redis loses it, and refuses again', async () => {
    const phone = newPhone()
    await customerSays(phone, 'STOP')
    expectError(await sendText(app, phone), 422, 'RECIPIENT_OPTED_OUT')
    const redis = new Redis(world.redisUrl)
    try {
      // What a Redis restart without persistence leaves: no entry, no marker.
      await redis.del(
        suppressionKey(world.queuePrefix, SANDBOX_NUMBER, recipientHasher({})(phone)),
        suppressionsLoadedKey(world.queuePrefix),
      )
      await waitFor(
        async () => (await redis.exists(suppressionsLoadedKey(world.queuePrefix))) === 1 || undefined,
        {
          what: 'the suppression copy rebuilt',
        },
      )
      expect(
        await redis.get(suppressionKey(world.queuePrefix, SANDBOX_NUMBER, recipientHasher({})(phone))),
      ).toBe('all')
      expectError(await sendText(second, phone), 422, 'RECIPIENT_OPTED_OUT')
    } finally {
      redis.disconnect()
    }
  })
})

describe('the suppression list through the API', () => {
  it('a key adds, reads and lifts (with a reason, audited) entries of its own sender only', async () => {
    const phone = newPhone()
    const added = await app.inject({
      method: 'POST',
      url: '/api/third-party/suppressions',
      headers: { 'x-api-key': acme.key },
      payload: { phone, reason: 'Asked by phone call' },
    })
    expect(added.statusCode, added.body).toBe(201)
    expect(added.json()).toMatchObject({ recipient: phone, scope: 'all', source: 'api', senderId: 'default' })
    expectError(await sendText(app, phone), 422, 'RECIPIENT_OPTED_OUT')

    // Another key, on another sender, sees none of it and cannot lift it.
    const sender = await app.inject({
      method: 'POST',
      url: '/api/admin/senders',
      headers: asAdmin(),
      payload: {
        phoneNumberId: `7${randomBytes(5).readUIntBE(0, 5)}`,
        displayName: 'Other',
        accessToken: 'EAAG-other-token',
      },
    })
    expect(sender.statusCode, sender.body).toBe(201)
    const other = await activeKey(app, { scopes: ['manage:suppressions'] })
    const bound = await app.inject({
      method: 'PATCH',
      url: `/api/admin/api-keys/${other.id}`,
      headers: asAdmin(),
      payload: { senderId: sender.json().id },
    })
    expect(bound.statusCode, bound.body).toBe(200)
    const asOther = { 'x-api-key': other.key }
    expectError(
      await app.inject({
        method: 'GET',
        url: `/api/third-party/suppressions/${added.json().id}`,
        headers: asOther,
      }),
      404,
      'NOT_FOUND',
    )
    expectError(
      await app.inject({
        method: 'DELETE',
        url: `/api/third-party/suppressions/${added.json().id}`,
        headers: asOther,
        payload: { reason: 'x' },
      }),
      404,
      'NOT_FOUND',
    )
    const otherList = await app.inject({
      method: 'GET',
      url: '/api/third-party/suppressions?take=100',
      headers: asOther,
    })
    expect(otherList.json().data).toEqual([])
    // Without the scope: 403.
    const plain = await activeKey(app, { scopes: ['send:free-text'] })
    expectError(
      await app.inject({
        method: 'GET',
        url: '/api/third-party/suppressions',
        headers: { 'x-api-key': plain.key },
      }),
      403,
      'INSUFFICIENT_SCOPE',
    )

    const list = await app.inject({
      method: 'GET',
      url: `/api/third-party/suppressions?recipient=${encodeURIComponent(phone)}`,
      headers: { 'x-api-key': acme.key },
    })
    expect(list.json()).toMatchObject({ itemCount: 1, data: [{ id: added.json().id }] })
    expectError(
      await app.inject({
        method: 'DELETE',
        url: `/api/third-party/suppressions/${added.json().id}`,
        headers: { 'x-api-key': acme.key },
        payload: {},
      }),
      400,
      'VALIDATION_ERROR',
      /body\.reason is required/,
    )
    const lifted = await app.inject({
      method: 'DELETE',
      url: `/api/third-party/suppressions/${added.json().id}`,
      headers: { 'x-api-key': acme.key },
      payload: { reason: 'Customer asked again' },
    })
    expect(lifted.statusCode, lifted.body).toBe(200)
    expect((await sendText(app, phone)).statusCode).toBe(202)
    const [audit] = await world.sql<{ actor: string; details: { reason: string } }[]>`
      select actor, details from admin_audit_log where target_type = 'suppression' and target_id = ${added.json().id}`
    expect(audit).toEqual({
      actor: `key:${acme.id}`,
      details: expect.objectContaining({ reason: 'Customer asked again' }),
    })
  })

  it('admins list every sender’s entries and lift any, under their name', async () => {
    const phone = newPhone()
    await customerSays(phone, 'STOP')
    const list = await app.inject({
      method: 'GET',
      url: `/api/admin/suppressions?recipient=${encodeURIComponent(phone)}`,
      headers: asAdmin(),
    })
    expect(list.statusCode, list.body).toBe(200)
    const [entry] = list.json().data
    expect(entry).toMatchObject({ recipient: phone, source: 'keyword', senderId: 'default' })
    expectError(
      await app.inject({ method: 'GET', url: '/api/admin/suppressions' }),
      401,
      'ADMIN_AUTH_REQUIRED',
    )
    const lifted = await app.inject({
      method: 'DELETE',
      url: `/api/admin/suppressions/${entry.id}`,
      headers: asAdmin(),
      payload: { reason: 'Opt-in confirmed by support' },
    })
    expect(lifted.statusCode, lifted.body).toBe(200)
    const [audit] = await world.sql<{ actor: string }[]>`
      select actor from admin_audit_log where target_type = 'suppression' and target_id = ${entry.id}`
    expect(audit?.actor).toBe('admin:ana')
  })
})
