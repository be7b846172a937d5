import { randomBytes } from 'node:crypto'
import {
  QueueNames,
  WebhookAttemptList,
  type WebhookEndpointWithSecret,
  webhookJobId,
} from '@dispatch/contracts'
import { createSecretBox } from '@dispatch/runtime'
import {
  captureLogs,
  type FakeWhatsApp,
  graphError,
  messageWebhook,
  startFakeWhatsApp,
  startWebhookReceiver,
  statusWebhook,
  type WebhookReceiver,
  waitFor,
} from '@dispatch/testing'
import type { RunningWorker } from '@dispatch/worker'
import { Queue } from 'bullmq'
import { Redis } from 'ioredis'
import { Webhook } from 'standardwebhooks'
import Value from 'typebox/value'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  activeKey,
  buildTestApp,
  createWorld,
  expectError,
  postPlatformWebhook,
  SEND_SCOPES,
  send,
  startTestWorker,
  type TestApp,
  type TestWorld,
} from '../helpers.ts'

const APP_SECRET = 'whatsapp-app-secret-for-webhook-tests'
const PHONE_NUMBER_ID = '106540352242922'
const SCOPES = [...SEND_SCOPES, 'manage:webhooks']
const ALL_EVENTS = [
  'message.sent',
  'message.delivered',
  'message.read',
  'message.failed',
  'message.received',
  'message.expired',
  'message.canceled',
]

let world: TestWorld
let app: TestApp
let fake: FakeWhatsApp
let worker: RunningWorker
/** What the worker logs at level error and above. */
const workerLogs = captureLogs()
let key: { id: string; key: string }
beforeAll(async () => {
  world = await createWorld()
  app = await buildTestApp(world, {
    WHATSAPP_APP_SECRET: APP_SECRET,
    SCHEDULE_MIN_AHEAD_SECONDS: '1',
    MESSAGE_VALIDITY_MIN_SECONDS: '1',
  })
  fake = await startFakeWhatsApp()
  worker = await startTestWorker(
    world,
    {
      WHATSAPP_API_URL: fake.url,
      WHATSAPP_ACCESS_TOKEN: 'EAAG-webhook-tests',
      WHATSAPP_PHONE_NUMBER_ID: PHONE_NUMBER_ID,
      MESSAGES_BACKOFF_MS: '50',
      // Quick tries, so a test sees several within seconds; the real schedule is Svix's.
      WEBHOOK_RETRY_SCHEDULE: '200ms,400ms,800ms,1s,1s,1s,1s',
      WEBHOOK_TIMEOUT_MS: '1000',
      WEBHOOK_SLOW_DOWN_MS: '500',
      LOG_LEVEL: 'error',
    },
    workerLogs.stream,
  )
  key = await activeKey(app, { scopes: SCOPES })
})
afterAll(async () => {
  await worker?.close()
  await app?.close()
  await fake?.close()
  await world?.close()
})

const call = (method: 'GET' | 'POST' | 'PATCH', path: string, apiKey = key.key, payload?: object) =>
  app.inject({
    method,
    url: `/api/third-party/webhook-endpoints${path}`,
    headers: { 'x-api-key': apiKey },
    ...(payload ? { payload } : {}),
  })

async function register(receiver: WebhookReceiver, events = ALL_EVENTS, apiKey = key.key) {
  const res = await call('POST', '', apiKey, { url: receiver.url, events })
  expect(res.statusCode, res.body).toBe(201)
  return res.json<WebhookEndpointWithSecret>()
}

async function sendText(apiKey = key.key, phone = '+5511987654321', clientReference?: string) {
  const res = await send(app, 'send-text', apiKey, {
    phone,
    text: 'Your code is 123456',
    ...(clientReference ? { clientReference } : {}),
  })
  expect(res.statusCode, res.body).toBe(202)
  return res.json<{ messageId: string }>().messageId
}

/** The platform's id for a message, once the fake accepted it. */
const wamidOf = (messageId: string) =>
  waitFor(
    () => fake.requests.find((r) => r.messageId === messageId && r.platformMessageId)?.platformMessageId,
    {
      what: `the platform send of ${messageId}`,
    },
  )

