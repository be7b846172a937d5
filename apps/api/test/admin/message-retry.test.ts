import { randomUUID } from 'node:crypto'
import type {
  AdminMessageList,
  AdminMessageView,
  MessageView,
  RetryMessagesResult,
} from '@dispatch/contracts'
import { type FakeWhatsApp, graphError, startFakeWhatsApp, waitFor } from '@dispatch/testing'
import type { RunningWorker } from '@dispatch/worker'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  ADMIN,
  activeKey,
  addWebhookEndpoint,
  asAdmin,
  buildTestApp,
  createWorld,
  expectError,
  retryWhenReleased,
  SEND_SCOPES,
  send,
  startTestWorker,
  type TestApp,
  type TestWorld,
} from '../helpers.ts'

const NUMBER = '100000000000321'
const TOKEN = 'EAAG-retry-test-token-0001'

let world: TestWorld
let app: TestApp
let fake: FakeWhatsApp
let worker: RunningWorker
let key: { id: string; key: string }

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
    // The webhook events are read from Postgres here; nothing needs posting them.
    WORKER_QUEUES: 'messages,outbox,email',
  })
  key = await activeKey(app, { scopes: [...SEND_SCOPES, 'manage:webhooks'] })
  // With an endpoint, the key's status changes are recorded as webhook events.
  await addWebhookEndpoint(app, key.key, {
    url: 'http://127.0.0.1:9/hooks',
    events: ['message.sent', 'message.failed'],
  })
})
afterAll(async () => {
  await worker?.close()
  await app?.close()
  await fake?.close()
  await world?.close()
})

const statusOf = async (id: string) =>
  (
    await app.inject({
      method: 'GET',
      url: `/api/third-party/messages/${id}`,
      headers: { 'x-api-key': key.key },
    })
  ).json<MessageView>()
const until = (id: string, status: string) =>
  waitFor(
    async () => {
      const view = await statusOf(id)
      return view.status === status ? view : undefined
    },
    { what: `message ${id} ${status}`, timeoutMs: 15_000 },
  )
const retry = (id: string, token = ADMIN.ana) =>
  app.inject({ method: 'POST', url: `/api/admin/messages/${id}/retry`, headers: asAdmin(token) })
const retryMany = (payload: object, headers: Record<string, string> = asAdmin()) =>
  app.inject({ method: 'POST', url: '/api/admin/messages/retry', headers, payload })

/** A failed message as the worker leaves it (the platform refused it), inserted directly. */
async function insertFailed(errorCode: string, acceptedAt: string, status = 'failed') {
  const id = randomUUID()
  await world.sql`
    insert into messages (id, api_key_id, type, phone, payload, status, attempts, sender_id, sender_phone_number_id,
      last_error_code, last_error_message, accepted_at, failed_at, updated_at)
    values (${id}, ${key.id}, 'text', '+5511912345678', ${world.sql.json({ phone: '+5511912345678', text: 'again' })},
      ${status}, 1, 'default', ${NUMBER}, ${errorCode}, 'refused', ${acceptedAt}, ${acceptedAt}, ${acceptedAt})`
  return id
}

