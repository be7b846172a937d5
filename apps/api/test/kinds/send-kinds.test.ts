import type { MessageView } from '@dispatch/contracts'
import {
  type FakeWhatsApp,
  startFakeWhatsApp,
  startWebhookReceiver,
  type WebhookReceiver,
  waitFor,
} from '@dispatch/testing'
import type { RunningWorker } from '@dispatch/worker'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  activeKey,
  addWebhookEndpoint,
  buildTestApp,
  createWorld,
  expectError,
  startTestWorker,
  type TestApp,
  type TestWorld,
  untilMessageStatus,
} from '../helpers.ts'
import { KIND_SCOPES, KINDS, MEDIA_ID, pathOf } from './setup.ts'

const NUMBER = '106540352242922'
const PHONE = '+5511987650001'

let world: TestWorld
let app: TestApp
let fake: FakeWhatsApp
let receiver: WebhookReceiver
let worker: RunningWorker
let key: { id: string; key: string }

const post = (path: string, payload: object, apiKey = key.key) =>
  app.inject({
    method: 'POST',
    url: `/api/third-party/messages/${path}`,
    headers: { 'x-api-key': apiKey },
    payload,
  })

/** What the fake Cloud API got for this message, once it took it. */
const platformBody = (messageId: string) =>
  waitFor(() => fake.requests.find((r) => r.messageId === messageId && r.platformMessageId), {
    what: `message ${messageId} at the platform`,
  })

beforeAll(async () => {
  world = await createWorld()
  fake = await startFakeWhatsApp()
  receiver = await startWebhookReceiver()
  app = await buildTestApp(world, { SCHEDULE_MIN_AHEAD_SECONDS: '1' })
  key = await activeKey(app, { scopes: [...KIND_SCOPES, 'manage:webhooks'] })
  await addWebhookEndpoint(app, key.key, { url: receiver.url, events: ['message.sent'] })
  worker = await startTestWorker(world, {
    WHATSAPP_API_URL: fake.url,
    WHATSAPP_ACCESS_TOKEN: 'default-token',
    WHATSAPP_PHONE_NUMBER_ID: NUMBER,
    ADMISSION_INTERVAL_MS: '20',
  })
})

afterAll(async () => {
  await worker?.close()
  await app?.close()
  await receiver?.close()
  await fake?.close()
  await world?.close()
})

