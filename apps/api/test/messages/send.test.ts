import { MessageAccepted } from '@dispatch/contracts'
import Value from 'typebox/value'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  activeKey,
  buildTestApp,
  createWorld,
  decide,
  expectError,
  requestKey,
  SEND_SCOPES,
  type SendPath,
  send,
  storedMessages,
  type TestApp,
  type TestWorld,
  validSends,
} from '../helpers.ts'

let world: TestWorld
let app: TestApp
let queue: ReturnType<typeof storedMessages>
let key: string
beforeAll(async () => {
  world = await createWorld()
  app = await buildTestApp(world, { MESSAGE_RATE_PER_SECOND: '100000' })
  queue = storedMessages(world)
  key = (await activeKey(app, { scopes: SEND_SCOPES })).key
})
afterAll(async () => {
  await queue.close()
  await app.close()
  await world.close()
})

const PATHS = Object.keys(validSends) as SendPath[]
const TYPES = { 'send-text': 'text', 'send-template': 'template', 'send-image': 'image' } as const
const SCOPES = { 'send-text': 'send:free-text', 'send-template': 'send:template', 'send-image': 'send:image' }

describe.each(PATHS)('POST /api/third-party/messages/%s', (path) => {
  it('answers 202 with the queued message, and the job is in Redis under the message id', async () => {
    const before = Date.now()
    const res = await send(app, path, key)
    expect(res.statusCode, res.body).toBe(202)
    const body = res.json()
    expect(Value.Check(MessageAccepted, body), res.body).toBe(true)
    expect(body).toMatchObject({ status: 'queued', type: TYPES[path], phone: '+5511987654321' })
    expect(Date.parse(body.createdAt)).toBeGreaterThanOrEqual(before - 1000)

    const job = await queue.getJob(body.messageId)
    expect(job?.data).toEqual({
      messageId: body.messageId,
      apiKeyId: expect.any(String),
      acceptedAt: body.createdAt,
      senderId: 'default',
      priority: 'normal',
      // The default validity (MESSAGE_VALIDITY_SECONDS, 4 hours) from acceptance.
      expiresAt: new Date(Date.parse(body.createdAt) + 4 * 3600 * 1000).toISOString(),
      message: { type: TYPES[path], body: validSends[path] },
    })
  })

  it('answers at the path without /api too, as the spec example writes it', async () => {
    const res = await app.inject({
      method: 'POST',
      url: `/third-party/messages/${path}`,
      headers: { 'x-api-key': key },
      payload: validSends[path],
    })
    expect(res.statusCode, res.body).toBe(202)
  })

  it('refuses a missing, unknown, pending or revoked key, and a key without the scope', async () => {
    expectError(await send(app, path, ''), 401, 'API_KEY_MISSING')
    expectError(await send(app, path, 'mdk_dev_notarealkey000000000000000000000000'), 401, 'API_KEY_INVALID')
    const pending = await requestKey(app, { scopes: SEND_SCOPES })
    expectError(await send(app, path, pending.key), 403, 'API_KEY_NOT_ACTIVE', /pending/)
    const revoked = await activeKey(app, { scopes: SEND_SCOPES })
    await decide(app, revoked.id, 'revoke', { reason: 'leaked' })
    expectError(await send(app, path, revoked.key), 403, 'API_KEY_NOT_ACTIVE', /revoked/)
    const others = SEND_SCOPES.filter((scope) => scope !== SCOPES[path])
    const narrow = await activeKey(app, { scopes: others })
    expectError(await send(app, path, narrow.key), 403, 'INSUFFICIENT_SCOPE', new RegExp(SCOPES[path]))
  })

  it.each([
    ['missing phone', { phone: undefined }, /body\.phone is required/],
    ['a phone without the plus', { phone: '5511987654321' }, /body\.phone must match/],
    ['a phone starting with +0', { phone: '+0511987654321' }, /body\.phone must match/],
    ['a phone too short', { phone: '+1234567' }, /body\.phone must match/],
    ['a phone too long', { phone: '+1234567890123456' }, /body\.phone must match/],
    ['a phone that is a number', { phone: 5511987654321 }, /body\.phone must be string/],
    ['an unknown property', { urgency: 'high' }, /unknown property "urgency"/],
  ])('400 for %s, naming the field', async (_case, change, message) => {
    const res = await send(app, path, key, { ...validSends[path], ...change })
    expectError(res, 400, 'VALIDATION_ERROR', message)
  })

  it('400 for a body that is not JSON, or not an object; 415 for another content type', async () => {
    const raw = (payload: string, type = 'application/json') =>
      app.inject({
        method: 'POST',
        url: `/api/third-party/messages/${path}`,
        headers: { 'x-api-key': key, 'content-type': type },
        payload,
      })
    expectError(await raw('{"phone": '), 400, 'VALIDATION_ERROR')
    expectError(await raw('[]'), 400, 'VALIDATION_ERROR')
    expectError(
      await raw('phone=+5511987654321', 'application/x-www-form-urlencoded'),
      415,
      'UNSUPPORTED_MEDIA_TYPE',
    )
    expectError(
      await raw(JSON.stringify({ ...validSends[path], pad: 'x'.repeat(70_000) })),
      413,
      'PAYLOAD_TOO_LARGE',
    )
  })
})

