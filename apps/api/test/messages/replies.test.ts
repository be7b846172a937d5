import { InboundMessageList, type InboundMessageView, type MessageView } from '@dispatch/contracts'
import { type FakeWhatsApp, messageWebhook, startFakeWhatsApp, waitFor } from '@dispatch/testing'
import type { RunningWorker } from '@dispatch/worker'
import Value from 'typebox/value'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  activeKey,
  addWebhookEndpoint,
  asAdmin,
  buildTestApp,
  createWorld,
  postPlatformWebhook,
  SEND_SCOPES,
  send,
  startTestWorker,
  type TestApp,
  type TestWorld,
} from '../helpers.ts'

// Replies end to end: keys send through the worker to the fake Cloud API, users answer by signed
// webhook, and the API routes each answer to the key whose conversation it belongs to.
const APP_SECRET = 'whatsapp-app-secret-for-tests'
/** The business number the worker sends from. */
const NUMBER = '106540352242922'
/** Another business number of ours, that these keys never sent from. */
const OTHER_NUMBER = '106540352249999'
const PHONES = {
  ana: '+5511900000001',
  bia: '+5511900000002',
  carl: '+5511900000003',
  dan: '+5511900000004',
  eve: '+5511900000005',
  fay: '+5511900000006',
  gus: '+5511900000007',
  hal: '+5511900000008',
  ivy: '+5511900000009',
  jo: '+5511900000010',
}

let world: TestWorld
let app: TestApp
let fake: FakeWhatsApp
let worker: RunningWorker
type Key = { id: string; key: string }
let acme: Key
let globex: Key

/** An approved key of its own tenant, with an endpoint: only keys with one get events. */
async function tenantKey(tenantId: string): Promise<Key> {
  const key = await activeKey(app, { scopes: [...SEND_SCOPES, 'manage:webhooks'], tenantId })
  await addWebhookEndpoint(app, key.key, { url: 'http://127.0.0.1:9/replies', events: ['message.received'] })
  return key
}

beforeAll(async () => {
  world = await createWorld()
  app = await buildTestApp(world, { WHATSAPP_APP_SECRET: APP_SECRET })
  fake = await startFakeWhatsApp()
  worker = await startTestWorker(world, {
    WORKER_QUEUES: 'messages',
    WHATSAPP_API_URL: fake.url,
    WHATSAPP_ACCESS_TOKEN: 'EAAG-e2e-token',
    WHATSAPP_PHONE_NUMBER_ID: NUMBER,
  })
  acme = await tenantKey('acme')
  globex = await tenantKey('globex')
})
afterAll(async () => {
  await worker?.close()
  await app?.close()
  await fake?.close()
  await world?.close()
})

/** A text from `key` to `phone`, through the worker and the fake platform; resolves once sent. */
async function sendTo(key: Key, phone: string, extra: Record<string, unknown> = {}) {
  const res = await send(app, 'send-text', key.key, { phone, text: 'Your order shipped', ...extra })
  expect(res.statusCode, res.body).toBe(202)
  const { messageId } = res.json()
  return waitFor(
    async () => {
      const view = (
        await app.inject({
          method: 'GET',
          url: `/api/third-party/messages/${messageId}`,
          headers: { 'x-api-key': key.key },
        })
      ).json<MessageView>()
      return view.status === 'sent' ? view : undefined
    },
    { what: `message ${messageId} to be sent` },
  )
}

const seconds = (ms: number) => String(Math.floor(ms / 1000))
let sequence = 0
/** A user's text message as Meta reports it. */
const reply = (phone: string, fields: Record<string, unknown> = {}) => ({
  from: phone.slice(1),
  id: `wamid.reply-${++sequence}.${Date.now()}`,
  timestamp: seconds(Date.now()),
  type: 'text',
  text: { body: 'Thanks!' },
  ...fields,
})
type Reply = ReturnType<typeof reply>

/** Signs and posts the exact bytes, as Meta would. */
async function post(on: TestApp, body: object) {
  const res = await postPlatformWebhook(on, body, APP_SECRET)
  expect(res.statusCode, res.body).toBe(200)
  expect(res.json()).toEqual({ received: true })
}
const deliver = (on: TestApp, phoneNumberId: string, ...messages: unknown[]) =>
  post(on, messageWebhook(phoneNumberId, ...messages))

