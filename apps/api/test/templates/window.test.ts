import { randomBytes } from 'node:crypto'
import { serviceWindowsLoadedKey } from '@dispatch/runtime'
import { type FakeWhatsApp, startFakeWhatsApp, waitFor } from '@dispatch/testing'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  asAdmin,
  buildTestApp,
  createWorld,
  expectError,
  SEND_SCOPES,
  send,
  storedMessages,
  type TestApp,
  type TestWorld,
  validSends,
} from '../helpers.ts'
import { keyOf, newPhone, replyFrom, syncedSender } from './setup.ts'

const SECRETS_KEY = randomBytes(32).toString('base64')
const APP_SECRET = 'app-secret-0123456789'
const { phone: _phone, ...fallbackTemplate } = validSends['send-template']

let world: TestWorld
let app: TestApp
let fake: FakeWhatsApp
let redis: Redis
let sender: { id: string; phoneNumberId: string }
let key: { id: string; key: string }

const sendText = (phone: string, extra: object = {}) =>
  send(app, 'send-text', key.key, { phone, text: 'Your table is ready', ...extra })

const reply = (phone: string, at?: number) => replyFrom(app, APP_SECRET, sender.phoneNumberId, phone, at)

const validate = (payload: object) =>
  app.inject({
    method: 'POST',
    url: '/api/third-party/messages/validate',
    headers: { 'x-api-key': key.key },
    payload,
  })

beforeAll(async () => {
  world = await createWorld()
  fake = await startFakeWhatsApp()
  app = await buildTestApp(world, {
    SECRETS_KEY,
    WHATSAPP_API_URL: fake.url,
    WHATSAPP_APP_SECRET: APP_SECRET,
  })
  redis = new Redis(world.redisUrl)
  sender = await syncedSender(app, fake)
  key = await keyOf(app, sender.id, SEND_SCOPES)
  const enforced = await app.inject({
    method: 'PATCH',
    url: `/api/admin/senders/${sender.id}`,
    headers: asAdmin(),
    payload: { serviceWindowPolicy: 'enforce' },
  })
  expect(enforced.json()).toMatchObject({ serviceWindowPolicy: 'enforce' })
  // What a worker sets once the Redis copy of the windows is complete.
  await redis.set(serviceWindowsLoadedKey(world.queuePrefix), '1')
})

afterAll(async () => {
  redis?.disconnect()
  await app?.close()
  await fake?.close()
  await world?.close()
})

describe('the 24-hour window under enforce', () => {
  it('refuses free text to a recipient who has not written, and stores nothing', async () => {
    const store = storedMessages(world, sender.id)
    const before = await store.count()
    const phone = newPhone()
    expectError(await sendText(phone), 422, 'OUTSIDE_SERVICE_WINDOW', /window with \+55\d+ is closed/)
    expectError(
      await send(app, 'send-image', key.key, { phone, image: { mediaId: 'media-1' } }),
      422,
      'OUTSIDE_SERVICE_WINDOW',
    )
    expect(await store.count()).toBe(before)
    await store.close()
  })

  it('accepts it once the recipient wrote, and only within 24 hours of that', async () => {
    const phone = newPhone()
    expect((await reply(phone)).statusCode).toBe(200)
    expect((await sendText(phone)).statusCode).toBe(202)

    const stale = newPhone()
    expect((await reply(stale, Date.now() - 25 * 3600 * 1000)).statusCode).toBe(200)
    expectError(await sendText(stale), 422, 'OUTSIDE_SERVICE_WINDOW')
  })

  it('accepts a closed-window message that carries a fallback template, and any template send', async () => {
    const phone = newPhone()
    expect((await sendText(phone, { fallbackTemplate })).statusCode).toBe(202)
    expect(
      (await send(app, 'send-template', key.key, { ...validSends['send-template'], phone })).statusCode,
    ).toBe(202)
  })

  it('accepts when the windows are unknown (the Redis copy not rebuilt yet): the platform decides', async () => {
    await redis.del(serviceWindowsLoadedKey(world.queuePrefix))
    // Each instance reads the marker at most once a second.
    await waitFor(async () => (await sendText(newPhone())).statusCode === 202 || undefined, {
      what: 'a send accepted while the windows are unknown',
      timeoutMs: 3000,
    })
    await redis.set(serviceWindowsLoadedKey(world.queuePrefix), '1')
    await waitFor(async () => (await sendText(newPhone())).statusCode === 422 || undefined, {
      what: 'closed windows known closed again',
      timeoutMs: 3000,
    })
  })

  it('judges each batch item’s window on its own', async () => {
    const open = newPhone()
    await reply(open)
    const res = await app.inject({
      method: 'POST',
      url: '/api/third-party/messages/batch',
      headers: { 'x-api-key': key.key },
      payload: {
        messages: [
          { type: 'text', phone: open, text: 'a' },
          { type: 'text', phone: newPhone(), text: 'b' },
          { type: 'text', phone: newPhone(), text: 'c', fallbackTemplate },
        ],
      },
    })
    expect(res.statusCode, res.body).toBe(202)
    expect(
      res.json().results.map((r: { error?: { errorCode: string } }) => r.error?.errorCode ?? 'ok'),
    ).toEqual(['ok', 'OUTSIDE_SERVICE_WINDOW', 'ok'])
  })

  it('checks nothing once the policy is off again', async () => {
    const off = await app.inject({
      method: 'PATCH',
      url: `/api/admin/senders/${sender.id}`,
      headers: asAdmin(),
      payload: { serviceWindowPolicy: 'off' },
    })
    expect(off.statusCode).toBe(200)
    expect((await sendText(newPhone())).statusCode).toBe(202)
    await app.inject({
      method: 'PATCH',
      url: `/api/admin/senders/${sender.id}`,
      headers: asAdmin(),
      payload: { serviceWindowPolicy: 'enforce' },
    })
  })
})