describe('each new kind of message, sent', () => {
  it.each(KINDS.map((kind) => [`${kind.type} ${JSON.stringify(kind.body).slice(0, 40)}`, kind]))(
    '%s: 202, the exact Cloud API payload, sent, and its event',
    async (_name, kind) => {
      const res = await post(pathOf(kind.type), { phone: PHONE, ...kind.body, clientReference: 'ref-1' })
      expect(res.statusCode, res.body).toBe(202)
      const { messageId } = res.json()
      expect(res.json()).toMatchObject({ type: kind.type, phone: PHONE, status: 'queued' })
      const request = await platformBody(messageId)
      expect(request.body).toEqual({
        messaging_product: 'whatsapp',
        recipient_type: 'individual',
        to: PHONE.slice(1),
        biz_opaque_callback_data: messageId,
        type: kind.type,
        [kind.type]: kind.platform,
      })
      const view = await untilMessageStatus(app, key.key, messageId, 'sent')
      expect(view).toMatchObject({ type: kind.type, phone: PHONE, userId: null, clientReference: 'ref-1' })
      const event = await waitFor(
        () =>
          receiver.received.find(
            (r) => r.json.data.messageId === messageId && r.json.type === 'message.sent',
          ),
        { what: `message.sent for ${messageId}` },
      )
      expect(event.json.data).toMatchObject({ type: kind.type, phone: PHONE, status: 'sent' })
    },
  )

  it('send-image takes a link too, its spec body otherwise unchanged (text is the caption)', async () => {
    const res = await post('send-image', {
      phone: PHONE,
      image: { link: 'https://cdn.example.com/receipt.jpg', text: 'Your receipt' },
    })
    expect(res.statusCode, res.body).toBe(202)
    expect((await platformBody(res.json().messageId)).body.image).toEqual({
      link: 'https://cdn.example.com/receipt.jpg',
      caption: 'Your receipt',
    })
    await untilMessageStatus(app, key.key, res.json().messageId, 'sent')
  })

  it('a new kind takes validitySeconds and priority like any message', async () => {
    const body = { phone: PHONE, location: { latitude: 1.5, longitude: 2.5 } }
    const low = await post('send-location', { ...body, priority: 'low', validitySeconds: 60 })
    expect(low.statusCode, low.body).toBe(202)
    expect((await platformBody(low.json().messageId)).body.location).toEqual(body.location)
    const view = await untilMessageStatus(app, key.key, low.json().messageId, 'sent')
    expect(Date.parse(view.expiresAt as string) - Date.parse(view.createdAt)).toBe(60_000)
    // `high` is for keys an admin marked transactional, whatever the kind.
    expectError(await post('send-location', { ...body, priority: 'high' }), 403, 'PRIORITY_NOT_ALLOWED')
  })

  it('a new kind is scheduled, canceled and replayed by its Idempotency-Key like any message', async () => {
    const body = {
      phone: PHONE,
      location: { latitude: 1.5, longitude: 2.5 },
      sendAt: new Date(Date.now() + 60_000).toISOString(),
    }
    const headers = { 'x-api-key': key.key, 'idempotency-key': `loc-${Date.now()}` }
    const first = await app.inject({
      method: 'POST',
      url: '/api/third-party/messages/send-location',
      headers,
      payload: body,
    })
    expect(first.statusCode, first.body).toBe(202)
    expect(first.json()).toMatchObject({ type: 'location', status: 'scheduled' })
    const replay = await app.inject({
      method: 'POST',
      url: '/api/third-party/messages/send-location',
      headers,
      payload: body,
    })
    expect(replay.headers['idempotent-replayed']).toBe('true')
    expect(replay.json().messageId).toBe(first.json().messageId)
    const canceled = await app.inject({
      method: 'POST',
      url: `/api/third-party/messages/${first.json().messageId}/cancel`,
      headers: { 'x-api-key': key.key },
    })
    expect(canceled.statusCode, canceled.body).toBe(200)
    expect((await untilMessageStatus(app, key.key, first.json().messageId, 'canceled')).type).toBe('location')
    expect(fake.requests.some((r) => r.messageId === first.json().messageId)).toBe(false)
  })

  it('lists messages by type, and a list filter on a new type reads only those', async () => {
    const res = await app.inject({
      method: 'GET',
      url: '/api/third-party/messages?take=100&type=location,contacts',
      headers: { 'x-api-key': key.key },
    })
    expect(res.statusCode, res.body).toBe(200)
    const types = new Set(res.json().data.map((m: MessageView) => m.type))
    expect(types).toEqual(new Set(['location', 'contacts']))
  })

  it('a reaction and a reply name a message by its Dispatch id: the platform gets its wamid', async () => {
    const first = await post('send-text', { phone: PHONE, text: 'Your order shipped' })
    const sent = await untilMessageStatus(app, key.key, first.json().messageId, 'sent')
    const reaction = await post('send-reaction', {
      phone: PHONE,
      reaction: { messageId: sent.messageId, emoji: '📦' },
    })
    expect(reaction.statusCode, reaction.body).toBe(202)
    expect((await platformBody(reaction.json().messageId)).body.reaction).toEqual({
      message_id: sent.platformMessageId,
      emoji: '📦',
    })
    const quoting = await post('send-document', {
      phone: PHONE,
      document: { mediaId: MEDIA_ID, filename: 'label.pdf' },
      replyTo: sent.messageId,
    })
    expect(quoting.statusCode, quoting.body).toBe(202)
    expect((await platformBody(quoting.json().messageId)).body.context).toEqual({
      message_id: sent.platformMessageId,
    })
    // A wamid is passed on as given.
    const byWamid = await post('send-text', {
      phone: PHONE,
      text: 'See above',
      replyTo: 'wamid.HBgLNTUxMTk4NzY1NDMyMQ',
    })
    expect((await platformBody(byWamid.json().messageId)).body.context).toEqual({
      message_id: 'wamid.HBgLNTUxMTk4NzY1NDMyMQ',
    })
  })

  it("another key's message is unknown to a reaction and a reply: failed as an unknown id, nothing sent", async () => {
    const other = await activeKey(app, { tenantId: 'other-tenant', scopes: KIND_SCOPES })
    const theirs = await post('send-text', { phone: PHONE, text: 'Their message' }, other.key)
    await untilMessageStatus(app, other.key, theirs.json().messageId, 'sent')
    for (const [path, body] of [
      ['send-reaction', { reaction: { messageId: theirs.json().messageId, emoji: '👍' } }],
      ['send-text', { text: 'Quoting theirs', replyTo: theirs.json().messageId }],
    ] as const) {
      const res = await post(path, { phone: PHONE, ...body })
      expect(res.statusCode, res.body).toBe(202)
      const failed = await untilMessageStatus(app, key.key, res.json().messageId, 'failed')
      expect(failed.lastError).toMatchObject({ code: 'REFERENCE_NOT_FOUND' })
      expect(fake.requests.some((r) => r.messageId === res.json().messageId)).toBe(false)
    }
  })

  it('a reply to a message Dispatch never sent fails it, naming the reference', async () => {
    const res = await post('send-text', {
      phone: PHONE,
      text: 'Hello',
      replyTo: '00000000-0000-4000-8000-000000000000',
    })
    expect(res.statusCode, res.body).toBe(202)
    const failed = await untilMessageStatus(app, key.key, res.json().messageId, 'failed')
    expect(failed.lastError).toMatchObject({ code: 'REFERENCE_NOT_FOUND' })
    expect(fake.requests.some((r) => r.messageId === res.json().messageId)).toBe(false)
  })

  it('takes every kind in one batch, each with its type', async () => {
    const items = KINDS.map((kind) => ({ type: kind.type, phone: PHONE, ...kind.body }))
    const res = await post('batch', { messages: items })
    expect(res.statusCode, res.body).toBe(202)
    expect(res.json()).toMatchObject({ accepted: items.length, rejected: 0 })
    for (const [i, result] of (res.json().results as Array<{ messageId: string }>).entries()) {
      const request = await platformBody(result.messageId)
      expect(request.body[items[i]?.type as string]).toEqual(KINDS[i]?.platform)
    }
  })
})