async function reportStatus(wamid: string, status: 'delivered' | 'read') {
  const body = statusWebhook({
    id: wamid,
    status,
    timestamp: String(Math.floor(Date.now() / 1000)),
    recipient_id: '5511987654321',
  })
  const res = await postPlatformWebhook(app, body, APP_SECRET)
  expect(res.statusCode, res.body).toBe(200)
}

const eventsAbout = (receiver: WebhookReceiver, messageId: string) =>
  receiver.received.filter((r) => r.json.data?.messageId === messageId)

const waitForEvent = (receiver: WebhookReceiver, messageId: string, type: string, timeoutMs = 10_000) =>
  waitFor(() => eventsAbout(receiver, messageId).find((r) => r.json.type === type), {
    timeoutMs,
    what: `${type} for ${messageId}`,
  })

async function attempts(endpointId: string, query = 'take=100', apiKey = key.key) {
  const res = await call('GET', `/${endpointId}/attempts?${query}`, apiKey)
  expect(res.statusCode, res.body).toBe(200)
  expect(Value.Check(WebhookAttemptList, res.json()), res.body).toBe(true)
  return res.json<WebhookAttemptList>().data
}

describe('webhook events reach the sender, signed', () => {
  it('sent, delivered and read arrive in order, each verified by standardwebhooks, with the sequence and clientReference', async () => {
    const receiver = await startWebhookReceiver()
    try {
      const endpoint = await register(receiver)
      const verifier = new Webhook(endpoint.secret)
      const messageId = await sendText(key.key, '+5511987654321', 'order-42')
      const wamid = await wamidOf(messageId)
      await waitForEvent(receiver, messageId, 'message.sent')
      await reportStatus(wamid, 'delivered')
      await waitForEvent(receiver, messageId, 'message.delivered')
      await reportStatus(wamid, 'read')
      await waitForEvent(receiver, messageId, 'message.read')

      const events = eventsAbout(receiver, messageId)
      expect(events.map((e) => e.json.type)).toEqual(['message.sent', 'message.delivered', 'message.read'])
      expect(events.map((e) => e.json.data.sequence)).toEqual([1, 2, 3])
      for (const event of events) {
        // Throws on a bad signature or a stale timestamp.
        verifier.verify(event.body, event.headers as Record<string, string>)
        expect(event.headers['webhook-id']).toMatch(/^msg_[0-9a-f]{32}$/)
        expect(event.headers['content-type']).toBe('application/json')
        expect(event.json.data).toMatchObject({
          messageId,
          clientReference: 'order-42',
          phone: '+5511987654321',
          type: 'text',
        })
        expect(new Date(event.json.timestamp).toString()).not.toBe('Invalid Date')
      }
      expect(events.map((e) => e.json.data.status)).toEqual(['sent', 'delivered', 'read'])
      // A tampered body does not verify: the check above is a real one.
      expect(() =>
        verifier.verify(events[0]?.body.replace('order-42', 'order-43') ?? '', events[0]?.headers as never),
      ).toThrow()

      // The worker records an attempt once the receiver has answered: after the test saw the request.
      const log = await waitFor(
        async () => {
          const listed = await attempts(endpoint.id)
          return listed.length >= 3 ? listed : undefined
        },
        { what: 'three attempts recorded' },
      )
      expect(log).toHaveLength(3)
      for (const a of log)
        expect(a).toMatchObject({ attempt: 1, success: true, statusCode: 204, nextRetryAt: null })
    } finally {
      await receiver.close()
    }
  })

  it('a failed attempt says it will be retried, the final failure says it will not', async () => {
    const receiver = await startWebhookReceiver()
    try {
      await register(receiver, ['message.failed'])
      fake.script(
        graphError(131000, 'Something went wrong', 500),
        graphError(131026, 'Message undeliverable'),
      )
      const messageId = await sendText()
      const final = await waitFor(
        () =>
          eventsAbout(receiver, messageId).find(
            (e) => (e.json.data.error as { willRetry?: boolean })?.willRetry === false,
          ),
        { what: 'the final message.failed' },
      )
      const events = eventsAbout(receiver, messageId)
      expect(events.map((e) => e.json.type)).toEqual(['message.failed', 'message.failed'])
      expect(events[0]?.json.data).toMatchObject({
        status: 'sending',
        error: { code: '131000', willRetry: true },
      })
      expect(final.json.data).toMatchObject({ status: 'failed', error: { code: '131026', willRetry: false } })
      expect(events.map((e) => e.json.data.sequence)).toEqual([1, 2])
    } finally {
      await receiver.close()
    }
  })

  it('a reply arrives as message.received, signed, quoting the message it answers', async () => {
    const receiver = await startWebhookReceiver()
    try {
      const endpoint = await register(receiver, ['message.received'])
      const messageId = await sendText(key.key, '+5511912345678', 'ticket-7')
      const wamid = await wamidOf(messageId)
      await waitFor(
        async () =>
          (
            await app.inject({
              method: 'GET',
              url: `/api/third-party/messages/${messageId}`,
              headers: { 'x-api-key': key.key },
            })
          ).json().status === 'sent',
      )
      const body = messageWebhook(PHONE_NUMBER_ID, {
        from: '5511912345678',
        id: 'wamid.reply-to-ticket-7',
        timestamp: String(Math.floor(Date.now() / 1000)),
        type: 'text',
        text: { body: 'Yes, Tuesday works' },
        context: { from: '15550001111', id: wamid },
      })
      const res = await postPlatformWebhook(app, body, APP_SECRET)
      expect(res.statusCode, res.body).toBe(200)
      const event = await waitFor(() => receiver.received.find((r) => r.json.type === 'message.received'), {
        what: 'message.received',
      })
      new Webhook(endpoint.secret).verify(event.body, event.headers as Record<string, string>)
      expect(event.json.data).toMatchObject({
        status: 'received',
        sequence: 1,
        phone: '+5511912345678',
        phoneNumberId: PHONE_NUMBER_ID,
        type: 'text',
        text: 'Yes, Tuesday works',
        inReplyTo: messageId,
        clientReference: 'ticket-7',
      })
      expect(event.json.data.messageId).not.toBe(messageId)
    } finally {
      await receiver.close()
    }
  })

  it('a canceled message is reported as message.canceled, an expired one as message.expired', async () => {
    const receiver = await startWebhookReceiver()
    try {
      await register(receiver, ['message.canceled', 'message.expired'])
      const scheduled = await send(app, 'send-text', key.key, {
        phone: '+5511987654321',
        text: 'later',
        clientReference: 'to-cancel',
        sendAt: new Date(Date.now() + 60_000).toISOString(),
      })
      const canceledId = scheduled.json<{ messageId: string }>().messageId
      const res = await app.inject({
        method: 'POST',
        url: `/api/third-party/messages/${canceledId}/cancel`,
        headers: { 'x-api-key': key.key },
      })
      expect(res.statusCode, res.body).toBe(200)
      const canceled = await waitForEvent(receiver, canceledId, 'message.canceled')
      expect(canceled.json.data).toMatchObject({ status: 'canceled', clientReference: 'to-cancel' })

      fake.script(...Array.from({ length: 20 }, () => graphError(130429, 'Rate limit hit', 400)))
      const raw = await send(app, 'send-text', key.key, {
        phone: '+5511987654321',
        text: 'x',
        validitySeconds: 1,
      })
      const shortLived = raw.json<{ messageId: string }>().messageId
      const expired = await waitForEvent(receiver, shortLived, 'message.expired', 15_000)
      expect(expired.json.data).toMatchObject({
        status: 'expired',
        error: { code: 'MESSAGE_EXPIRED', willRetry: false },
      })
    } finally {
      fake.clearScript()
      await receiver.close()
    }
  }, 30_000)

  it('after a rotation, deliveries are signed with both secrets for the overlap', async () => {
    const receiver = await startWebhookReceiver()
    try {
      const endpoint = await register(receiver, ['message.sent'])
      const rotated = await call('POST', `/${endpoint.id}/rotate-secret`)
      expect(rotated.statusCode, rotated.body).toBe(200)
      const newSecret = rotated.json<WebhookEndpointWithSecret>().secret
      // The worker reads an endpoint at most a second old.
      await new Promise((r) => setTimeout(r, 1100))
      const messageId = await sendText()
      const event = await waitForEvent(receiver, messageId, 'message.sent')
      const headers = event.headers as Record<string, string>
      expect(headers['webhook-signature']?.split(' ')).toHaveLength(2)
      new Webhook(endpoint.secret).verify(event.body, headers)
      new Webhook(newSecret).verify(event.body, headers)
    } finally {
      await receiver.close()
    }
  })

  it("another key's endpoint never receives this key's events", async () => {
    const mine = await startWebhookReceiver()
    const theirs = await startWebhookReceiver()
    try {
      const other = await activeKey(app, { scopes: SCOPES })
      await register(mine, ['message.sent'])
      await register(theirs, ['message.sent'], other.key)
      const messageId = await sendText()
      const otherMessageId = await sendText(other.key)
      await waitForEvent(mine, messageId, 'message.sent')
      await waitForEvent(theirs, otherMessageId, 'message.sent')
      expect(eventsAbout(theirs, messageId)).toEqual([])
      expect(eventsAbout(mine, otherMessageId)).toEqual([])
    } finally {
      await mine.close()
      await theirs.close()
    }
  })
})