describe('POST /api/admin/messages/:id/retry', () => {
  it('sends a failed message again under the same messageId: sent, attempts counted on, audited, one event per outcome', async () => {
    fake.number(NUMBER, { answer: graphError(131026, 'Message undeliverable') })
    const accepted = await send(app, 'send-text', key.key, { phone: '+5511987654321', text: 'try me' })
    expect(accepted.statusCode, accepted.body).toBe(202)
    const id = accepted.json<{ messageId: string }>().messageId
    const failed = await until(id, 'failed')
    expect(failed).toMatchObject({ attempts: 1, lastError: { code: '131026' }, platformMessageId: null })
    fake.number(NUMBER, { answer: undefined })

    const res = await retryWhenReleased(app, id, asAdmin(ADMIN.ops))
    expect(res.statusCode, res.body).toBe(200)
    const view = res.json<AdminMessageView>()
    expect(view).toMatchObject({ messageId: id, status: 'queued', attempts: 1, retryCount: 1 })
    expect(Date.parse(view.expiresAt as string)).toBeGreaterThan(Date.now() + 3 * 3600_000)

    const sent = await until(id, 'sent')
    expect(sent).toMatchObject({
      messageId: id,
      attempts: 2,
      platformMessageId: expect.stringMatching(/^wamid\./),
    })
    expect(fake.sendsOf(id)).toBe(1)

    const [audit] = await world.sql`
      select actor, action, target_type, details from admin_audit_log where target_id = ${id}`
    expect(audit).toMatchObject({
      actor: 'ops',
      action: 'message.retry',
      target_type: 'message',
      details: {
        from: 'failed',
        to: 'queued',
        attempts: 1,
        lastErrorCode: '131026',
        bulk: false,
        retryCount: 1,
      },
    })
    // failed (#1), then sent (#2): the move back to queued is no event.
    const events = await world.sql`
      select type, sequence, payload->'data'->>'status' as status from webhook_events
      where message_id = ${id} order by sequence`
    expect(events.map((e) => [e.type, e.sequence, e.status])).toEqual([
      ['message.failed', 1, 'failed'],
      ['message.sent', 2, 'sent'],
    ])
    const listed = (
      await app.inject({ method: 'GET', url: `/api/admin/messages?q=${id}`, headers: asAdmin() })
    ).json<AdminMessageList>()
    expect(listed.data[0]).toMatchObject({ status: 'sent', retryCount: 1, retriedAt: expect.any(String) })
  })

  it('refuses a message that is not failed (409), and an unknown or malformed id (404)', async () => {
    const accepted = await send(app, 'send-text', key.key)
    const id = accepted.json<{ messageId: string }>().messageId
    await until(id, 'sent')
    expectError(await retry(id), 409, 'INVALID_STATE_TRANSITION', /is sent/)
    expectError(await retry(randomUUID()), 404, 'NOT_FOUND')
    expectError(await retry('not-an-id'), 404, 'NOT_FOUND')
    const [{ count }] = (await world.sql`
      select count(*)::int from admin_audit_log where target_id = ${id}`) as unknown as [{ count: number }]
    expect(count).toBe(0)
  })

  it('is for admins only', async () => {
    const id = await insertFailed('131026', '2026-01-01T00:00:00Z')
    const noToken = await app.inject({ method: 'POST', url: `/api/admin/messages/${id}/retry` })
    expectError(noToken, 401, 'ADMIN_AUTH_REQUIRED')
    const withKey = await app.inject({
      method: 'POST',
      url: `/api/admin/messages/${id}/retry`,
      headers: { 'x-api-key': key.key },
    })
    expectError(withKey, 401, 'ADMIN_AUTH_REQUIRED')
    expectError(await retryMany({}, { 'x-api-key': key.key }), 401, 'ADMIN_AUTH_REQUIRED')
  })
})

/** The message's channel fallback in `state`, as the worker's steps leave it (docs/fallback.md). */
async function withFallback(id: string, state: string) {
  await world.sql`
    insert into message_fallbacks (message_id, accepted_at, api_key_id, reason, reason_code, state, decided_at,
      settled_at, provider, provider_message_id, updated_at)
    select id, accepted_at, api_key_id, 'whatsapp_undeliverable', '131026', ${state}, now(), now(), 'twilio',
      ${state === 'sent' ? `SM${id.replaceAll('-', '')}` : null}, now()
    from messages where id = ${id}`
}

