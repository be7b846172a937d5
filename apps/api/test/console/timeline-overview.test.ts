import type { AdminMessageTimeline, AdminOverview, MessageTimeline } from '@dispatch/contracts'
import { type FakeWhatsApp, graphError, startFakeWhatsApp, waitFor } from '@dispatch/testing'
import type { RunningWorker } from '@dispatch/worker'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  ADMIN,
  activeKey,
  addWebhookEndpoint,
  buildTestApp,
  createWorld,
  expectError,
  retryWhenReleased,
  SEND_SCOPES,
  send,
  startTestWorker,
  type TestApp,
  type TestWorld,
  untilMessageStatus,
} from '../helpers.ts'

/**
 * What the console reads of a message and of the whole service, through documented routes: a
 * message's timeline (each attempt and its error, the retry, the webhook events and their
 * attempts) and the overview (the chart, the top errors with their meaning, failing endpoints).
 */

const NUMBER = '100000000000777'
const TOKEN = 'EAAG-console-timeline-token'
let world: TestWorld
let app: TestApp
let fake: FakeWhatsApp
let worker: RunningWorker
let key: { id: string; key: string }
let admin: { cookie: string; csrf: string }

beforeAll(async () => {
  world = await createWorld()
  fake = await startFakeWhatsApp()
  app = await buildTestApp(world, { MESSAGE_RATE_PER_SECOND: '10000' })
  worker = await startTestWorker(world, {
    WHATSAPP_API_URL: fake.url,
    WHATSAPP_ACCESS_TOKEN: TOKEN,
    WHATSAPP_PHONE_NUMBER_ID: NUMBER,
    MESSAGES_BACKOFF_MS: '20',
    ADMISSION_INTERVAL_MS: '20',
    WORKER_QUEUES: 'messages,outbox,email,webhooks',
  })
  key = await activeKey(app, { scopes: [...SEND_SCOPES, 'manage:webhooks'] })
  // An endpoint nobody answers: its attempts fail, and it shows among the failing ones.
  await addWebhookEndpoint(app, key.key, {
    url: 'http://127.0.0.1:9/hooks',
    events: ['message.sent', 'message.failed'],
  })
  const signIn = await app.inject({
    method: 'POST',
    url: '/api/admin/session',
    payload: { name: 'ops', token: ADMIN.ops },
  })
  expect(signIn.statusCode, signIn.body).toBe(201)
  const cookie = String(([] as string[]).concat(signIn.headers['set-cookie'] ?? [])[0]).split(
    ';',
  )[0] as string
  admin = { cookie, csrf: signIn.json<{ csrfToken: string }>().csrfToken }
})
afterAll(async () => {
  await worker?.close()
  await app?.close()
  await fake?.close()
  await world?.close()
})

const adminTimeline = async (id: string) => {
  const res = await app.inject({
    method: 'GET',
    url: `/api/admin/messages/${id}/timeline`,
    headers: { cookie: admin.cookie },
  })
  expect(res.statusCode, res.body).toBe(200)
  return res.json<AdminMessageTimeline>()
}