describe('validation rules of each message type', () => {
  const long = (n: number) => 'x'.repeat(n)
  it.each<[string, SendPath, Record<string, unknown>, RegExp]>([
    ['text: text missing', 'send-text', { text: undefined }, /body\.text is required/],
    ['text: text empty', 'send-text', { text: '' }, /body\.text must NOT have fewer than 1 characters/],
    ['text: text blank', 'send-text', { text: '   ' }, /body\.text must match/],
    ['text: text over 4096', 'send-text', { text: long(4097) }, /body\.text must NOT have more than 4096/],
    [
      'template: templateId missing',
      'send-template',
      { templateId: undefined },
      /body\.templateId is required/,
    ],
    ['template: language missing', 'send-template', { language: undefined }, /body\.language is required/],
    ['template: language pt-br', 'send-template', { language: 'pt-br' }, /body\.language must match/],
    ['template: language PT_BR', 'send-template', { language: 'PT_BR' }, /body\.language must match/],
    [
      'template: a variable not a string',
      'send-template',
      { variables: { name: 42 } },
      /body\.variables\.name must be string/,
    ],
    [
      'template: buttonIndex 10',
      'send-template',
      { buttonVariables: [{ buttonIndex: 10, text: 'x', type: 'URL' }] },
      /body\.buttonVariables\[0\]\.buttonIndex must be <= 9/,
    ],
    [
      'template: buttonIndex negative',
      'send-template',
      { buttonVariables: [{ buttonIndex: -1, text: 'x', type: 'URL' }] },
      /buttonIndex must be >= 0/,
    ],
    [
      'template: a header variable without originalMediaId',
      'send-template',
      { headerVariables: [{ type: 'image', value: null }] },
      /body\.headerVariables\[0\]\.originalMediaId is required/,
    ],
    [
      'template: an unknown property in a button',
      'send-template',
      { buttonVariables: [{ buttonIndex: 0, text: 'x', type: 'URL', url: 'y' }] },
      /body\.buttonVariables\[0\] has unknown property "url"/,
    ],
    ['image: image missing', 'send-image', { image: undefined }, /body\.image is required/],
    [
      'image: mediaId missing',
      'send-image',
      { image: { text: 'hi' } },
      /body\.image must have either mediaId or link/,
    ],
    [
      'image: caption over 1024',
      'send-image',
      { image: { mediaId: 'm', text: long(1025) } },
      /body\.image\.text must NOT have more than 1024/,
    ],
    [
      'image: unknown property in image',
      'send-image',
      { image: { mediaId: 'm', url: 'u' } },
      /body\.image has unknown property "url"/,
    ],
  ])('400 for %s', async (_case, path, change, message) => {
    const res = await send(app, path, key, { ...validSends[path], ...change })
    expectError(res, 400, 'VALIDATION_ERROR', message)
  })

  it('accepts the smallest valid bodies: optional template parts and the caption left out', async () => {
    const template = { phone: '+14155550123', templateId: 'hello_world', language: 'en' }
    expect((await send(app, 'send-template', key, template)).statusCode).toBe(202)
    expect(
      (await send(app, 'send-image', key, { phone: '+14155550123', image: { mediaId: 'm-1' } })).statusCode,
    ).toBe(202)
    expect((await send(app, 'send-text', key, { phone: '+14155550123', text: long(4096) })).statusCode).toBe(
      202,
    )
  })

  it('enqueues nothing for a refused request', async () => {
    const before = await queue.count()
    await send(app, 'send-text', key, { phone: 'nope', text: 'hi' })
    await send(app, 'send-image', 'mdk_dev_unknown', validSends['send-image'])
    expect(await queue.count()).toBe(before)
  })
})
