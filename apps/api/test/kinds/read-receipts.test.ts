import { type FakeWhatsApp, inboundMessage, messageWebhook, startFakeWhatsApp } from '@dispatch/testing'
import { sendFakeReply } from '@dispatch/testing/fake-reply'
import type { RunningWorker } from '@dispatch/worker'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  activeKey,
  buildTestApp,
  createWorld,
  expectError,
  postPlatformWebhook,
  startTestWorker,
  type TestApp,
  type TestWorld,
} from '../helpers.ts'
import { untilRecordedSent } from './setup.ts'

const APP_SECRET = 'app-secret-0123456789'
const NUMBER = '106540352242922'
const TOKEN = 'default-token-0123456789'
const PHONE = '+5511987650003'

let world: TestWorld
let app: TestApp
let fake: FakeWhatsApp
let worker: RunningWorker
let acme: { id: string; key: string }
let other: { id: string; key: string }
/** acme's first message to PHONE: one it sent, not a reply. */
let sentId: string

const markRead = (id: string, key = acme.key, payload: object = {}) =>
  app.inject({
    method: 'POST',
    url: `/api/third-party/messages/${id}/read`,
    headers: { 'x-api-key': key },
    payload,
  })

/** A reply from PHONE routed to acme (which wrote to PHONE first): its Dispatch id and wamid. */
async function replyToAcme(text = 'Is my order on its way?') {
  const message = inboundMessage('text', { phone: PHONE }, { text })
  expect((await postPlatformWebhook(app, messageWebhook(NUMBER, message), APP_SECRET)).statusCode).toBe(200)
  const [row] = await world.sql<{ id: string; api_key_id: string }[]>`
    select id, api_key_id from inbound_messages where platform_message_id = ${message.id}`
  expect(row?.api_key_id).toBe(acme.id)
  return { id: row?.id as string, wamid: message.id }
}

beforeAll(async () => {
  world = await createWorld()
  fake = await startFakeWhatsApp()
  const cloud = { WHATSAPP_API_URL: fake.url, WHATSAPP_ACCESS_TOKEN: TOKEN, WHATSAPP_PHONE_NUMBER_ID: NUMBER }
  app = await buildTestApp(world, { ...cloud, WHATSAPP_APP_SECRET: APP_SECRET })
  acme = await activeKey(app, { scopes: ['send:free-text', 'read:messages'] })
  other = await activeKey(app, { scopes: ['send:free-text', 'read:messages'] })
  // Slow enough that a backlog of 1,000 takes seconds to drain.
  worker = await startTestWorker(world, {
    ...cloud,
    PLATFORM_RATE_PER_SECOND: '100',
    ADMISSION_INTERVAL_MS: '20',
  })
  const first = await app.inject({
    method: 'POST',
    url: '/api/third-party/messages/send-text',
    headers: { 'x-api-key': acme.key },
    payload: { phone: PHONE, text: 'Your order shipped' },
  })
  sentId = first.json().messageId
  // Recorded sent: a reply is routed to the key that last sent to its phone.
  await untilRecordedSent(world, sentId)
})

afterAll(async () => {
  await worker?.close()
  await app?.close()
  await fake?.close()
  await world?.close()
})

