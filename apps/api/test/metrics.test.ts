import {
  type FakeWhatsApp,
  graphError,
  parseExposition,
  sampleValue,
  startFakeWhatsApp,
  startSmtpServer,
  startWebhookReceiver,
  type TestSmtpServer,
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
  SEND_SCOPES,
  send,
  startTestWorker,
  type TestApp,
  type TestWorld,
  validSends,
} from './helpers.ts'

const TOKEN = 'metrics-token-0123456789abcdef'
const NUMBER = '100000000000555'
const PHONE = '+5511987654321'
const SEND_TEXT = '/api/third-party/messages/send-text'

let world: TestWorld
let app: TestApp
let fake: FakeWhatsApp
let smtp: TestSmtpServer
let receiver: WebhookReceiver
let worker: RunningWorker
let key: { id: string; key: string }
/** Every message id the tests were given: none may appear in a scrape. */
const messageIds: string[] = []

beforeAll(async () => {
  world = await createWorld()
  fake = await startFakeWhatsApp()
  smtp = await startSmtpServer()
  receiver = await startWebhookReceiver()
  app = await buildTestApp(world, { METRICS_TOKEN: TOKEN, MESSAGE_RATE_PER_SECOND: '10000' })
  worker = await startTestWorker(world, {
    WHATSAPP_API_URL: fake.url,
    WHATSAPP_ACCESS_TOKEN: 'EAAG-metrics-tests',
    WHATSAPP_PHONE_NUMBER_ID: NUMBER,
    SMTP_URL: smtp.url,
    MESSAGES_BACKOFF_MS: '20',
    ADMISSION_INTERVAL_MS: '20',
    // A job per message, so BullMQ's count of completed jobs is the messages' (a finished bundle
    // of several is removed as it ends).
    MESSAGES_BUNDLE_SIZE: '1',
    METRICS_PORT: '0',
    METRICS_TOKEN: TOKEN,
  })
  key = await activeKey(app, { scopes: [...SEND_SCOPES, 'manage:webhooks'] })
  await addWebhookEndpoint(app, key.key, { url: receiver.url, events: ['message.sent', 'message.failed'] })
})
afterAll(async () => {
  await worker?.close()
  await app?.close()
  await fake?.close()
  await smtp?.close()
  await receiver?.close()
  await world?.close()
})

const authorization = { authorization: `Bearer ${TOKEN}` }
const scrapeApi = async () => {
  const res = await app.inject({ method: 'GET', url: '/metrics', headers: authorization })
  expect(res.statusCode, res.body).toBe(200)
  return res.body
}
const scrapeWorker = async (headers: Record<string, string> = authorization) =>
  fetch(`${worker.metricsUrl}/metrics`, { headers })
const workerText = async () => {
  const res = await scrapeWorker()
  expect(res.status).toBe(200)
  return res.text()
}
const messageCounts = async () => {
  const rows = await world.sql<{ status: string; code: string | null; n: number }[]>`
    select status, last_error_code as code, count(*)::int as n from messages group by 1, 2`
  const count = (status: string, code?: string) =>
    rows
      .filter((r) => r.status === status && (code === undefined || r.code === code))
      .reduce((a, r) => a + r.n, 0)
  return { count, total: rows.reduce((a, r) => a + r.n, 0) }
}