async function adminList(query: string) {
  const res = await app.inject({
    method: 'GET',
    url: `/api/admin/inbound-messages?take=1000&${query}`,
    headers: asAdmin(),
  })
  expect(res.statusCode, res.body).toBe(200)
  const body = res.json<InboundMessageList>()
  expect(Value.Check(InboundMessageList, body), res.body).toBe(true)
  return body.data
}
/** The admin view of one reply, found by its wamid. */
async function viewOf(item: Reply): Promise<InboundMessageView> {
  const found = (await adminList(`q=${encodeURIComponent(item.id)}`)).find(
    (m) => m.platformMessageId === item.id,
  )
  if (!found) throw new Error(`reply ${item.id} not stored`)
  return found
}
const eventsAbout = (inboundId: string) =>
  world.sql<
    { api_key_id: string; type: string; payload: { type: string; timestamp: string; data: object } }[]
  >`
    select api_key_id, type, payload from webhook_events where message_id = ${inboundId}`
const timeOf = (item: Reply) => new Date(Number(item.timestamp) * 1000).toISOString()

describe('replies: routed to the key whose conversation they belong to', () => {
  it("goes to the key that wrote to the phone from that number; the event is that key's only", async () => {
    await sendTo(acme, PHONES.ana)
    await sendTo(globex, PHONES.bia)
    const fromAna = reply(PHONES.ana, { text: { body: 'Yes, thanks' } })
    const fromBia = reply(PHONES.bia, {
      type: 'image',
      image: { id: 'media-77', mime_type: 'image/jpeg', sha256: 'aGFzaA==', caption: 'receipt' },
    })
    await deliver(app, NUMBER, fromAna, fromBia)

    const ana = await viewOf(fromAna)
    expect(ana).toEqual({
      id: expect.any(String),
      platformMessageId: fromAna.id,
      phoneNumberId: NUMBER,
      phone: PHONES.ana,
      userId: null,
      username: null,
      type: 'text',
      content: { text: 'Yes, thanks' },
      apiKeyId: acme.id,
      inReplyTo: null,
      receivedAt: timeOf(fromAna),
      createdAt: expect.any(String),
    })
    const bia = await viewOf(fromBia)
    expect(bia).toMatchObject({
      apiKeyId: globex.id,
      type: 'image',
      content: { media: { id: 'media-77', mimeType: 'image/jpeg', sha256: 'aGFzaA==', caption: 'receipt' } },
    })
    const acmeReplies = (await adminList(`apiKeyId=${acme.id}`)).map((m) => m.id)
    expect(acmeReplies).toContain(ana.id)
    expect(acmeReplies).not.toContain(bia.id)

    // The event a user's endpoint will receive: written for the routed key, and for it alone.
    expect(await eventsAbout(ana.id)).toEqual([
      {
        api_key_id: acme.id,
        type: 'message.received',
        payload: {
          type: 'message.received',
          timestamp: ana.receivedAt,
          data: {
            messageId: ana.id,
            clientReference: null,
            inReplyTo: null,
            type: 'text',
            phone: PHONES.ana,
            phoneNumberId: NUMBER,
            status: 'received',
            text: 'Yes, thanks',
            sequence: 1,
          },
        },
      },
    ])
    const [biaEvent, ...more] = await eventsAbout(bia.id)
    expect(more).toEqual([])
    expect(biaEvent).toMatchObject({
      api_key_id: globex.id,
      payload: {
        data: {
          messageId: bia.id,
          phone: PHONES.bia,
          type: 'image',
          media: { id: 'media-77', mimeType: 'image/jpeg', sha256: 'aGFzaA==', caption: 'receipt' },
        },
      },
    })
  })

  it('a reply quoting a message goes to its key, even when another key wrote to the phone since', async () => {
    const quoted = await sendTo(acme, PHONES.carl, { clientReference: 'order-7' })
    await sendTo(globex, PHONES.carl)
    const quoting = reply(PHONES.carl, {
      type: 'button',
      button: { text: 'Track it', payload: 'TRACK' },
      context: { from: '15550001111', id: quoted.platformMessageId },
    })
    const plain = reply(PHONES.carl)
    const quotingUnknown = reply(PHONES.carl, { context: { from: '15550001111', id: 'wamid.not-ours' } })
    await deliver(app, NUMBER, quoting, plain, quotingUnknown)

    const answer = await viewOf(quoting)
    expect(answer).toMatchObject({
      apiKeyId: acme.id,
      inReplyTo: quoted.messageId,
      content: { button: { text: 'Track it', payload: 'TRACK' } },
    })
    // Without a quote of ours, the newest conversation on this number wins.
    expect(await viewOf(plain)).toMatchObject({ apiKeyId: globex.id, inReplyTo: null })
    expect(await viewOf(quotingUnknown)).toMatchObject({ apiKeyId: globex.id, inReplyTo: null })

    const [event] = await eventsAbout(answer.id)
    expect(event).toMatchObject({
      api_key_id: acme.id,
      payload: {
        data: {
          inReplyTo: quoted.messageId,
          clientReference: 'order-7',
          button: { text: 'Track it', payload: 'TRACK' },
        },
      },
    })
  })

  it('a reply Meta delivers late goes to the conversation it was written in, not one begun since', async () => {
    const first = await sendTo(acme, PHONES.jo)
    const [row] = await world.sql<
      { sent_at: Date }[]
    >`select sent_at from messages where id = ${first.messageId}`
    if (!row) throw new Error('no record')
    // The user answered in the second of the first send (Meta's times are whole seconds)…
    const answered = reply(PHONES.jo, { timestamp: seconds(row.sent_at.getTime()) })
    // …and only after that second did another key write to them.
    await new Promise((resolve) => setTimeout(resolve, 1100))
    await sendTo(globex, PHONES.jo)
    await deliver(app, NUMBER, answered)
    expect(await viewOf(answered)).toMatchObject({ apiKeyId: acme.id, inReplyTo: null })
  })

  it('stays unrouted, with no event: an unknown phone, another business number, after 24 h', async () => {
    const toEve = await sendTo(acme, PHONES.eve)
    const stranger = reply(PHONES.dan)
    const otherNumber = reply(PHONES.eve)
    const otherNumberQuoting = reply(PHONES.eve, { context: { id: toEve.platformMessageId } })
    await deliver(app, NUMBER, stranger)
    await deliver(app, OTHER_NUMBER, otherNumber, otherNumberQuoting)

    // A day and an hour on: the API's clock and Meta's timestamps both moved; the send did not.
    const dayLater = Date.now() + 25 * 60 * 60 * 1000
    const later = await buildTestApp(world, { WHATSAPP_APP_SECRET: APP_SECRET }, undefined, {
      clock: () => new Date(dayLater),
    })
    const late = reply(PHONES.eve, { timestamp: seconds(dayLater) })
    // A quote of ours has no time limit: it still names its conversation.
    const lateQuoting = reply(PHONES.eve, {
      timestamp: seconds(dayLater),
      context: { id: toEve.platformMessageId },
    })
    try {
      await deliver(later, NUMBER, late, lateQuoting)
    } finally {
      await later.close()
    }

    const unroutable = [stranger, otherNumber, otherNumberQuoting, late]
    const unrouted = await adminList('routed=false')
    expect(unrouted.every((m) => m.apiKeyId === null)).toBe(true)
    const unroutedIds = unrouted.map((m) => m.platformMessageId)
    for (const item of unroutable) expect(unroutedIds).toContain(item.id)
    const routedIds = (await adminList('routed=true')).map((m) => m.platformMessageId)
    for (const item of unroutable) expect(routedIds).not.toContain(item.id)
    for (const item of unroutable) {
      const view = await viewOf(item)
      expect(view.inReplyTo).toBeNull()
      expect(await eventsAbout(view.id)).toEqual([])
    }
    expect((await viewOf(otherNumber)).phoneNumberId).toBe(OTHER_NUMBER)
    expect(await viewOf(lateQuoting)).toMatchObject({ apiKeyId: acme.id, inReplyTo: toEve.messageId })
  })
})

