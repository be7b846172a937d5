import {
  WEBHOOK_EVENT_TYPES,
  WebhookAttemptList,
  type WebhookAttemptView,
  type WebhookEndpointWithSecret,
  WebhookEventTypeList,
  type WebhookEventTypeView,
} from '@dispatch/contracts'
import { messageIdAt } from '@dispatch/runtime'
import {
  type FakeWhatsApp,
  startFakeWhatsApp,
  startWebhookReceiver,
  type WebhookReceiver,
  waitFor,
} from '@dispatch/testing'
import type { RunningWorker } from '@dispatch/worker'
import { Webhook } from 'standardwebhooks'
import Value from 'typebox/value'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  activeKey,
  buildTestApp,
  createWorld,
  expectError,
  SEND_SCOPES,
  send,
  startTestWorker,
  type TestApp,
  type TestWorld,
} from '../helpers.ts'

/**
 * The event catalog (`GET /webhook-event-types`) and examples sent to an endpoint
 * (`POST /webhook-endpoints/:id/send-example`): delivered as real events are (outbox, signature,
 * attempts), to that endpoint only, marked as examples, never to another key's endpoint.
 */

const SCOPES = [...SEND_SCOPES, 'manage:webhooks']

let world: TestWorld
let app: TestApp
let fake: FakeWhatsApp
let worker: RunningWorker
let receiver: WebhookReceiver
let other: WebhookReceiver
let key: { id: string; key: string }
let attacker: { id: string; key: string }
let catalog: WebhookEventTypeView[]

beforeAll(async () => {
  world = await createWorld()
  app = await buildTestApp(world, { WEBHOOK_MANUAL_RETRIES_PER_HOUR: '6' })
  fake = await startFakeWhatsApp()
  worker = await startTestWorker(world, {
    WHATSAPP_API_URL: fake.url,
    WHATSAPP_ACCESS_TOKEN: 'EAAG-webhook-examples',
    WHATSAPP_PHONE_NUMBER_ID: '106540352242999',
    WEBHOOK_RETRY_SCHEDULE: '300ms,1h',
    LOG_LEVEL: 'error',
  })
  receiver = await startWebhookReceiver()
  other = await startWebhookReceiver()
  key = await activeKey(app, { scopes: SCOPES, tenantId: 'acme' })
  attacker = await activeKey(app, { scopes: SCOPES, tenantId: 'evil' })
})
afterAll(async () => {
  await worker?.close()
  await app?.close()
  await receiver?.close()
  await other?.close()
  await fake?.close()
  await world?.close()
})

const call = (method: 'GET' | 'POST' | 'PATCH', url: string, apiKey = key.key, payload?: object) =>
  app.inject({
    method,
    url: `/api/third-party${url}`,
    headers: { 'x-api-key': apiKey },
    ...(payload ? { payload } : {}),
  })

async function register(target: WebhookReceiver, events: string[], apiKey = key.key) {
  const res = await call('POST', '/webhook-endpoints', apiKey, { url: `${target.url}/hooks`, events })
  expect(res.statusCode, res.body).toBe(201)
  return res.json<WebhookEndpointWithSecret>()
}

const sendExample = (endpointId: string, eventType: string, apiKey = key.key) =>
  call('POST', `/webhook-endpoints/${endpointId}/send-example`, apiKey, { eventType })

async function attemptsOf(endpointId: string, eventId: string) {
  const res = await call('GET', `/webhook-endpoints/${endpointId}/attempts?take=100&eventId=${eventId}`)
  expect(res.statusCode, res.body).toBe(200)
  expect(Value.Check(WebhookAttemptList, res.json()), res.body).toBe(true)
  return res.json<WebhookAttemptList>().data
}

