import type { AdminMessageView, InboundMessageView, MessageView } from '@dispatch/contracts'
import {
  type FakeWhatsApp,
  messageWebhook,
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
  asAdmin,
  buildTestApp,
  createWorld,
  decide,
  expectError,
  postPlatformWebhook,
  SEND_SCOPES,
  send,
  startTestWorker,
  type TestApp,
  type TestWorld,
} from '../helpers.ts'

// Revoking a key, seen from outside (issue 41): its waiting messages end `canceled`
// (`key_revoked`) and never reach the platform, one a worker already holds is not sent either, its
// endpoints hear nothing more, and its conversations' replies go elsewhere. The whole worker runs
// (outbox relay, lifecycle sweep, senders, webhooks) against the fake Cloud API and a local receiver.
const APP_SECRET = 'whatsapp-app-secret-for-revocation-tests'
const NUMBER = '106540352242922'
const ALL_EVENTS = [
  'message.sent',
  'message.failed',
  'message.canceled',
  'message.expired',
  'message.received',
]

let world: TestWorld
let app: TestApp
let fake: FakeWhatsApp
let worker: RunningWorker
let receiver: WebhookReceiver
type Key = { id: string; key: string }

beforeAll(async () => {
  world = await createWorld()
  app = await buildTestApp(world, {
    WHATSAPP_APP_SECRET: APP_SECRET,
    SCHEDULE_MIN_AHEAD_SECONDS: '1',
    MESSAGE_RATE_PER_SECOND: '100000',
  })
  fake = await startFakeWhatsApp()
  receiver = await startWebhookReceiver()
  worker = await startWorker()
})
const startWorker = () =>
  startTestWorker(world, {
    WHATSAPP_API_URL: fake.url,
    WHATSAPP_ACCESS_TOKEN: 'EAAG-revocation-tests',
    WHATSAPP_PHONE_NUMBER_ID: NUMBER,
    // A failed first try is retried a second or two later: time to revoke the key in between.
    MESSAGES_BACKOFF_MS: '2500',
    WEBHOOK_RETRY_SCHEDULE: Array.from({ length: 20 }, () => '300ms').join(','),
  })
afterAll(async () => {
  await worker?.close()
  await app?.close()
  await fake?.close()
  await receiver?.close()
  await world?.close()
})

/** An approved key with an endpoint on `on` subscribed to every message event. */
async function keyWithEndpoint(on: WebhookReceiver = receiver): Promise<Key> {
  const key = await activeKey(app, { scopes: [...SEND_SCOPES, 'manage:webhooks'] })
  await addWebhookEndpoint(app, key.key, { url: on.url, events: ALL_EVENTS })
  return key
}

async function sendText(key: Key, phone: string, extra: Record<string, unknown> = {}) {
  const res = await send(app, 'send-text', key.key, { phone, text: 'Your table is ready', ...extra })
  expect(res.statusCode, res.body).toBe(202)
  return res.json<{ messageId: string; status: string }>()
}

async function revoke(key: Key) {
  const res = await decide(app, key.id, 'revoke', { reason: 'contract ended' })
  expect(res.statusCode, res.body).toBe(200)
  expect(res.json()).toMatchObject({ status: 'revoked' })
}

/** The message as an admin sees it (the revoked key itself can no longer look). */
async function adminView(key: Key, messageId: string): Promise<AdminMessageView | undefined> {
  const res = await app.inject({
    method: 'GET',
    url: `/api/admin/messages?apiKeyId=${key.id}&take=100`,
    headers: asAdmin(),
  })
  expect(res.statusCode, res.body).toBe(200)
  return res.json<{ data: AdminMessageView[] }>().data.find((m) => m.messageId === messageId)
}
const untilAdminStatus = (key: Key, messageId: string, status: MessageView['status'], timeoutMs = 10_000) =>
  waitFor(
    async () => {
      const view = await adminView(key, messageId)
      return view?.status === status ? view : undefined
    },
    { timeoutMs, what: `${messageId} to be ${status}` },
  )