describe('Meta limits, checked at accept', () => {
  const buttons = (n: number, title = 'Yes') =>
    Array.from({ length: n }, (_, i) => ({ type: 'reply', reply: { id: `b${i}`, title: `${title}${i}` } }))
  const rows = (n: number) => Array.from({ length: n }, (_, i) => ({ id: `r${i}`, title: `Row ${i}` }))
  const interactive = (value: object) => ({ interactive: { body: { text: 'Pick one' }, ...value } })
  it.each([
    [
      '4 reply buttons',
      'send-interactive',
      interactive({ type: 'button', action: { buttons: buttons(4) } }),
      /body\.interactive\.action\.buttons must NOT have more than 3 items/,
    ],
    [
      'a button title of 21',
      'send-interactive',
      interactive({
        type: 'button',
        action: { buttons: [{ type: 'reply', reply: { id: 'a', title: 'x'.repeat(21) } }] },
      }),
      /body\.interactive\.action\.buttons\[0\]\.reply\.title must NOT have more than 20 characters/,
    ],
    [
      'two buttons with one id',
      'send-interactive',
      interactive({
        type: 'button',
        action: {
          buttons: [
            { type: 'reply', reply: { id: 'a', title: 'A' } },
            { type: 'reply', reply: { id: 'a', title: 'B' } },
          ],
        },
      }),
      /body\.interactive\.action\.buttons has two button ids "a"/,
    ],
    [
      '11 list rows in two sections',
      'send-interactive',
      interactive({
        type: 'list',
        action: {
          button: 'See',
          sections: [
            { title: 'A', rows: rows(6) },
            { title: 'B', rows: rows(5).map((r) => ({ ...r, id: `x${r.id}` })) },
          ],
        },
      }),
      /body\.interactive\.action\.sections must hold at most 10 rows in all/,
    ],
    [
      'a list header of another type',
      'send-interactive',
      interactive({
        type: 'list',
        header: { type: 'image', image: { mediaId: 'm' } },
        action: { button: 'See', sections: [{ rows: rows(1) }] },
      }),
      /body\.interactive\.header\.(text is required|type)/,
    ],
    [
      'an unknown interactive type',
      'send-interactive',
      interactive({ type: 'carousel', action: {} }),
      /body\.interactive/,
    ],
    [
      'a footer of 61',
      'send-interactive',
      interactive({ type: 'button', footer: { text: 'f'.repeat(61) }, action: { buttons: buttons(1) } }),
      /body\.interactive\.footer\.text must NOT have more than 60 characters/,
    ],
    [
      'a cta_url over http',
      'send-interactive',
      interactive({
        type: 'cta_url',
        action: { name: 'cta_url', parameters: { display_text: 'Go', url: 'http://x.example.com' } },
      }),
      /body\.interactive\.action\.parameters\.url must match pattern/,
    ],
    [
      'a caption on audio',
      'send-audio',
      { audio: { mediaId: MEDIA_ID, caption: 'no' } },
      /body\.audio has unknown property "caption"/,
    ],
    [
      'a caption on a sticker',
      'send-sticker',
      { sticker: { mediaId: MEDIA_ID, caption: 'no' } },
      /body\.sticker has unknown property "caption"/,
    ],
    [
      'a document with both mediaId and link',
      'send-document',
      { document: { mediaId: MEDIA_ID, link: 'https://x.example.com/a.pdf' } },
      /body\.document must have either mediaId or link, not both/,
    ],
    [
      'a video with neither',
      'send-video',
      { video: { caption: 'hi' } },
      /body\.video must have either mediaId or link/,
    ],
    [
      'a link over http',
      'send-image',
      { image: { link: 'http://x.example.com/a.png' } },
      /body\.image\.link must match pattern/,
    ],
    [
      'a latitude of 91',
      'send-location',
      { location: { latitude: 91, longitude: 0 } },
      /body\.location\.latitude must be <= 90/,
    ],
    [
      'a contact with only a formatted name',
      'send-contacts',
      { contacts: [{ name: { formatted_name: 'Ana' } }] },
      /body\.contacts\[0\]\.name needs first_name/,
    ],
    ['no contacts', 'send-contacts', { contacts: [] }, /body\.contacts must NOT have fewer than 1 items/],
    [
      'a reaction without messageId',
      'send-reaction',
      { reaction: { emoji: '👍' } },
      /body\.reaction\.messageId is required/,
    ],
  ])('400 for %s, naming the field', async (_name, path, body, message) => {
    expectError(await post(path, { phone: PHONE, ...body }), 400, 'VALIDATION_ERROR', message)
  })

  it('needs exactly one of phone and userId', async () => {
    const body = { location: { latitude: 1, longitude: 2 } }
    expectError(
      await post('send-location', body),
      400,
      'VALIDATION_ERROR',
      /body\.phone is required \(or userId/,
    )
    expectError(
      await post('send-location', { ...body, phone: PHONE, userId: 'BR.1502576394655843' }),
      400,
      'VALIDATION_ERROR',
      /either phone or userId, not both/,
    )
    expectError(
      await post('send-location', { ...body, userId: 'not a bsuid' }),
      400,
      'VALIDATION_ERROR',
      /body\.userId must match pattern/,
    )
  })

  it('names the item of a batch that breaks a limit, and queues the others', async () => {
    const res = await post('batch', {
      messages: [
        { type: 'location', phone: PHONE, location: { latitude: 1, longitude: 2 } },
        {
          type: 'interactive',
          phone: PHONE,
          ...interactive({ type: 'button', action: { buttons: buttons(4) } }),
        },
        { type: 'fax', phone: PHONE },
      ],
    })
    expect(res.statusCode, res.body).toBe(202)
    const [ok, tooMany, unknown] = res.json().results
    expect(ok).toMatchObject({ index: 0, status: 'queued' })
    expect(tooMany.error.message).toMatch(
      /body\.messages\[1\]\.interactive\.action\.buttons must NOT have more than 3/,
    )
    expect(unknown.error.message).toMatch(
      /body\.messages\[2\]\.type must be one of .*"interactive", "reaction"/,
    )
  })
})

describe('scopes', () => {
  it("403 without the kind's own scope, alone and in a batch", async () => {
    const textOnly = await activeKey(app, { scopes: ['send:free-text', 'send:image', 'read:messages'] })
    for (const kind of KINDS) {
      expectError(
        await post(pathOf(kind.type), { phone: PHONE, ...kind.body }, textOnly.key),
        403,
        'INSUFFICIENT_SCOPE',
        new RegExp(`send:${kind.type}`),
      )
    }
    const batch = await post(
      'batch',
      {
        messages: [
          { type: 'text', phone: PHONE, text: 'hi' },
          { type: 'sticker', phone: PHONE, sticker: { mediaId: MEDIA_ID } },
        ],
      },
      textOnly.key,
    )
    expect(batch.statusCode, batch.body).toBe(202)
    expect(batch.json().results[1].error).toMatchObject({ errorCode: 'INSUFFICIENT_SCOPE' })
  })
})