describe('the event catalog', () => {
  it('lists every event type, each with a description, its schema and an example body', async () => {
    const res = await call('GET', '/webhook-event-types')
    expect(res.statusCode, res.body).toBe(200)
    expect(Value.Check(WebhookEventTypeList, res.json()), res.body).toBe(true)
    catalog = res.json<WebhookEventTypeList>().data
    expect(catalog.map((entry) => entry.type)).toEqual([...WEBHOOK_EVENT_TYPES])
    const failed = catalog.find((entry) => entry.type === 'message.failed')
    expect(failed?.description).toContain('willRetry')
    expect(failed?.example).toMatchObject({
      type: 'message.failed',
      example: true,
      data: { status: 'failed', error: { code: expect.any(String), willRetry: false } },
    })
  })

  it('needs manage:webhooks, and says so', async () => {
    const reader = await activeKey(app, { scopes: ['read:messages'] })
    expectError(
      await call('GET', '/webhook-event-types', reader.key),
      403,
      'INSUFFICIENT_SCOPE',
      /manage:webhooks/,
    )
  })

  it("describes real events: a message's sent event matches its catalog schema", async () => {
    const real = await startWebhookReceiver()
    try {
      await register(real, ['message.sent'])
      const res = await send(app, 'send-text', key.key, {
        phone: '+5511987650001',
        text: 'Hi',
        clientReference: 'c-1',
      })
      expect(res.statusCode, res.body).toBe(202)
      const event = await waitFor(() => real.received.find((r) => r.json.type === 'message.sent'), {
        what: 'a real message.sent',
      })
      const schema = catalog.find((entry) => entry.type === 'message.sent')?.schema as never
      expect([...Value.Errors(schema, event.json.data)]).toEqual([])
      expect(event.json).not.toHaveProperty('example')
    } finally {
      await real.close()
    }
  })
})