const eventsAbout = (messageId: string) =>
  receiver.received.filter((r) => r.json.data?.messageId === messageId)
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe('revoking a key', () => {
  it('cancels its scheduled message (key_revoked): never sent, and its endpoint hears nothing of it', async () => {
    const key = await keyWithEndpoint()
    const sendAt = new Date(Date.now() + 4000)
    const accepted = await sendText(key, '+5511911110001', { sendAt: sendAt.toISOString() })
    expect(accepted.status).toBe('scheduled')
    await revoke(key)

    const canceled = await untilAdminStatus(key, accepted.messageId, 'canceled')
    expect(canceled).toMatchObject({
      cancelReason: 'key_revoked',
      lastError: { code: 'KEY_REVOKED', message: expect.stringMatching(/revoked/) },
      platformMessageId: null,
      sendAt: sendAt.toISOString(),
    })
    // Canceled by the revocation's sweep, not when it fell due.
    expect(Date.parse(canceled.updatedAt)).toBeLessThan(sendAt.getTime())
    // Well past its time: the platform never saw it, and the endpoint got no event about it.
    await sleep(Math.max(0, sendAt.getTime() - Date.now()) + 2000)
    expect(fake.requests.filter((r) => r.messageId === accepted.messageId)).toEqual([])
    expect(eventsAbout(accepted.messageId)).toEqual([])
    expect((await adminView(key, accepted.messageId))?.status).toBe('canceled')
    // The key itself is refused from then on.
    const refused = await send(app, 'send-text', key.key, { phone: '+5511911110001', text: 'again' })
    expectError(refused, 403, 'API_KEY_NOT_ACTIVE', /revoked/)
  })

  it('cancels every scheduled message it has, on time and without an event', async () => {
    const key = await keyWithEndpoint()
    // Many at once, due soon: the sweep cancels what waits in Redis; one a worker took meanwhile meets
    // the check at delivery. None may reach the platform after the revoke.
    const accepted = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        sendText(key, `+55119111120${String(i).padStart(2, '0')}`, {
          sendAt: new Date(Date.now() + 3000).toISOString(),
        }),
      ),
    )
    await revoke(key)
    const revokedAt = Date.now()
    for (const { messageId } of accepted) {
      await untilAdminStatus(key, messageId, 'canceled')
    }
    await sleep(4000)
    const ids = new Set(accepted.map((a) => a.messageId))
    expect(
      fake.requests.filter((r) => r.messageId && ids.has(r.messageId) && r.receivedAt >= revokedAt),
    ).toEqual([])
    for (const { messageId } of accepted) {
      expect(eventsAbout(messageId).map((e) => e.json.type)).toEqual([])
      expect(await adminView(key, messageId)).toMatchObject({
        status: 'canceled',
        cancelReason: 'key_revoked',
      })
    }
  })

  it('revoked while no worker runs, its scheduled message is canceled once one starts, long before its time', async () => {
    await worker.close()
    let restarted = false
    try {
      const key = await keyWithEndpoint()
      const sendAt = new Date(Date.now() + 120_000)
      const accepted = await sendText(key, '+5511911110005', { sendAt: sendAt.toISOString() })
      await revoke(key)
      await sleep(500)
      expect((await adminView(key, accepted.messageId))?.status).toBe('scheduled')
      // The sweep waited in the outbox, committed with the revocation: the worker carries it out.
      worker = await startWorker()
      restarted = true
      const canceled = await untilAdminStatus(key, accepted.messageId, 'canceled')
      expect(canceled).toMatchObject({ cancelReason: 'key_revoked' })
      expect(fake.requests.filter((r) => r.messageId === accepted.messageId)).toEqual([])
      expect(eventsAbout(accepted.messageId)).toEqual([])
    } finally {
      if (!restarted) worker = await startWorker()
    }
  })

  it('a message a worker already holds (admitted, tried once, waiting for its retry) is not sent', async () => {
    const key = await keyWithEndpoint()
    // The first try fails with a retryable error: the message stays in the worker's hands, its
    // claim taken, until the retry.
    fake.script({ status: 500, body: { error: { message: 'try later', code: 2, type: 'OAuthException' } } })
    const accepted = await sendText(key, '+5511911110003')
    await waitFor(() => fake.requests.find((r) => r.messageId === accepted.messageId), {
      what: 'the first try of the message',
    })
    expect(fake.sendsOf(accepted.messageId)).toBe(0)
    await revoke(key)

    const canceled = await untilAdminStatus(key, accepted.messageId, 'canceled', 15_000)
    expect(canceled).toMatchObject({ cancelReason: 'key_revoked', platformMessageId: null })
    await sleep(1000)
    // Tried once (refused), never again: no send reached the platform.
    expect(fake.requests.filter((r) => r.messageId === accepted.messageId)).toHaveLength(1)
    expect(fake.sendsOf(accepted.messageId)).toBe(0)
    expect(eventsAbout(accepted.messageId).map((e) => e.json.type)).not.toContain('message.sent')
  })

  it("drops its endpoints' deliveries still pending: a failing endpoint is not tried again after the revoke", async () => {
    const flaky = await startWebhookReceiver()
    try {
      flaky.answer = () => ({ status: 500, body: 'down for maintenance' })
      const key = await keyWithEndpoint(flaky)
      const accepted = await sendText(key, '+5511911110004')
      // message.sent is being retried against the failing endpoint, every 300 ms for 6 s.
      await waitFor(() => (flaky.requests.length >= 2 ? true : undefined), { what: 'two failed tries' })
      await revoke(key)
      const revokedAt = Date.now()
      expect(
        flaky.requests.filter((r) => r.json.data?.messageId === accepted.messageId).length,
      ).toBeGreaterThan(0)
      // A try already under way when the worker reads the endpoint's key (cached 1 s) may still land;
      // none after that.
      await sleep(4000)
      expect(flaky.requests.filter((r) => r.receivedAt > revokedAt + 1500).map((r) => r.json.type)).toEqual(
        [],
      )
    } finally {
      await flaky.close()
    }
  })
})

