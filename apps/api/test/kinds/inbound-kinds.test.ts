import { randomBytes } from 'node:crypto'
import {
  type InboundKind,
  inboundMessage,
  messageWebhook,
  startWebhookReceiver,
  type WebhookReceiver,
  waitFor,
} from '@dispatch/testing'
import { readReply, sendFakeReply } from '@dispatch/testing/fake-reply'
import type { RunningWorker } from '@dispatch/worker'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  activeKey,
  addWebhookEndpoint,
  buildTestApp,
  createWorld,
  postPlatformWebhook,
  startTestWorker,
  type TestApp,
  type TestWorld,
} from '../helpers.ts'

const APP_SECRET = 'app-secret-0123456789'
const NUMBER = '106540352242922'
const PHONE = '+5511987650002'

let world: TestWorld
let app: TestApp
let receiver: WebhookReceiver
let worker: RunningWorker
let key: { id: string; key: string }
/** A message this key sent to PHONE from NUMBER a minute ago: replies to PHONE are routed to it. */
let sent: { id: string; wamid: string }

const deliver = (...messages: unknown[]) =>
  postPlatformWebhook(app, messageWebhook(NUMBER, ...messages), APP_SECRET)

/** The `message.received` event the receiver got for the reply with this wamid. */
async function receivedEvent(wamid: string) {
  const [row] = await world.sql<
    { id: string }[]
  >`select id from inbound_messages where platform_message_id = ${wamid}`
  expect(row, `reply ${wamid} stored`).toBeDefined()
  return waitFor(() => receiver.received.find((r) => r.json.data.messageId === row?.id), {
    what: `message.received for ${wamid}`,
  })
}

beforeAll(async () => {
  world = await createWorld()
  receiver = await startWebhookReceiver()
  app = await buildTestApp(world, { WHATSAPP_APP_SECRET: APP_SECRET })
  worker = await startTestWorker(world)
  key = await activeKey(app, { scopes: ['send:free-text', 'read:messages', 'manage:webhooks'] })
  await addWebhookEndpoint(app, key.key, { url: receiver.url, events: ['message.received'] })
  sent = { id: crypto.randomUUID(), wamid: `wamid.${randomBytes(10).toString('hex')}` }
  await world.sql`
    insert into messages (id, api_key_id, type, phone, payload, status, attempts, platform_message_id,
      sender_phone_number_id, client_reference, accepted_at, sent_at)
    values (${sent.id}, ${key.id}, 'text', ${PHONE}, ${world.sql.json({ phone: PHONE, text: 'Confirm?' })}, 'sent', 1,
      ${sent.wamid}, ${NUMBER}, 'appointment-77', now() - interval '1 minute', now() - interval '1 minute')`
})

afterAll(async () => {
  await worker?.close()
  await app?.close()
  await receiver?.close()
  await world?.close()
})

/** Each kind Meta delivers, and its documented shape in `message.received` (beside the common fields). */
const SHAPES: Array<[InboundKind, object, (m: ReturnType<typeof inboundMessage>) => object]> = [
  ['text', { text: 'Tuesday works' }, () => ({ type: 'text', text: 'Tuesday works' })],
  ...(['image', 'document', 'video'] as const).map(
    (kind): [InboundKind, object, (m: ReturnType<typeof inboundMessage>) => object] => [
      kind,
      { text: 'see this' },
      (m) => {
        const media = m[kind] as { id: string; mime_type: string; sha256: string; filename?: string }
        return {
          type: kind,
          media: {
            id: media.id,
            mimeType: media.mime_type,
            sha256: media.sha256,
            caption: 'see this',
            ...(media.filename ? { filename: media.filename } : {}),
          },
        }
      },
    ],
  ),
  ...(['audio', 'sticker'] as const).map(
    (kind): [InboundKind, object, (m: ReturnType<typeof inboundMessage>) => object] => [
      kind,
      {},
      (m) => {
        const media = m[kind] as { id: string; mime_type: string; sha256: string }
        return { type: kind, media: { id: media.id, mimeType: media.mime_type, sha256: media.sha256 } }
      },
    ],
  ),
  [
    'location',
    { latitude: -22.9, longitude: -43.2, text: 'Home' },
    () => ({ type: 'location', location: { latitude: -22.9, longitude: -43.2, name: 'Home' } }),
  ],
  ['contacts', { text: 'Bia Souza' }, (m) => ({ type: 'contacts', contacts: m.contacts })],
  [
    'quick_reply',
    { text: 'Stop promotions', id: 'STOP' },
    () => ({ type: 'button', button: { text: 'Stop promotions', payload: 'STOP' } }),
  ],
  [
    'button_reply',
    { id: 'confirm', text: 'Confirm' },
    () => ({ type: 'interactive', button: { id: 'confirm', title: 'Confirm' } }),
  ],
  [
    'list_reply',
    { id: 'tue-10', text: '10:00' },
    () => ({ type: 'interactive', listReply: { id: 'tue-10', title: '10:00' } }),
  ],
]