describe('replies: what the platform sends twice, or badly', () => {
  it('stores a redelivered reply once, with one event, sequentially or at once', async () => {
    await sendTo(acme, PHONES.fay)
    const once = reply(PHONES.fay)
    const body = messageWebhook(NUMBER, once)
    await post(app, body)
    await post(app, body)
    const twice = reply(PHONES.fay)
    await Promise.all([1, 2, 3].map(() => post(app, messageWebhook(NUMBER, twice))))
    for (const item of [once, twice]) {
      const rows = await world.sql`select id from inbound_messages where platform_message_id = ${item.id}`
      expect(rows).toHaveLength(1)
      expect(await eventsAbout(rows[0]?.id)).toHaveLength(1)
    }
    const processed = app.logs.lines
      .filter((line) => line.includes('whatsapp webhook processed'))
      .map((line) => JSON.parse(line).replies)
    expect(processed).toContainEqual({ routed: 0, unrouted: 0, duplicate: 1 })
  })

  it('skips a malformed item and stores the good one beside it; logs counts and positions only', async () => {
    const bad = reply(PHONES.gus, { text: { body: 42 } })
    const good = reply(PHONES.gus, { text: { body: 'private words' } })
    await deliver(app, NUMBER, bad, good)
    expect(
      await world.sql`select 1 from inbound_messages where platform_message_id = ${bad.id}`,
    ).toHaveLength(0)
    expect(await viewOf(good)).toMatchObject({ apiKeyId: null, content: { text: 'private words' } })

    const warning = app.logs.lines.findLast((line) => line.includes('whatsapp webhook items skipped'))
    expect(JSON.parse(warning as string)).toMatchObject({
      skipped: 1,
      items: [{ at: 'entry[0].changes[0].messages[0]', reason: expect.stringMatching(/^\/text\/body /) }],
    })
    expect(app.logs.text()).not.toContain(PHONES.gus.slice(1))
    expect(app.logs.text()).not.toContain('private words')
  })

  it('stores NUL and lone surrogates as U+FFFD, and keeps only the fields it reads', async () => {
    const odd = reply(PHONES.gus, {
      type: 'location',
      location: { latitude: 1.5, longitude: 2.5, name: 'a\u0000b\ud800', extra: { deep: ['x'] } },
    })
    const unknown = reply(PHONES.gus, { type: 'order\u0000', order: { products: [{ a: '\u0000' }] } })
    await deliver(app, NUMBER, odd, unknown)
    expect((await viewOf(odd)).content).toEqual({
      location: { latitude: 1.5, longitude: 2.5, name: 'a\uFFFDb\uFFFD' },
    })
    expect(await viewOf(unknown)).toMatchObject({ type: 'order\uFFFD', content: { unsupported: true } })
  })

  it('applies the statuses and stores the replies of one delivery', async () => {
    const sent = await sendTo(acme, PHONES.hal)
    const answer = reply(PHONES.hal)
    const body = messageWebhook(NUMBER, answer)
    const change = body.entry[0]?.changes[0]
    if (!change) throw new Error('no change')
    Object.assign(change.value, {
      statuses: [{ id: sent.platformMessageId, status: 'read', timestamp: seconds(Date.now()) }],
    })
    await post(app, body)
    expect(await viewOf(answer)).toMatchObject({ apiKeyId: acme.id })
    const [row] = await world.sql`select status from messages where id = ${sent.messageId}`
    expect(row?.status).toBe('read')
  })
})