describe("replies after a key's revocation", () => {
  const seconds = (ms: number) => String(Math.floor(ms / 1000))
  let sequence = 0
  const reply = (phone: string, fields: Record<string, unknown> = {}) => ({
    from: phone.slice(1),
    id: `wamid.revocation-reply-${++sequence}.${Date.now()}`,
    timestamp: seconds(Date.now()),
    type: 'text',
    text: { body: 'Is it still on?' },
    ...fields,
  })
  async function deliver(...messages: unknown[]) {
    const res = await postPlatformWebhook(app, messageWebhook(NUMBER, ...messages), APP_SECRET)
    expect(res.statusCode, res.body).toBe(200)
  }
  async function routedTo(item: { id: string }): Promise<InboundMessageView> {
    const res = await app.inject({
      method: 'GET',
      url: `/api/admin/inbound-messages?take=10&q=${encodeURIComponent(item.id)}`,
      headers: asAdmin(),
    })
    expect(res.statusCode, res.body).toBe(200)
    const found = res.json<{ data: InboundMessageView[] }>().data.find((m) => m.platformMessageId === item.id)
    if (!found) throw new Error(`reply ${item.id} not stored`)
    return found
  }
  const sentBy = async (key: Key, phone: string) => {
    const { messageId } = await sendText(key, phone)
    const view = await untilAdminStatus(key, messageId, 'sent')
    return view
  }

  it('are routed to another key that wrote to the phone, or to none, never to the revoked key', async () => {
    const shared = '+5511911110101'
    const only = '+5511911110102'
    const other = await keyWithEndpoint()
    const revoked = await keyWithEndpoint()
    // Both wrote to `shared`, the revoked key last (it would have won); only it wrote to `only`.
    await sentBy(other, shared)
    const quoted = await sentBy(revoked, shared)
    await sentBy(revoked, only)
    await revoke(revoked)

    const plain = reply(shared)
    const quoting = reply(shared, { context: { from: NUMBER, id: quoted.platformMessageId } })
    const lone = reply(only)
    await deliver(plain, quoting, lone)

    expect(await routedTo(plain)).toMatchObject({ apiKeyId: other.id, inReplyTo: null })
    expect(await routedTo(quoting)).toMatchObject({ apiKeyId: other.id, inReplyTo: null })
    expect(await routedTo(lone)).toMatchObject({ apiKeyId: null, inReplyTo: null })
    // No message.received reached the revoked key's endpoint (nor any event written for it).
    const events = await world.sql<{ type: string }[]>`
      select type from webhook_events where api_key_id = ${revoked.id} and type = 'message.received'`
    expect(events).toEqual([])
  })
})
