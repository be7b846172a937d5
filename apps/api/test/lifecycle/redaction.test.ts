import { randomUUID } from 'node:crypto'
import type { InboundMessageList, MessageView } from '@dispatch/contracts'
import { createDb, type Db } from '@dispatch/db'
import { captureLogs, type FakeWhatsApp, messageWebhook, startFakeWhatsApp, waitFor } from '@dispatch/testing'
import { type RunningWorker, sweepContentRedaction } from '@dispatch/worker'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  activeKey,
  addWebhookEndpoint,
  asAdmin,
  buildTestApp,
  createWorld,
  expectError,
  messageView,
  postPlatformWebhook,
  SEND_SCOPES,
  send,
  startTestWorker,
  type TestApp,
  type TestWorld,
  untilMessageStatus,
} from '../helpers.ts'
import { columnsHolding as columnsHoldingIn } from './search.ts'

// Content retention (issue 25), end to end: keys and sends that discard content, keys that keep
// it N hours, a sender that discards replies. "Not stored" is checked by searching every text and
// JSON column of every table for the message's unique words, not assumed.
const APP_SECRET = 'whatsapp-app-secret-for-tests'
const NUMBER = '106540352242922'
const HOUR = 3600_000

let world: TestWorld
let app: TestApp
let fake: FakeWhatsApp
let worker: RunningWorker
let db: { db: Db; close(): Promise<void> }
/** The worker's log lines, at debug level: no content may be in them either. */
const workerLogs = captureLogs()
/** How far behind real time the API's clock runs: a message accepted "hours ago" without waiting. */
let apiBehindMs = 0
type Key = { id: string; key: string }

/** Words no other message of the run holds: what the searches look for. */
const unique = (label: string) => `${label}-${randomUUID().slice(0, 8)}`

/** The columns (`table.column`) of this file's database holding `needle`, searched. */
const columnsHolding = (needle: string) => columnsHoldingIn(world.sql, needle)

/** A key with the send scopes and an endpoint (only keys with one get events stored), its retention set. */
async function keyWith(contentRetention?: unknown): Promise<Key> {
  const key = await activeKey(app, { scopes: [...SEND_SCOPES, 'manage:webhooks'] })
  await addWebhookEndpoint(app, key.key, {
    url: 'http://127.0.0.1:9/events',
    events: ['message.sent', 'message.received'],
  })
  if (contentRetention !== undefined) {
    const res = await app.inject({
      method: 'PATCH',
      url: `/api/admin/api-keys/${key.id}`,
      headers: asAdmin(),
      payload: { contentRetention },
    })
    expect(res.statusCode, res.body).toBe(200)
    expect(res.json().contentRetention).toBe(contentRetention)
  }
  return key
}

const eventsOf = (messageId: string) =>
  world.sql<{ type: string; payload: { data: Record<string, unknown> } }[]>`
    select type, payload from webhook_events where message_id = ${messageId} order by sequence`

async function sendText(key: Key, text: string, extra: Record<string, unknown> = {}) {
  const res = await send(app, 'send-text', key.key, { phone: '+5511987650001', text, ...extra })
  expect(res.statusCode, res.body).toBe(202)
  return res.json<{ messageId: string }>().messageId
}

/** What the fake Cloud API received for a message: the proof that delivery still had the content. */
const sentBody = (messageId: string) =>
  JSON.stringify(fake.requests.find((r) => r.messageId === messageId)?.body ?? null)

beforeAll(async () => {
  world = await createWorld()
  app = await buildTestApp(world, { WHATSAPP_APP_SECRET: APP_SECRET }, undefined, {
    clock: () => new Date(Date.now() - apiBehindMs),
  })
  fake = await startFakeWhatsApp()
  worker = await startTestWorker(
    world,
    {
      WORKER_QUEUES: 'messages',
      WHATSAPP_API_URL: fake.url,
      WHATSAPP_ACCESS_TOKEN: 'EAAG-redaction-token',
      WHATSAPP_PHONE_NUMBER_ID: NUMBER,
      CONTENT_REDACTION_INTERVAL_MS: '200',
      LOG_LEVEL: 'debug',
    },
    workerLogs.stream,
  )
  db = createDb(world.databaseUrl, { max: 2 })
})
afterAll(async () => {
  await worker?.close()
  await app?.close()
  await fake?.close()
  await db?.close()
  await world?.close()
})