describe('message.received for every inbound kind', () => {
  it.each(SHAPES)(
    '%s arrives at the subscribed receiver in its documented shape',
    async (kind, options, shape) => {
      const message = inboundMessage(kind, { phone: PHONE }, options)
      expect((await deliver(message)).statusCode).toBe(200)
      const event = await receivedEvent(message.id)
      expect(event.json.type).toBe('message.received')
      expect(event.json.data).toEqual({
        messageId: expect.any(String),
        clientReference: null,
        inReplyTo: null,
        phone: PHONE,
        phoneNumberId: NUMBER,
        status: 'received',
        sequence: expect.any(Number),
        ...shape(message),
      })
    },
  )

  it('a reaction to our message, and a reply quoting it, name that message', async () => {
    const reaction = inboundMessage('reaction', { phone: PHONE }, { id: sent.wamid, text: '❤️' })
    const quoting = inboundMessage('text', { phone: PHONE }, { text: 'Yes, confirmed', quotes: sent.wamid })
    expect((await deliver(reaction, quoting)).statusCode).toBe(200)
    expect((await receivedEvent(reaction.id)).json.data).toMatchObject({
      type: 'reaction',
      reaction: { emoji: '❤️', messageId: sent.wamid },
    })
    expect((await receivedEvent(quoting.id)).json.data).toMatchObject({
      type: 'text',
      text: 'Yes, confirmed',
      inReplyTo: sent.id,
      clientReference: 'appointment-77',
      context: { platformMessageId: sent.wamid, messageId: sent.id },
    })
  })
})

describe('pnpm fake:reply, the fake customer', () => {
  it('sends a location, taps a button and writes from a username, signed as Meta signs', async () => {
    const address = await app.listen({ port: 0, host: '127.0.0.1' })
    const env = {
      phoneNumberId: NUMBER,
      webhookUrl: `${address}/api/webhooks/whatsapp`,
      appSecret: APP_SECRET,
      fakeUrl: 'http://127.0.0.1:9',
    }
    const newest = async () => {
      const [row] = await world.sql<
        {
          type: string
          content: object
          phone: string | null
          user_id: string | null
          username: string | null
          api_key_id: string | null
        }[]
      >`
        select type, content, phone, user_id, username, api_key_id from inbound_messages order by created_at desc, received_at desc limit 1`
      return row
    }
    expect(await sendFakeReply([PHONE, '--location', '-23.56,-46.65', 'Office'], env)).toMatch(
      /^location wamid\.\S+ from \+5511987650002 .* → 200$/,
    )
    expect(await newest()).toMatchObject({
      type: 'location',
      content: { location: { latitude: -23.56, longitude: -46.65, name: 'Office' } },
      api_key_id: key.id,
    })
    await sendFakeReply([PHONE, '--button', 'confirm', 'Confirm'], env)
    expect(await newest()).toMatchObject({
      type: 'interactive',
      content: { button: { id: 'confirm', title: 'Confirm' } },
    })
    await sendFakeReply(['BR.1502576394655843', '--username', 'ana', 'hi'], env)
    expect(await newest()).toMatchObject({
      phone: null,
      user_id: 'BR.1502576394655843',
      username: 'ana',
      content: { text: 'hi' },
    })
    expect(() => readReply(['not-a-phone', 'hi'])).toThrow(/an E.164 phone or a BSUID/)
    expect(() => readReply([PHONE, '--location', 'north', 'x'])).toThrow(/latitude,longitude/)
  })
})