describe('metrics after real traffic', () => {
  const texts = 4
  beforeAll(async () => {
    for (let i = 0; i < texts; i++) {
      const res = await send(app, 'send-text', key.key)
      expect(res.statusCode, res.body).toBe(202)
      messageIds.push(res.json().messageId)
    }
    const image = await send(app, 'send-image', key.key)
    expect(image.statusCode, image.body).toBe(202)
    messageIds.push(image.json().messageId)
    const batch = await app.inject({
      method: 'POST',
      url: '/api/third-party/messages/batch',
      headers: { 'x-api-key': key.key },
      payload: {
        messages: [
          { type: 'text', ...validSends['send-text'] },
          { type: 'template', ...validSends['send-template'] },
          { type: 'text', phone: 'not a phone', text: 'refused' },
        ],
      },
    })
    expect(batch.statusCode, batch.body).toBe(202)
    for (const result of batch.json().results) if (result.messageId) messageIds.push(result.messageId)
    await waitFor(async () => (await messageCounts()).count('sent') === messageIds.length || undefined, {
      what: 'every message sent',
      timeoutMs: 15_000,
    })
    // Then one the platform refuses for good.
    fake.script(graphError(131026, 'Message undeliverable'))
    const refused = await send(app, 'send-text', key.key)
    expect(refused.statusCode, refused.body).toBe(202)
    messageIds.push(refused.json().messageId)
    await waitFor(async () => (await messageCounts()).count('failed', '131026') === 1 || undefined, {
      what: 'the refused message failed',
      timeoutMs: 15_000,
    })
    // The key's approval e-mail, through the outbox and the e-mail queue.
    await waitFor(
      async () =>
        (await world.sql`select 1 from email_deliveries where status = 'sent'`).length > 0 || undefined,
      {
        what: 'the approval e-mail sent',
        timeoutMs: 15_000,
      },
    )
  })

  it('counts HTTP requests by route pattern, method and status on the API', async () => {
    const metrics = parseExposition(await scrapeApi())
    const sends = { route: SEND_TEXT, method: 'POST', status_code: '202' }
    expect(sampleValue(metrics, 'dispatch_http_request_duration_seconds_count', sends)).toBe(texts + 1)
    expect(
      sampleValue(metrics, 'dispatch_http_request_duration_seconds_bucket', { ...sends, le: '+Inf' }),
    ).toBe(texts + 1)
    expect(
      sampleValue(metrics, 'dispatch_http_request_duration_seconds_count', {
        route: '/api/third-party/messages/batch',
        method: 'POST',
        status_code: '202',
      }),
    ).toBe(1)
  })

  it('counts the messages accepted by type, as many as Postgres holds', async () => {
    const metrics = parseExposition(await scrapeApi())
    const accepted = (type: string) => sampleValue(metrics, 'dispatch_messages_accepted_total', { type })
    expect(accepted('text')).toBe(texts + 2)
    expect(accepted('image')).toBe(1)
    expect(accepted('template')).toBe(1)
    const { total } = await messageCounts()
    expect(accepted('text') + accepted('image') + accepted('template')).toBe(total)
  })

  it('counts sent and failed messages in the worker as Postgres records them, failures by code', async () => {
    const metrics = parseExposition(await workerText())
    const { count } = await messageCounts()
    const sent = sampleValue(metrics, 'dispatch_messages_sent_total', { sender_id: 'default' })
    expect(sent).toBe(count('sent'))
    expect(sent).toBe(messageIds.length - 1)
    expect(
      sampleValue(metrics, 'dispatch_messages_failed_total', { sender_id: 'default', code: '131026' }),
    ).toBe(count('failed', '131026'))
    expect(sampleValue(metrics, 'dispatch_message_accept_to_sent_seconds_count', {})).toBe(sent)
    expect(sampleValue(metrics, 'dispatch_message_accept_to_sent_seconds_bucket', { le: '+Inf' })).toBe(sent)
  })

  it("exports BullMQ's job counts per state for the sender's queue, the e-mail and webhook queues", async () => {
    const metrics = parseExposition(await workerText())
    for (const queue of ['messages', 'email', 'webhooks']) {
      for (const state of ['waiting', 'prioritized', 'active', 'delayed', 'failed', 'completed']) {
        expect(
          sampleValue(metrics, 'bullmq_job_count', { queue, state }),
          `${queue} ${state}`,
        ).toBeGreaterThanOrEqual(0)
      }
    }
    // A completed message job is removed as it completes (MESSAGE_JOB_OPTIONS): none is counted.
    expect(sampleValue(metrics, 'bullmq_job_count', { queue: 'messages', state: 'completed' })).toBe(0)
    expect(sampleValue(metrics, 'bullmq_job_count', { queue: 'messages', state: 'failed' })).toBe(1)
    expect(metrics.filter((s) => s.name === 'bullmq_job_completed_total')).toEqual([])
    // BullMQ counts a paused queue's jobs as waiting: whether it is paused is a gauge of its own.
    for (const queue of ['messages', 'email', 'webhooks']) {
      expect(sampleValue(metrics, 'dispatch_queue_paused', { queue })).toBe(0)
    }
  })

  it('exports the gauges read at scrape time: waiting for admission, sender state, outbox lag', async () => {
    const metrics = parseExposition(await workerText())
    expect(sampleValue(metrics, 'dispatch_sender_waiting_messages', { sender_id: 'default' })).toBe(0)
    expect(sampleValue(metrics, 'dispatch_sender_scheduled_messages', { sender_id: 'default' })).toBe(0)
    expect(sampleValue(metrics, 'dispatch_sender_state', { sender_id: 'default', state: 'active' })).toBe(1)
    expect(
      sampleValue(metrics, 'dispatch_sender_state', { sender_id: 'default', state: 'needs_attention' }),
    ).toBe(0)
    expect(sampleValue(metrics, 'dispatch_outbox_lag_seconds', {})).toBeGreaterThanOrEqual(0)
    for (const collector of ['queues', 'admission', 'outbox']) {
      expect(sampleValue(metrics, 'dispatch_metrics_collector_up', { collector })).toBe(1)
    }
  })

  it('counts e-mail and webhook outcomes, and has the default process metrics', async () => {
    await waitFor(() => receiver.received.length >= messageIds.length || undefined, {
      what: 'a webhook per message',
      timeoutMs: 15_000,
    })
    // A delivery is counted once its answer is read: the receiver may hold the last one a moment before.
    const successes = async () =>
      sampleValue(parseExposition(await workerText()), 'dispatch_webhook_deliveries_total', {
        outcome: 'success',
      })
    await waitFor(async () => ((await successes()) >= receiver.received.length ? true : undefined), {
      what: 'every delivery counted',
      timeoutMs: 5_000,
    }).catch(() => undefined)
    const metrics = parseExposition(await workerText())
    expect(sampleValue(metrics, 'dispatch_emails_total', { outcome: 'sent' })).toBeGreaterThanOrEqual(1)
    expect(sampleValue(metrics, 'dispatch_webhook_deliveries_total', { outcome: 'success' })).toBe(
      receiver.received.length,
    )
    expect(metrics.some((s) => s.name === 'process_cpu_user_seconds_total')).toBe(true)
    expect(metrics.some((s) => s.name === 'nodejs_eventloop_lag_seconds')).toBe(true)
  })

  it('counts key-cache hits and misses on the API', async () => {
    const lookups = async () => {
      const metrics = parseExposition(await scrapeApi())
      return {
        hit: sampleValue(metrics, 'dispatch_api_key_cache_lookups_total', { result: 'hit' }),
        miss: sampleValue(metrics, 'dispatch_api_key_cache_lookups_total', { result: 'miss' }),
      }
    }
    const before = await lookups()
    expect(before.miss).toBeGreaterThanOrEqual(1)
    // One lookup per request with the key: the first (registering the endpoint) missed, the sends hit.
    expect(before.hit).toBeGreaterThanOrEqual(texts + 3)
    await app.inject({ method: 'GET', url: '/api/api-keys/me', headers: { 'x-api-key': key.key } })
    const other = await activeKey(app)
    await app.inject({ method: 'GET', url: '/api/api-keys/me', headers: { 'x-api-key': other.key } })
    const after = await lookups()
    expect(after.hit).toBe(before.hit + 1)
    expect(after.miss).toBe(before.miss + 1)
  })

  it('never shows a phone number, a message id, an API key or the token', async () => {
    await app.inject({
      method: 'GET',
      url: `/api/third-party/messages/${messageIds[0]}`,
      headers: { 'x-api-key': key.key },
    })
    await app.inject({ method: 'GET', url: '/no/such/route/5511987654321' })
    const text = `${await scrapeApi()}\n${await workerText()}`
    for (const secret of [
      PHONE,
      PHONE.slice(1),
      key.key,
      key.key.slice(0, 14),
      TOKEN,
      'EAAG-metrics-tests',
      ...messageIds,
    ]) {
      expect(text.includes(secret), secret).toBe(false)
    }
    // Routes by their pattern; a request no route matched by a fixed label, never its URL.
    const metrics = parseExposition(await scrapeApi())
    expect(
      sampleValue(metrics, 'dispatch_http_request_duration_seconds_count', {
        route: '/api/third-party/messages/:messageId',
        method: 'GET',
        status_code: '200',
      }),
    ).toBe(1)
    expect(
      sampleValue(metrics, 'dispatch_http_request_duration_seconds_count', {
        route: 'unmatched',
        method: 'GET',
        status_code: '404',
      }),
    ).toBe(1)
  })
})