describe('discard: the content never reaches Postgres', () => {
  it("a discarding key's message is delivered with its text, and the text is in no table", async () => {
    const key = await keyWith('discard')
    const text = unique('discard-key-secret')
    const id = await sendText(key, text)
    // The answer before the worker's record: it says so already.
    expect((await messageView(app, key.key, id)).redacted).toBe(true)
    // Its timeline's request (from Redis or the record, whichever holds it now) names the message, not its text.
    const timeline = async () => {
      const res = await app.inject({
        method: 'GET',
        url: `/api/third-party/messages/${id}/timeline`,
        headers: { 'x-api-key': key.key },
      })
      expect(res.statusCode, res.body).toBe(200)
      return res.json<{ request: unknown; message: { redacted?: boolean } }>()
    }
    expect(await timeline()).toMatchObject({
      request: { phone: '+5511987650001' },
      message: { redacted: true },
    })
    const view = await untilMessageStatus(app, key.key, id, 'sent')
    expect((await timeline()).request).toEqual({ phone: '+5511987650001' })
    expect(sentBody(id)).toContain(text)
    expect(view).toMatchObject({ status: 'sent', phone: '+5511987650001', redacted: true })
    expect(await columnsHolding(text)).toEqual([])
    // Nor in a log line (that the logs name the message shows they were captured).
    expect(app.logs.text()).toContain(id)
    expect(workerLogs.text()).toContain(id)
    expect(app.logs.text()).not.toContain(text)
    expect(workerLogs.text()).not.toContain(text)
    const [row] = await world.sql`select payload, redacted_at from messages where id = ${id}`
    expect(row?.payload).toEqual({ phone: '+5511987650001' })
    expect(row?.redacted_at).toBeInstanceOf(Date)
    const events = await eventsOf(id)
    expect(events.map((e) => [e.type, e.payload.data.redacted])).toEqual([['message.sent', true]])
    // The key reads its own setting.
    const me = await app.inject({ method: 'GET', url: '/api/api-keys/me', headers: { 'x-api-key': key.key } })
    expect(me.json().limits.contentRetention).toBe('discard')
  })

  it('a send of a retaining key can discard its own: template variables, batch items and scheduled ones too', async () => {
    const key = await keyWith()
    const name = unique('discard-var')
    const template = await send(app, 'send-template', key.key, {
      phone: '+5511987650002',
      templateId: 'order_shipped',
      language: 'pt_BR',
      variables: { '1': name },
      contentRetention: 'discard',
    })
    expect(template.statusCode, template.body).toBe(202)
    const templateId = template.json().messageId
    const caption = unique('discard-caption')
    const later = unique('discard-later')
    const batch = await app.inject({
      method: 'POST',
      url: '/api/third-party/messages/batch',
      headers: { 'x-api-key': key.key },
      payload: {
        messages: [
          {
            type: 'image',
            phone: '+5511987650003',
            image: { mediaId: 'media-redact-1', text: caption },
            contentRetention: 'discard',
          },
          {
            type: 'text',
            phone: '+5511987650004',
            text: later,
            sendAt: new Date(Date.now() + 3600_000).toISOString(),
            contentRetention: 'discard',
          },
        ],
      },
    })
    expect(batch.statusCode, batch.body).toBe(202)
    const [image, scheduled] = batch.json().results as { messageId: string; status: string }[]
    expect(scheduled?.status).toBe('scheduled')
    // A retained one beside them: the search finds what is stored (it is not blind).
    const kept = unique('kept-text')
    const keptId = await sendText(key, kept)

    await untilMessageStatus(app, key.key, templateId, 'sent')
    await untilMessageStatus(app, key.key, image?.messageId as string, 'sent')
    await untilMessageStatus(app, key.key, keptId, 'sent')
    expect(sentBody(templateId)).toContain(name)
    expect(sentBody(image?.messageId as string)).toContain(caption)
    for (const needle of [name, caption, later]) expect(await columnsHolding(needle)).toEqual([])
    expect(await columnsHolding(kept)).toEqual(['messages.payload'])

    const [stored] = await world.sql`select payload from messages where id = ${templateId}`
    expect(stored?.payload).toEqual({
      phone: '+5511987650002',
      templateId: 'order_shipped',
      language: 'pt_BR',
    })
    // The scheduled one is listed (recorded at accept) redacted; the retained one is not.
    const scheduledView = await messageView(app, key.key, scheduled?.messageId as string)
    expect(scheduledView).toMatchObject({ status: 'scheduled', redacted: true })
    expect(await messageView(app, key.key, keptId)).not.toHaveProperty('redacted')
    const list = await app.inject({
      method: 'GET',
      url: '/api/third-party/messages?take=10',
      headers: { 'x-api-key': key.key },
    })
    const redacted = (list.json().data as MessageView[]).filter((m) => m.redacted).map((m) => m.messageId)
    expect(redacted.sort()).toEqual([templateId, image?.messageId, scheduled?.messageId].sort())
    // Admins see the same: their list across keys, and the message's timeline.
    const admin = await app.inject({
      method: 'GET',
      url: `/api/admin/messages?apiKeyId=${key.id}&take=10`,
      headers: asAdmin(),
    })
    const adminRedacted = (admin.json().data as MessageView[])
      .filter((m) => m.redacted)
      .map((m) => m.messageId)
    expect(adminRedacted.sort()).toEqual(redacted.sort())
    const timeline = await app.inject({
      method: 'GET',
      url: `/api/admin/messages/${templateId}/timeline`,
      headers: asAdmin(),
    })
    expect(timeline.statusCode, timeline.body).toBe(200)
    expect(timeline.json().message).toMatchObject({ messageId: templateId, redacted: true })
  })

  it('refuses any other per-send value, in a send and in a batch item, with the error body', async () => {
    const key = await keyWith()
    for (const contentRetention of ['retain', 24, 'DISCARD', null]) {
      const res = await send(app, 'send-text', key.key, {
        phone: '+5511987650005',
        text: 'hi',
        contentRetention,
      })
      expectError(res, 400, 'VALIDATION_ERROR', /contentRetention/)
    }
    const batch = await app.inject({
      method: 'POST',
      url: '/api/third-party/messages/batch',
      headers: { 'x-api-key': key.key },
      payload: {
        messages: [
          { type: 'text', phone: '+5511987650005', text: 'hi', contentRetention: 'keep' },
          { type: 'text', phone: '+5511987650005', text: 'hi', contentRetention: 'discard' },
        ],
      },
    })
    expect(batch.statusCode, batch.body).toBe(202)
    expect(batch.json()).toMatchObject({ accepted: 1, rejected: 1 })
    expect(batch.json().results[0].error).toMatchObject({
      errorCode: 'VALIDATION_ERROR',
      message: expect.stringMatching(/contentRetention/),
    })
  })
})