describe('failing receivers', () => {
  it('a receiver answering 500 three times gets the event on the fourth try, same webhook-id, every try listed', async () => {
    const receiver = await startWebhookReceiver()
    try {
      receiver.answer = (_request, index) => (index < 3 ? { status: 500, body: 'not now' } : { status: 200 })
      const endpoint = await register(receiver, ['message.sent'])
      const messageId = await sendText()
      await waitFor(() => receiver.received.length >= 4 && receiver.received, { what: 'four tries' })
      const ids = new Set(receiver.received.map((r) => r.headers['webhook-id']))
      expect(ids.size).toBe(1)
      expect(eventsAbout(receiver, messageId)).toHaveLength(4)
      const log = await waitFor(async () => {
        const list = await attempts(endpoint.id, 'take=10&order=ASC')
        return list.length === 4 && list
      })
      expect(log.map((a) => [a.attempt, a.statusCode, a.success])).toEqual([
        [1, 500, false],
        [2, 500, false],
        [3, 500, false],
        [4, 200, true],
      ])
      expect(log[0]?.responseExcerpt).toBe('not now')
      expect(log[0]?.nextRetryAt).not.toBeNull()
      expect(log[3]?.nextRetryAt).toBeNull()
      const failed = await attempts(endpoint.id, 'success=false&take=10')
      expect(failed).toHaveLength(3)
    } finally {
      await receiver.close()
    }
  })

  it('a receiver that hangs is cut at the timeout, and the try is retried', async () => {
    const receiver = await startWebhookReceiver()
    try {
      receiver.answer = (_request, index) => (index === 0 ? 'hang' : { status: 204 })
      const endpoint = await register(receiver, ['message.sent'])
      await sendText()
      await waitFor(() => receiver.received.length >= 2, { what: 'the try after the timeout' })
      const log = await waitFor(async () => {
        const list = await attempts(endpoint.id, 'take=10&order=ASC')
        return list.length === 2 && list
      })
      expect(log[0]).toMatchObject({ success: false, statusCode: null })
      expect(log[0]?.error).toMatch(/timed out/)
      expect(log[0]?.durationMs).toBeGreaterThanOrEqual(900)
      expect(log[1]).toMatchObject({ success: true, statusCode: 204 })
    } finally {
      await receiver.close()
    }
  })

  it('a redirect is not followed: the try fails and the redirect target gets nothing', async () => {
    const target = await startWebhookReceiver()
    const receiver = await startWebhookReceiver()
    try {
      receiver.answer = () => ({ status: 302, headers: { location: target.url } })
      const endpoint = await register(receiver, ['message.sent'])
      await sendText()
      const log = await waitFor(async () => {
        const list = await attempts(endpoint.id, 'take=10&order=ASC')
        return list.length >= 2 && list
      })
      expect(log[0]).toMatchObject({ success: false, statusCode: 302 })
      expect(target.received).toEqual([])
    } finally {
      await receiver.close()
      await target.close()
    }
  })

  it('410 Gone disables the endpoint at once; it gets nothing more until enabled again', async () => {
    const receiver = await startWebhookReceiver()
    try {
      receiver.answer = () => ({ status: 410 })
      const endpoint = await register(receiver, ['message.sent'])
      await sendText()
      const disabled = await waitFor(async () => {
        const res = await call('GET', `/${endpoint.id}`)
        return res.json().enabled === false && res.json()
      })
      expect(disabled).toMatchObject({ enabled: false, disabledReason: 'gone' })
      expect(receiver.received).toHaveLength(1)
      await sendText()
      await new Promise((r) => setTimeout(r, 1500))
      expect(receiver.received).toHaveLength(1)

      // Retrying to a disabled endpoint is refused with a reason, not silently dropped.
      const retry = await call(
        'POST',
        `/${endpoint.id}/events/${receiver.received[0]?.headers['webhook-id']}/retry`,
      )
      expectError(retry, 409, 'INVALID_STATE_TRANSITION', /disabled/)

      const enabled = await call('PATCH', `/${endpoint.id}`, key.key, { enabled: true })
      expect(enabled.json()).toMatchObject({ enabled: true, disabledReason: null, failingSince: null })
    } finally {
      await receiver.close()
    }
  })

  it('429 with Retry-After slows the endpoint down for that long', async () => {
    const receiver = await startWebhookReceiver()
    try {
      receiver.answer = (_request, index) =>
        index === 0 ? { status: 429, headers: { 'retry-after': '2' } } : { status: 204 }
      const endpoint = await register(receiver, ['message.sent'])
      await sendText()
      await waitFor(() => receiver.received.length >= 1)
      await sendText()
      await waitFor(() => receiver.received.length >= 3, { what: 'both events delivered' })
      const [first, ...rest] = receiver.received
      for (const later of rest)
        expect(later.receivedAt - (first?.receivedAt ?? 0)).toBeGreaterThanOrEqual(1900)
      const log = await attempts(endpoint.id, 'take=10&order=ASC')
      expect(log[0]).toMatchObject({ statusCode: 429 })
      expect(
        Date.parse(log[0]?.nextRetryAt ?? '') - Date.parse(log[0]?.createdAt ?? ''),
      ).toBeGreaterThanOrEqual(2000)
    } finally {
      await receiver.close()
    }
  })
})