describe('retrying a message whose SMS fallback went', () => {
  it('is refused: the recipient has it by SMS; one whose SMS surely failed goes again', async () => {
    const sent = await insertFailed('131026', '2026-03-01T00:00:00Z')
    await withFallback(sent, 'sent')
    expectError(await retry(sent), 409, 'INVALID_STATE_TRANSITION', /SMS fallback went.*twice/)
    const unknown = await insertFailed('131026', '2026-03-02T00:00:00Z')
    await withFallback(unknown, 'unknown')
    expectError(await retry(unknown), 409, 'INVALID_STATE_TRANSITION', /SMS fallback may have gone/)
    const smsFailed = await insertFailed('131026', '2026-03-03T00:00:00Z')
    await withFallback(smsFailed, 'failed')

    // The filter's retry skips the first two, and takes the third.
    const bulk = await retryMany(
      { errorCode: '131026', startDate: '2026-03-01', endDate: '2026-03-04' },
      asAdmin(ADMIN.ops),
    )
    expect(bulk.json<RetryMessagesResult>()).toEqual({ retried: 1, messageIds: [smsFailed] })
    await until(smsFailed, 'sent')
    expect(fake.sendsOf(sent)).toBe(0)
    expect(fake.sendsOf(unknown)).toBe(0)
    expect((await statusOf(sent)).status).toBe('failed')
    expect((await statusOf(unknown)).status).toBe('failed')
    const [{ count }] = (await world.sql`
      select count(*)::int from admin_audit_log where target_id in (${sent}, ${unknown})`) as unknown as [
      { count: number },
    ]
    expect(count).toBe(0)
  })
})

describe('POST /api/admin/messages/retry', () => {
  it('retries the failed messages a filter matches, oldest first, at most `limit` at a time', async () => {
    const bulk = [1, 2, 3, 4, 5].map((day) => `2026-02-0${day}T00:00:00Z`)
    const failed: string[] = []
    for (const at of bulk) failed.push(await insertFailed('BULK-1', at))
    const other = await insertFailed('BULK-2', '2026-02-01T00:00:00Z')
    const notFailed = await insertFailed('BULK-1', '2026-01-15T00:00:00Z', 'expired')

    const first = await retryMany({ errorCode: 'BULK-1', limit: 3 })
    expect(first.statusCode, first.body).toBe(200)
    expect(first.json<RetryMessagesResult>()).toEqual({ retried: 3, messageIds: failed.slice(0, 3) })
    for (const id of failed.slice(0, 3)) await until(id, 'sent')
    expect(failed.slice(3).map((id) => fake.sendsOf(id))).toEqual([0, 0])

    const rest = (
      await retryMany({ errorCode: 'BULK-1', startDate: '2026-02-01' })
    ).json<RetryMessagesResult>()
    expect(rest).toEqual({ retried: 2, messageIds: failed.slice(3) })
    expect((await retryMany({ errorCode: 'BULK-1' })).json()).toEqual({ retried: 0, messageIds: [] })
    for (const id of failed.slice(3)) await until(id, 'sent')
    expect((await statusOf(other)).status).toBe('failed')
    expect((await statusOf(notFailed)).status).toBe('expired')

    const [{ count }] = (await world.sql`
      select count(*)::int from admin_audit_log
      where action = 'message.retry' and actor = 'ana' and (details->>'bulk')::boolean`) as unknown as [
      { count: number },
    ]
    expect(count).toBe(5)
  })

  it('takes the list’s filters, not a status, and at most 1,000', async () => {
    expectError(await retryMany({ limit: 1001 }), 400, 'VALIDATION_ERROR', /limit/)
    expectError(await retryMany({ status: ['sent'] }), 400, 'VALIDATION_ERROR', /status/)
    expectError(await retryMany({ startDate: 'yesterday' }), 400, 'VALIDATION_ERROR', /body\.startDate/)
  })
})

describe('retrying a message WhatsApp reported delivered after it failed', () => {
  it('is refused: the recipient has it (docs/fallback.md)', async () => {
    const late = await insertFailed('131026', '2026-04-01T00:00:00Z')
    // WhatsApp's delivered, recorded beside `failed` (its status stays).
    await world.sql`update messages set delivered_at = now() where id = ${late}`
    expectError(await retry(late), 409, 'INVALID_STATE_TRANSITION', /WhatsApp reported it delivered/)
    expect(fake.sendsOf(late)).toBe(0)
    expect((await statusOf(late)).status).toBe('failed')
  })
})