describe("admins set a key's retention", () => {
  it('takes retain, discard or 1–8760 hours, shows it, and records the change', async () => {
    const key = await keyWith()
    const patch = (payload: object, headers: Record<string, string> = asAdmin()) =>
      app.inject({ method: 'PATCH', url: `/api/admin/api-keys/${key.id}`, headers, payload })
    for (const bad of [0, 8761, 1.5, 'forever', null]) {
      expectError(await patch({ contentRetention: bad }), 400, 'VALIDATION_ERROR', /contentRetention/)
    }
    const detail = await app.inject({
      method: 'GET',
      url: `/api/admin/api-keys/${key.id}`,
      headers: asAdmin(),
    })
    expect(detail.json().contentRetention).toBe('retain')
    expect((await patch({ contentRetention: 72 })).json().contentRetention).toBe(72)
    const history = await app.inject({
      method: 'GET',
      url: `/api/admin/api-keys/${key.id}`,
      headers: asAdmin(),
    })
    expect(history.json().history.at(-1).changes).toEqual({ contentRetention: { from: 'retain', to: 72 } })
    // Not a key's to set on itself, nor anyone's without an admin token.
    expectError(
      await patch({ contentRetention: 'retain' }, { 'x-api-key': key.key }),
      401,
      'ADMIN_AUTH_REQUIRED',
    )
    expectError(
      await patch({ contentRetention: 'retain' }, asAdmin('not-a-token')),
      401,
      'ADMIN_AUTH_REQUIRED',
    )
    const list = await app.inject({ method: 'GET', url: '/api/admin/api-keys?take=100', headers: asAdmin() })
    expect(list.json().data.find((k: { id: string }) => k.id === key.id).contentRetention).toBe(72)
  })
})

describe('hours: content is redacted once the key’s retention has passed', () => {
  it('the sweeper redacts messages (and their events) older than the limit, not younger ones', async () => {
    const key = await keyWith(1)
    const old = unique('hours-old')
    apiBehindMs = 2 * HOUR
    const oldId = await sendText(key, old)
    apiBehindMs = 0
    const young = unique('hours-young')
    const youngId = await sendText(key, young)
    await untilMessageStatus(app, key.key, youngId, 'sent')
    // The worker's own sweeper (every 200 ms here, on real time) finds the one accepted 2 h ago.
    const oldView = await waitFor(
      async () => {
        const view = await messageView(app, key.key, oldId)
        return view.redacted ? view : undefined
      },
      { what: 'the old message to be redacted' },
    )
    expect(oldView.status).toBe('sent')
    expect(sentBody(oldId)).toContain(old)
    expect(await columnsHolding(old)).toEqual([])
    expect((await eventsOf(oldId)).map((e) => e.payload.data.redacted)).toEqual([true])
    // The young one is kept, by several sweeps since; an hour and more later it goes too.
    expect(await messageView(app, key.key, youngId)).not.toHaveProperty('redacted')
    expect(await columnsHolding(young)).toEqual(['messages.payload'])
    expect((await sweepContentRedaction(db.db, new Date(Date.now() + 30 * 60_000))).messages).toBe(0)
    expect((await sweepContentRedaction(db.db, new Date(Date.now() + 2 * HOUR))).messages).toBe(1)
    expect(await messageView(app, key.key, youngId)).toMatchObject({ redacted: true })
    expect(await columnsHolding(young)).toEqual([])
    // Redacting again changes nothing.
    expect(await sweepContentRedaction(db.db, new Date(Date.now() + 3 * HOUR))).toEqual({
      messages: 0,
      replies: 0,
    })
  })

  it('a message keeps the retention its key had when it was accepted', async () => {
    const key = await keyWith()
    const before = unique('accepted-under-retain')
    const beforeId = await sendText(key, before)
    await untilMessageStatus(app, key.key, beforeId, 'sent')
    const patched = await app.inject({
      method: 'PATCH',
      url: `/api/admin/api-keys/${key.id}`,
      headers: asAdmin(),
      payload: { contentRetention: 1 },
    })
    expect(patched.json().contentRetention).toBe(1)
    const afterId = await sendText(key, unique('accepted-under-hours'))
    await untilMessageStatus(app, key.key, afterId, 'sent')
    expect((await sweepContentRedaction(db.db, new Date(Date.now() + 2 * HOUR))).messages).toBe(1)
    expect(await messageView(app, key.key, afterId)).toMatchObject({ redacted: true })
    expect(await messageView(app, key.key, beforeId)).not.toHaveProperty('redacted')
    expect(await columnsHolding(before)).toEqual(['messages.payload'])
  })
})