describe('an example event sent to an endpoint', () => {
  it('is signed and delivered to that endpoint only, marked as an example, whatever it subscribes to', async () => {
    // The first try is refused, so its attempt shows the answer; the retry (300 ms on) takes it.
    receiver.answer = (_request, index) =>
      index === 0 ? { status: 503, body: 'warming up' } : { status: 204 }
    const endpoint = await register(receiver, ['message.received'])
    const sibling = await register(other, ['message.delivered'])
    const res = await sendExample(endpoint.id, 'message.delivered')
    expect(res.statusCode, res.body).toBe(202)
    const { eventId } = res.json<{ eventId: string; endpointId: string; eventType: string }>()
    expect(res.json()).toEqual({ eventId, endpointId: endpoint.id, eventType: 'message.delivered' })
    expect(eventId).toMatch(/^msg_[0-9a-f]{32}$/)

    await waitFor(() => receiver.deliveriesOf(eventId).length >= 2, { what: 'the example, tried twice' })
    const [first, second] = receiver.deliveriesOf(eventId)
    for (const delivery of [first, second]) {
      new Webhook(endpoint.secret).verify(delivery?.body ?? '', delivery?.headers as Record<string, string>)
    }
    expect(second?.body).toBe(first?.body)
    const body = JSON.parse(first?.body ?? '{}')
    expect(Object.keys(body)).toEqual(['type', 'timestamp', 'example', 'data'])
    expect(body).toMatchObject({ type: 'message.delivered', example: true, data: { status: 'delivered' } })
    expect(Date.now() - new Date(body.timestamp).getTime()).toBeLessThan(60_000)
    // The key's other endpoint, subscribed to the type, got nothing.
    expect(other.received).toEqual([])
    expect(sibling.id).not.toBe(endpoint.id)

    const attempts = await waitFor(
      async () => {
        const listed = await attemptsOf(endpoint.id, eventId)
        return listed.length >= 2 ? listed : undefined
      },
      { what: 'both attempts recorded' },
    )
    const [retried, refused] = attempts as [WebhookAttemptView, WebhookAttemptView]
    expect(refused).toMatchObject({
      eventType: 'message.delivered',
      success: false,
      statusCode: 503,
      responseExcerpt: 'warming up',
    })
    expect(retried).toMatchObject({ eventType: 'message.delivered', success: true, statusCode: 204 })
    // The request as sent, for the attempt's details.
    const event = await call('GET', `/webhook-endpoints/${endpoint.id}/events/${eventId}`)
    expect(event.statusCode, event.body).toBe(200)
    expect(event.json()).toMatchObject({ id: eventId, type: 'message.delivered', body: first?.body })
  })

  it('is not sent again by a replay of its window', async () => {
    receiver.answer = () => ({ status: 204 })
    const endpoint = await register(receiver, ['message.sent'])
    // Nothing else of the key's happens from here on.
    const since = new Date().toISOString()
    const res = await sendExample(endpoint.id, 'message.sent')
    expect(res.statusCode, res.body).toBe(202)
    const { eventId } = res.json<{ eventId: string }>()
    await waitFor(() => receiver.deliveriesOf(eventId).length >= 1, { what: 'the example' })
    const replay = await call('POST', `/webhook-endpoints/${endpoint.id}/replay`, key.key, { since })
    expect(replay.statusCode, replay.body).toBe(202)
    expect(replay.json()).toMatchObject({ events: 0 })
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect(receiver.deliveriesOf(eventId)).toHaveLength(1)
  })

  it('refuses an unknown type, and a disabled endpoint', async () => {
    const endpoint = await register(receiver, ['message.sent'])
    expectError(await sendExample(endpoint.id, 'message.exploded'), 400, 'VALIDATION_ERROR', /eventType/)
    expect(
      (await call('PATCH', `/webhook-endpoints/${endpoint.id}`, key.key, { enabled: false })).statusCode,
    ).toBe(200)
    expectError(await sendExample(endpoint.id, 'message.sent'), 409, 'INVALID_STATE_TRANSITION', /disabled/)
  })

  it("cannot be sent to another key's endpoint: 404, and nothing reaches it", async () => {
    const victim = await startWebhookReceiver()
    try {
      const endpoint = await register(victim, ['message.sent'])
      expectError(await sendExample(endpoint.id, 'message.sent', attacker.key), 404, 'NOT_FOUND')
      // Upper case is the same id, and as much not the attacker's.
      expectError(
        await sendExample(endpoint.id.toUpperCase(), 'message.sent', attacker.key),
        404,
        'NOT_FOUND',
      )
      // Its owner's example does arrive, so the receiver would have seen the attacker's.
      const own = await sendExample(endpoint.id, 'message.read')
      expect(own.statusCode, own.body).toBe(202)
      await waitFor(() => victim.received.length >= 1, { what: "the owner's example" })
      expect(victim.received.map((r) => r.json.type)).toEqual(['message.read'])
    } finally {
      await victim.close()
    }
  })

  it("the relay delivers it only to an enabled endpoint of the event's own key, whatever its outbox row names", async () => {
    const other = await startWebhookReceiver()
    try {
      const foreign = await register(other, ['message.sent'], attacker.key)
      const disabled = await register(other, ['message.sent'])
      expect(
        (await call('PATCH', `/webhook-endpoints/${disabled.id}`, key.key, { enabled: false })).statusCode,
      ).toBe(200)
      const own = await register(receiver, ['message.sent'])
      // Rows as a forged or stale outbox would hold them: the key's example, for another key's
      // endpoint, for its own disabled one, and (the control) for its own enabled one.
      const rowFor = async (endpointId: string) => {
        const id = `msg_${messageIdAt(Date.now()).replaceAll('-', '')}`
        const payload = {
          type: 'message.sent',
          timestamp: new Date().toISOString(),
          example: true,
          data: { n: id },
        }
        await world.sql`insert into webhook_events (id, api_key_id, type, payload)
          values (${id}, ${key.id}, 'message.sent', ${world.sql.json(payload)})`
        await world.sql`insert into outbox (topic, payload) values ('webhook', ${world.sql.json({ eventId: id, endpointId })})`
        return id
      }
      const refused = [await rowFor(foreign.id), await rowFor(disabled.id)]
      const control = await rowFor(own.id)
      await world.sql`select pg_notify('dispatch_outbox', '')`
      await waitFor(() => receiver.deliveriesOf(control).length >= 1, { what: 'the control example' })
      await new Promise((resolve) => setTimeout(resolve, 500))
      expect(other.received).toEqual([])
      for (const id of refused) expect(receiver.deliveriesOf(id)).toEqual([])
    } finally {
      await other.close()
    }
  })

  it('counts against the endpoint’s manual sends an hour', async () => {
    const endpoint = await register(receiver, ['message.sent'])
    for (let i = 0; i < 6; i++) expect((await sendExample(endpoint.id, 'message.sent')).statusCode).toBe(202)
    expectError(
      await sendExample(endpoint.id, 'message.sent'),
      429,
      'RATE_LIMITED',
      /6 manual retries this hour/,
    )
  })
})