describe('retry and replay', () => {
  it('retries one event on request, with the same webhook-id', async () => {
    const receiver = await startWebhookReceiver()
    try {
      const endpoint = await register(receiver, ['message.sent'])
      const messageId = await sendText()
      const first = await waitForEvent(receiver, messageId, 'message.sent')
      const eventId = String(first.headers['webhook-id'])
      const res = await call('POST', `/${endpoint.id}/events/${eventId}/retry`)
      expect(res.statusCode, res.body).toBe(202)
      expect(res.json()).toEqual({ eventId, endpointId: endpoint.id })
      await waitFor(() => receiver.deliveriesOf(eventId).length === 2, { what: 'the retried event' })
      expect(receiver.deliveriesOf(eventId)[1]?.body).toBe(first.body)
      // The event as its deliveries send it: the very body the receiver got and verified.
      const read = await call('GET', `/${endpoint.id}/events/${eventId}`)
      expect(read.statusCode, read.body).toBe(200)
      expect(read.json()).toMatchObject({ id: eventId, type: 'message.sent', body: first.body })
      expectError(await call('GET', `/${endpoint.id}/events/msg_0000`), 404, 'NOT_FOUND')

      const unknown = await call('POST', `/${endpoint.id}/events/msg_0000/retry`)
      expectError(unknown, 404, 'NOT_FOUND')
      const other = await activeKey(app, { scopes: SCOPES })
      const foreign = await call('POST', `/${endpoint.id}/events/${eventId}/retry`, other.key)
      expectError(foreign, 404, 'NOT_FOUND')
      expectError(await call('GET', `/${endpoint.id}/events/${eventId}`, other.key), 404, 'NOT_FOUND')
    } finally {
      await receiver.close()
    }
  })

  it('replays exactly the events of a window, after the receiver was down', async () => {
    const receiver = await startWebhookReceiver()
    try {
      const endpoint = await register(receiver, ['message.sent'])
      const before = await sendText()
      await waitForEvent(receiver, before, 'message.sent')
      await new Promise((r) => setTimeout(r, 50))
      const since = new Date()
      const inWindow = [await sendText(), await sendText()]
      for (const id of inWindow) await waitForEvent(receiver, id, 'message.sent')
      await new Promise((r) => setTimeout(r, 50))
      const until = new Date()
      const after = await sendText()
      await waitForEvent(receiver, after, 'message.sent')

      const count = receiver.received.length
      const res = await call('POST', `/${endpoint.id}/replay`, key.key, {
        since: since.toISOString(),
        until: until.toISOString(),
      })
      expect(res.statusCode, res.body).toBe(202)
      expect(res.json()).toMatchObject({ events: 2 })
      await waitFor(() => receiver.received.length === count + 2, { what: 'the replayed events' })
      await new Promise((r) => setTimeout(r, 500))
      const replayed = receiver.received.slice(count).map((r) => r.json.data.messageId)
      expect(replayed.sort()).toEqual([...inWindow].sort())

      const bad = await call('POST', `/${endpoint.id}/replay`, key.key, {
        since: until.toISOString(),
        until: since.toISOString(),
      })
      expectError(bad, 400, 'VALIDATION_ERROR', /until/)
    } finally {
      await receiver.close()
    }
  })
})