describe('METRICS_TOKEN', () => {
  it('the API answers 401 ADMIN_AUTH_REQUIRED without the token or with a wrong one, 200 with it', async () => {
    const none = await app.inject({ method: 'GET', url: '/metrics' })
    expectError(none, 401, 'ADMIN_AUTH_REQUIRED', /metrics token/)
    expect(none.headers['www-authenticate']).toBe('Bearer')
    const wrong = await app.inject({
      method: 'GET',
      url: '/metrics',
      headers: { authorization: 'Bearer nope-0123456789abcdef' },
    })
    expectError(wrong, 401, 'ADMIN_AUTH_REQUIRED')
    const admin = await app.inject({
      method: 'GET',
      url: '/metrics',
      headers: { authorization: 'Bearer ana-token-0123456789abcdef' },
    })
    expectError(admin, 401, 'ADMIN_AUTH_REQUIRED')
    const right = await app.inject({ method: 'GET', url: '/metrics', headers: authorization })
    expect(right.statusCode).toBe(200)
    expect(right.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/)
  })

  it('the worker answers a plain 401 without the token or with a wrong one, 200 with it', async () => {
    const none = await scrapeWorker({})
    expect(none.status).toBe(401)
    expect(none.headers.get('www-authenticate')).toBe('Bearer')
    expect(await none.text()).toBe('Unauthorized\n')
    const wrong = await scrapeWorker({ authorization: `Bearer ${TOKEN}x` })
    expect(wrong.status).toBe(401)
    const right = await scrapeWorker()
    expect(right.status).toBe(200)
    expect(right.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/)
    expect((await fetch(`${worker.metricsUrl}/other`, { headers: authorization })).status).toBe(404)
  })

  it('keeps /metrics out of the OpenAPI document', async () => {
    const document = (await app.inject({ method: 'GET', url: '/docs/json' })).json()
    expect(Object.keys(document.paths)).not.toContain('/metrics')
  })
})

describe('METRICS_ENABLED=false', () => {
  it('installs nothing: no /metrics on the API, no listener on the worker', async () => {
    const off = await buildTestApp(world, { METRICS_ENABLED: 'false' })
    const offWorker = await startTestWorker(world, {
      WORKER_QUEUES: 'email',
      METRICS_ENABLED: 'false',
      METRICS_PORT: '0',
    })
    try {
      expect(off.metrics).toBeUndefined()
      expectError(await off.inject({ method: 'GET', url: '/metrics' }), 404, 'NOT_FOUND')
      expect(offWorker.metricsUrl).toBeUndefined()
    } finally {
      await offWorker.close()
      await off.close()
    }
  })
})