describe('a message’s timeline', () => {
  it('shows each attempt with its error, the failure, the retry by whom, the sending and each webhook event with its attempts', async () => {
    // A transient error, then a permanent one: two attempts, then failed.
    fake.script(graphError(131000, 'Something went wrong', 500), graphError(131026, 'Message undeliverable'))
    const accepted = await send(app, 'send-text', key.key, { phone: '+5511900001111', text: 'timeline' })
    expect(accepted.statusCode, accepted.body).toBe(202)
    const id = accepted.json<{ messageId: string }>().messageId
    await untilMessageStatus(app, key.key, id, 'failed')

    const failed = await waitFor(
      async () => {
        const timeline = await adminTimeline(id)
        return timeline.entries.some((e) => e.kind === 'webhook_attempt') ? timeline : undefined
      },
      { what: 'the failed event’s first webhook attempt', timeoutMs: 15_000 },
    )
    expect(failed.message).toMatchObject({ messageId: id, apiKeyId: key.id, status: 'failed' })
    // The send as it was asked for, beside its life.
    expect(failed.request).toEqual({ phone: '+5511900001111', text: 'timeline' })
    // The message's own steps in order (its webhook events, written with the record, may share its instant).
    const steps = (entries: { kind: string }[]) =>
      entries.map((e) => e.kind).filter((kind) => !kind.startsWith('webhook_'))
    expect(steps(failed.entries)).toEqual(['accepted', 'attempt_failed', 'attempt_failed', 'failed'])
    const attempts = failed.entries.filter((e) => e.kind === 'attempt_failed')
    expect(attempts.map((e) => [e.attempt, e.errorCode])).toEqual([
      [1, '131000'],
      [2, '131026'],
    ])
    // Each error says what it means, not only its number.
    expect(attempts[1]?.summary).toMatch(/131026: Message undeliverable \(Undeliverable: not a WhatsApp user/)
    const event = failed.entries.find((e) => e.kind === 'webhook_event')
    expect(event?.summary).toBe('Event message.failed')
    const delivery = failed.entries.find((e) => e.kind === 'webhook_attempt')
    expect(delivery).toMatchObject({ eventId: event?.eventId, statusCode: null })
    expect(delivery?.summary).toMatch(/^Webhook to http:\/\/127\.0\.0\.1:9\/hooks, attempt 1, failed: /)
    // Oldest first.
    const times = failed.entries.map((e) => Date.parse(e.at))
    expect([...times].sort((a, b) => a - b)).toEqual(times)

    // The admin retries it from the console (its session and CSRF token): it goes out.
    const retried = await retryWhenReleased(app, id, { cookie: admin.cookie, 'x-csrf-token': admin.csrf })
    expect(retried.statusCode, retried.body).toBe(200)
    await untilMessageStatus(app, key.key, id, 'sent')
    const sent = await adminTimeline(id)
    expect(sent.entries.find((e) => e.kind === 'retried')?.summary).toBe('Retried by admin ops')
    expect(sent.entries.find((e) => e.kind === 'sent')?.summary).toMatch(/^Sent \(wamid\./)

    // The key sees the same life, the admin unnamed; another key sees nothing.
    const own = await app.inject({
      method: 'GET',
      url: `/api/third-party/messages/${id}/timeline`,
      headers: { 'x-api-key': key.key },
    })
    expect(own.statusCode, own.body).toBe(200)
    const mine = own.json<MessageTimeline>()
    expect(steps(mine.entries)).toEqual(steps(sent.entries))
    expect(steps(mine.entries).slice(-2)).toEqual(['retried', 'sent'])
    expect(mine.entries.find((e) => e.kind === 'retried')?.summary).toBe('Retried by an admin')
    expect(own.body).not.toContain('Retried by admin ops')
    const stranger = await activeKey(app, { scopes: SEND_SCOPES })
    expectError(
      await app.inject({
        method: 'GET',
        url: `/api/third-party/messages/${id}/timeline`,
        headers: { 'x-api-key': stranger.key },
      }),
      404,
      'NOT_FOUND',
    )
  })

  it('answers a message still in Redis with what is known, and an unknown id with 404', async () => {
    const scheduled = await send(app, 'send-text', key.key, {
      phone: '+5511900002222',
      text: 'later',
      sendAt: new Date(Date.now() + 3_600_000).toISOString(),
    })
    expect(scheduled.statusCode, scheduled.body).toBe(202)
    const id = scheduled.json<{ messageId: string }>().messageId
    const res = await app.inject({
      method: 'GET',
      url: `/api/third-party/messages/${id}/timeline`,
      headers: { 'x-api-key': key.key },
    })
    expect(res.statusCode, res.body).toBe(200)
    expect(res.json<MessageTimeline>().entries.map((e) => e.kind)).toEqual(['accepted', 'scheduled'])
    expect(res.json<MessageTimeline>().request).toMatchObject({ phone: '+5511900002222', text: 'later' })
    for (const bad of ['00000000-0000-4000-8000-000000000000', 'not-a-uuid']) {
      expectError(
        await app.inject({
          method: 'GET',
          url: `/api/admin/messages/${bad}/timeline`,
          headers: { cookie: admin.cookie },
        }),
        404,
        'NOT_FOUND',
      )
    }
  })
})

describe('the overview', () => {
  it('counts messages per minute by status, names the top errors with their meaning and the failing endpoints', async () => {
    const overview = await waitFor(
      async () => {
        const res = await app.inject({
          method: 'GET',
          url: '/api/admin/overview',
          headers: { cookie: admin.cookie },
        })
        expect(res.statusCode, res.body).toBe(200)
        const body = res.json<AdminOverview>()
        return body.topErrors.length > 0 && body.failingWebhookEndpoints.length > 0 ? body : undefined
      },
      { what: 'an overview with errors and a failing endpoint', timeoutMs: 20_000, intervalMs: 1000 },
    )
    const total = (status: string) =>
      overview.messagesPerMinute.reduce((sum, minute) => sum + (minute.counts[status] ?? 0), 0)
    // Three accepted here (one scheduled) so far; one failed and then sent.
    expect(total('queued')).toBeGreaterThanOrEqual(2)
    expect(total('sent')).toBeGreaterThanOrEqual(1)
    expect(overview.topErrors).toEqual(
      expect.arrayContaining([
        { code: '131026', count: 1, meaning: expect.stringMatching(/^Undeliverable/) },
        { code: '131000', count: 1, meaning: expect.stringMatching(/platform/) },
      ]),
    )
    expect(overview.failingWebhookEndpoints[0]).toMatchObject({
      url: 'http://127.0.0.1:9/hooks',
      apiKeyId: key.id,
      clientName: expect.any(String),
      failures: expect.any(Number),
      lastStatusCode: null,
    })
    expect(overview.backlog.map((queue) => queue.senderId)).toContain('default')
    expect(overview.sendersNeedingAttention).toEqual([])
    // The chart's span: by minute over the hour, by quarter hour over a day, by hour over a week;
    // each bucket named by its start, and the same messages counted whatever the span.
    const ranged = async (range: string) => {
      const res = await app.inject({
        method: 'GET',
        url: `/api/admin/overview?range=${range}`,
        headers: { cookie: admin.cookie },
      })
      expect(res.statusCode, res.body).toBe(200)
      return res.json<AdminOverview>()
    }
    const sums = (body: AdminOverview) =>
      body.messagesPerMinute.reduce((sum, bucket) => sum + (bucket.counts.queued ?? 0), 0)
    for (const [range, bucketSeconds] of [
      ['1h', 60],
      ['24h', 900],
      ['7d', 3600],
    ] as const) {
      const body = await ranged(range)
      expect(body).toMatchObject({ range, bucketSeconds })
      for (const bucket of body.messagesPerMinute)
        expect(Date.parse(bucket.minute) % (bucketSeconds * 1000), bucket.minute).toBe(0)
      expect(sums(body)).toBe(total('queued'))
    }
    expect(overview).toMatchObject({ range: '24h', bucketSeconds: 900 })
    expectError(
      await app.inject({
        method: 'GET',
        url: '/api/admin/overview?range=2d',
        headers: { cookie: admin.cookie },
      }),
      400,
      'VALIDATION_ERROR',
    )
    // A key's credentials open no overview.
    expectError(
      await app.inject({ method: 'GET', url: '/api/admin/overview', headers: { 'x-api-key': key.key } }),
      401,
      'ADMIN_AUTH_REQUIRED',
    )
  })
})