describe('validate', () => {
  it('answers what the send would, for every check, and queues nothing', async () => {
    const store = storedMessages(world, sender.id)
    const before = await store.count()
    const template = { type: 'template', ...validSends['send-template'] }
    expect((await validate(template)).json()).toEqual({ valid: true })
    const cases: Array<[object, string]> = [
      [{ ...template, templateId: 'nope' }, 'TEMPLATE_NOT_FOUND'],
      [
        {
          ...template,
          templateId: 'flash_sale',
          language: 'en_US',
          variables: { '1': 'x' },
          headerVariables: [],
          buttonVariables: [],
        },
        'TEMPLATE_NOT_APPROVED',
      ],
      [{ ...template, variables: {} }, 'TEMPLATE_PARAMETERS_MISMATCH'],
      [{ type: 'text', phone: newPhone(), text: 'hi' }, 'OUTSIDE_SERVICE_WINDOW'],
      [{ type: 'text', phone: 'nope', text: 'hi' }, 'VALIDATION_ERROR'],
      [{ type: 'fax', phone: newPhone() }, 'VALIDATION_ERROR'],
      [{ ...template, priority: 'high' }, 'PRIORITY_NOT_ALLOWED'],
    ]
    for (const [payload, errorCode] of cases) {
      const res = await validate(payload)
      expect(res.statusCode, res.body).toBe(200)
      const sent = await send(
        app,
        (payload as { type: string }).type === 'text' ? 'send-text' : 'send-template',
        key.key,
        Object.fromEntries(Object.entries(payload).filter(([k]) => k !== 'type')),
      )
      expect(res.json(), JSON.stringify(payload)).toEqual({
        valid: false,
        error: expect.objectContaining({ errorCode }),
      })
      if ((payload as { type: string }).type !== 'fax') expect(res.json().error).toEqual(sent.json())
    }
    const batch = await validate({
      messages: [template, cases[0]?.[0], { type: 'image', phone: newPhone(), image: { mediaId: 'm' } }],
    })
    expect(batch.json()).toEqual({
      valid: false,
      results: [
        { index: 0, valid: true },
        { index: 1, valid: false, error: expect.objectContaining({ errorCode: 'TEMPLATE_NOT_FOUND' }) },
        {
          index: 2,
          valid: false,
          error: expect.objectContaining({
            errorCode: 'OUTSIDE_SERVICE_WINDOW',
            message: expect.stringContaining('body.messages[2].phone'),
          }),
        },
      ],
    })
    expect(await store.count()).toBe(before)
    await store.close()
  })

  it('needs an active key, and the scope of each item’s type', async () => {
    const textOnly = await keyOf(app, sender.id, ['send:free-text'])
    const res = await app.inject({
      method: 'POST',
      url: '/api/third-party/messages/validate',
      headers: { 'x-api-key': textOnly.key },
      payload: { type: 'template', ...validSends['send-template'] },
    })
    expect(res.json()).toEqual({
      valid: false,
      error: expect.objectContaining({ errorCode: 'INSUFFICIENT_SCOPE' }),
    })
    expectError(
      await app.inject({
        method: 'POST',
        url: '/api/third-party/messages/validate',
        payload: { type: 'text' },
      }),
      401,
      'API_KEY_MISSING',
    )
    expectError(await validate({ messages: [] }), 400, 'VALIDATION_ERROR')
  })
})