describe('the conversation window', () => {
  const windowOf = async (phoneNumberId: string, phone: string) => {
    const [row] = await world.sql<{ last_inbound_at: Date }[]>`
      select last_inbound_at from conversation_windows where phone_number_id = ${phoneNumberId} and phone = ${phone}`
    return row?.last_inbound_at.toISOString()
  }

  it("moves to each business number and phone's newest reply, routed or not, never back", async () => {
    const now = Date.now()
    const first = reply(PHONES.ivy, { timestamp: seconds(now - 60_000) })
    await deliver(app, NUMBER, first)
    expect(await windowOf(NUMBER, PHONES.ivy)).toBe(timeOf(first))
    const newer = reply(PHONES.ivy, { timestamp: seconds(now) })
    await deliver(app, NUMBER, newer)
    expect(await windowOf(NUMBER, PHONES.ivy)).toBe(timeOf(newer))
    // Meta delivers out of order: an older reply arriving late leaves the window where it was.
    await deliver(app, NUMBER, reply(PHONES.ivy, { timestamp: seconds(now - 3_600_000) }))
    expect(await windowOf(NUMBER, PHONES.ivy)).toBe(timeOf(newer))
    // Each business number has its own window with the same phone.
    const elsewhere = reply(PHONES.ivy, { timestamp: seconds(now - 120_000) })
    await deliver(app, OTHER_NUMBER, elsewhere)
    expect(await windowOf(OTHER_NUMBER, PHONES.ivy)).toBe(timeOf(elsewhere))
    expect(await windowOf(NUMBER, PHONES.ivy)).toBe(timeOf(newer))
  })
})