describe("replies follow their sender's inboundContentRetention", () => {
  const reply = (phone: string, text: string) => ({
    from: phone.slice(1),
    id: `wamid.redact-${randomUUID()}`,
    timestamp: String(Math.floor(Date.now() / 1000)),
    type: 'text',
    text: { body: text },
  })
  const setSender = async (inboundContentRetention: unknown) =>
    app.inject({
      method: 'PATCH',
      url: '/api/admin/senders/default',
      headers: asAdmin(),
      payload: { inboundContentRetention },
    })
  const inboundView = async (platformMessageId: string) => {
    const res = await app.inject({
      method: 'GET',
      url: `/api/admin/inbound-messages?take=100&q=${encodeURIComponent(platformMessageId)}`,
      headers: asAdmin(),
    })
    const found = res.json<InboundMessageList>().data.find((m) => m.platformMessageId === platformMessageId)
    if (!found) throw new Error(`reply ${platformMessageId} not stored`)
    return found
  }

  it('discard: the reply is routed and its event sent, but what it said is stored nowhere', async () => {
    expectError(await setSender(0), 400, 'VALIDATION_ERROR', /inboundContentRetention/)
    const set = await setSender('discard')
    expect(set.statusCode, set.body).toBe(200)
    expect(set.json().inboundContentRetention).toBe('discard')
    const key = await keyWith()
    const phone = '+5511987650010'
    await untilMessageStatus(app, key.key, await sendText(key, 'Your order shipped', { phone }), 'sent')
    const said = unique('reply-secret')
    const item = reply(phone, said)
    const res = await postPlatformWebhook(app, messageWebhook(NUMBER, item), APP_SECRET)
    expect(res.statusCode, res.body).toBe(200)

    const view = await inboundView(item.id)
    expect(view).toMatchObject({ apiKeyId: key.id, type: 'text', content: {}, redacted: true })
    const [event] = await eventsOf(view.id)
    expect(event?.type).toBe('message.received')
    expect(event?.payload.data).toMatchObject({
      messageId: view.id,
      phone,
      status: 'received',
      redacted: true,
    })
    expect(event?.payload.data).not.toHaveProperty('text')
    expect(await columnsHolding(said)).toEqual([])
    expect(app.logs.text()).not.toContain(said)
  })

  it('hours: a reply keeps its content until its sender’s limit has passed', async () => {
    expect((await setSender(1)).json().inboundContentRetention).toBe(1)
    const key = await keyWith()
    const phone = '+5511987650011'
    await untilMessageStatus(app, key.key, await sendText(key, 'Your order shipped', { phone }), 'sent')
    const said = unique('reply-kept')
    const item = reply(phone, said)
    expect((await postPlatformWebhook(app, messageWebhook(NUMBER, item), APP_SECRET)).statusCode).toBe(200)
    const view = await inboundView(item.id)
    expect(view.content).toEqual({ text: said })
    expect(await columnsHolding(said)).toEqual(['inbound_messages.content', 'webhook_events.payload'])

    expect((await sweepContentRedaction(db.db, new Date(Date.now() + 2 * HOUR))).replies).toBe(1)
    expect(await inboundView(item.id)).toMatchObject({ content: {}, redacted: true })
    const [event] = await eventsOf(view.id)
    expect(event?.payload.data).toMatchObject({ status: 'received', redacted: true })
    expect(await columnsHolding(said)).toEqual([])
    expect((await setSender('retain')).json().inboundContentRetention).toBe('retain')
  })
})