describe('POST /messages/:id/read', () => {
  it('marks a reply read with the sender token, and shows typing, ahead of 1,000 queued messages', async () => {
    const reply = await replyToAcme()
    const backlog = Array.from({ length: 1000 }, (_, i) => ({
      type: 'text',
      phone: PHONE,
      text: `Update ${i}`,
    }))
    const batch = await app.inject({
      method: 'POST',
      url: '/api/third-party/messages/batch',
      headers: { 'x-api-key': acme.key },
      payload: { messages: backlog },
    })
    expect(batch.json()).toMatchObject({ accepted: 1000 })
    const batchIds = new Set((batch.json().results as Array<{ messageId: string }>).map((r) => r.messageId))

    const res = await markRead(reply.id, acme.key, { typing: true })
    expect(res.statusCode, res.body).toBe(200)
    expect(res.json()).toEqual({
      messageId: reply.id,
      platformMessageId: reply.wamid,
      read: true,
      typing: true,
      delivered: true,
    })
    const read = fake.reads.at(-1)
    expect(read?.body).toEqual({
      messaging_product: 'whatsapp',
      status: 'read',
      message_id: reply.wamid,
      typing_indicator: { type: 'text' },
    })
    expect(read?.headers.authorization).toBe(`Bearer ${TOKEN}`)
    // When it reached the platform, most of the backlog had not.
    const backlogSent = fake.requests.filter(
      (r) => r.messageId && batchIds.has(r.messageId) && r.receivedAt <= (read?.receivedAt ?? 0),
    )
    expect(backlogSent.length).toBeLessThan(500)

    // By its wamid too, without typing.
    const byWamid = await markRead(reply.wamid)
    expect(byWamid.json()).toMatchObject({ messageId: reply.id, typing: false })
    expect(fake.reads.at(-1)?.body).toEqual({
      messaging_product: 'whatsapp',
      status: 'read',
      message_id: reply.wamid,
    })
  })

  it("404 for another key's reply, an unknown id, or one of our own sent messages", async () => {
    const reply = await replyToAcme('Another question')
    const before = fake.reads.length
    expectError(await markRead(reply.id, other.key), 404, 'NOT_FOUND')
    expectError(await markRead(reply.wamid, other.key), 404, 'NOT_FOUND')
    expectError(await markRead('00000000-0000-4000-8000-000000000000'), 404, 'NOT_FOUND')
    expectError(await markRead(sentId), 404, 'NOT_FOUND')
    expect(fake.reads.length).toBe(before)
  })

  it('400 for a body that is not {typing}; 502 when the platform refuses', async () => {
    const reply = await replyToAcme('Hello?')
    expectError(
      await markRead(reply.id, acme.key, { typing: 'yes' }),
      400,
      'VALIDATION_ERROR',
      /body\.typing/,
    )
    expectError(
      await markRead(reply.id, acme.key, { read: false }),
      400,
      'VALIDATION_ERROR',
      /unknown property "read"/,
    )
    fake.number(NUMBER, { token: 'another-token' })
    try {
      expectError(await markRead(reply.id), 502, 'PLATFORM_ERROR', /refused the read receipt/)
    } finally {
      fake.number(NUMBER, { token: undefined })
    }
  })
})

describe("the fake customer's photo", () => {
  it('pnpm fake:reply --image: the key the reply was routed to downloads it, another key gets 404', async () => {
    const address = await app.listen({ port: 0, host: '127.0.0.1' })
    const said = await sendFakeReply([PHONE, '--image', 'my receipt'], {
      phoneNumberId: NUMBER,
      webhookUrl: `${address}/api/webhooks/whatsapp`,
      appSecret: APP_SECRET,
      fakeUrl: new URL(fake.url).origin,
    })
    expect(said).toMatch(/^image wamid\.\S+ .* → 200$/)
    const [row] = await world.sql<
      { content: { media: { id: string; mimeType: string; caption: string } } }[]
    >`
      select content from inbound_messages where api_key_id = ${acme.id} and type = 'image' order by created_at desc limit 1`
    expect(row?.content.media).toMatchObject({ mimeType: 'image/jpeg', caption: 'my receipt' })
    const download = (key: string) =>
      app.inject({
        method: 'GET',
        url: `/api/third-party/media/${row?.content.media.id}/content`,
        headers: { 'x-api-key': key },
      })
    const mine = await download(acme.key)
    expect(mine.statusCode, mine.body).toBe(200)
    expect(mine.headers['content-type']).toBe('image/jpeg')
    expect(mine.rawPayload.subarray(0, 3)).toEqual(Buffer.from([0xff, 0xd8, 0xff]))
    expectError(await download(other.key), 404, 'NOT_FOUND')
  })
})