describe('signing secrets at rest', () => {
  it('an endpoint from before secrets were sealed (a clear whsec_ in its row) is delivered, signed with it', async () => {
    const receiver = await startWebhookReceiver()
    try {
      const owner = await activeKey(app, { scopes: SCOPES })
      const endpoint = await register(receiver, ['message.sent'], owner.key)
      const legacy = `whsec_${randomBytes(32).toString('base64')}`
      await world.sql`update webhook_endpoints set secret = ${legacy} where id = ${endpoint.id}`
      const messageId = await sendText(owner.key)
      const event = await waitForEvent(receiver, messageId, 'message.sent')
      const headers = event.headers as Record<string, string>
      new Webhook(legacy).verify(event.body, headers)
      expect(() => new Webhook(endpoint.secret).verify(event.body, headers)).toThrow()
    } finally {
      await receiver.close()
    }
  })

  it('a secret sealed under a key the worker lacks: not delivered, no try spent, logged without the value; delivered once it opens', async () => {
    const receiver = await startWebhookReceiver()
    const connection = new Redis(world.redisUrl, { maxRetriesPerRequest: null })
    const queue = new Queue(QueueNames.webhooks, { connection, prefix: world.queuePrefix })
    try {
      const owner = await activeKey(app, { scopes: SCOPES })
      const endpoint = await register(receiver, ['message.sent'], owner.key)
      const otherKey = randomBytes(32).toString('base64')
      const foreign = createSecretBox({ APP_ENV: 'production', SECRETS_KEY: otherKey }).seal(endpoint.secret)
      await world.sql`update webhook_endpoints set secret = ${foreign} where id = ${endpoint.id}`
      const messageId = await sendText(owner.key)

      const eventId = await waitFor(
        async () =>
          (
            await world.sql`select id from webhook_events where api_key_id = ${owner.id} and type = 'message.sent'`
          )[0]?.id as string | undefined,
        { what: 'the message.sent event' },
      )
      const job = await waitFor(
        async () => {
          const found = await queue.getJob(webhookJobId(eventId, endpoint.id))
          return found && (await found.getState()) === 'delayed' && found
        },
        { what: 'the delivery postponed' },
      )
      expect(job.attemptsMade).toBe(0)
      await new Promise((r) => setTimeout(r, 500))
      expect(eventsAbout(receiver, messageId)).toEqual([])
      const tries = await world.sql`select 1 from webhook_attempts where endpoint_id = ${endpoint.id}`
      expect(tries).toHaveLength(0)
      const line = workerLogs.lines.find((l) => l.includes('webhook signing secret cannot be opened'))
      expect(line).toBeDefined()
      expect(JSON.parse(line ?? '{}')).toMatchObject({ level: 50, webhookEndpointId: endpoint.id, eventId })
      expect(workerLogs.text()).not.toContain(foreign.split('.').slice(2).join('.'))
      expect(workerLogs.text()).not.toContain(endpoint.secret)

      // The key put right (here: sealed again under the worker's key), the same job goes out, as its first try.
      const box = createSecretBox({ APP_ENV: 'development' })
      await world.sql`update webhook_endpoints set secret = ${box.seal(endpoint.secret)} where id = ${endpoint.id}`
      await new Promise((r) => setTimeout(r, 1100))
      await job.promote()
      const event = await waitForEvent(receiver, messageId, 'message.sent')
      new Webhook(endpoint.secret).verify(event.body, event.headers as Record<string, string>)
      const log = await waitFor(async () => {
        const list = await attempts(endpoint.id, 'take=10', owner.key)
        return list.length === 1 && list
      })
      expect(log[0]).toMatchObject({ attempt: 1, success: true })
    } finally {
      await queue.close()
      connection.disconnect()
      await receiver.close()
    }
  })
})
