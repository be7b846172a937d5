import type { MessageView } from '@dispatch/contracts'
import { messageClaimKey } from '@dispatch/runtime/message-handoff'
import { type FakeWhatsApp, graphError, startFakeWhatsApp, waitFor } from '@dispatch/testing'
import type { RunningWorker } from '@dispatch/worker'
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

const PHONE = '+5511987654321'

let world: TestWorld
let app: TestApp
let fake: FakeWhatsApp
let worker: RunningWorker | undefined
let key: string
const workerEnv = () => ({
  WORKER_QUEUES: 'messages',
  WHATSAPP_API_URL: fake.url,
  WHATSAPP_ACCESS_TOKEN: 'EAAG-schedule-tests',
  WHATSAPP_PHONE_NUMBER_ID: '106540352242922',
  MESSAGES_BACKOFF_MS: '50',
  // A claim is deleted as soon as its message's outcome is recorded: every cancel below that comes
  // after that meets the record alone (message-claims.ts), the race included.
  MESSAGE_CLAIM_KEEP_MS: '0',
})
beforeAll(async () => {
  world = await createWorld()
  // Tests schedule a second or two ahead and let messages expire within seconds.
  app = await buildTestApp(world, {
    SCHEDULE_MIN_AHEAD_SECONDS: '1',
    MESSAGE_VALIDITY_MIN_SECONDS: '1',
    MESSAGE_RATE_PER_SECOND: '100000',
  })
  fake = await startFakeWhatsApp()
  key = (await activeKey(app, { scopes: SEND_SCOPES })).key
})
afterAll(async () => {
  await worker?.close()
  await app?.close()
  await fake?.close()
  await world?.close()
})

const ensureWorker = async () => {
  worker ??= await startTestWorker(world, workerEnv())
}
const stopWorker = async () => {
  await worker?.close()
  worker = undefined
}

const view = async (id: string, apiKey = key) =>
  (
    await app.inject({
      method: 'GET',
      url: `/api/third-party/messages/${id}`,
      headers: { 'x-api-key': apiKey },
    })
  ).json<MessageView>()
const cancel = (id: string, apiKey = key) =>
  app.inject({
    method: 'POST',
    url: `/api/third-party/messages/${id}/cancel`,
    headers: { 'x-api-key': apiKey },
  })
const untilStatus = (id: string, status: MessageView['status'], timeoutMs = 10_000) =>
  waitFor(async () => ((await view(id)).status === status ? view(id) : undefined), {
    timeoutMs,
    what: `${id} to be ${status}`,
  })
const sendText = async (extra: Record<string, unknown> = {}) => {
  const res = await send(app, 'send-text', key, { phone: PHONE, text: 'See you at 8', ...extra })
  expect(res.statusCode, res.body).toBe(202)
  return res.json<{ messageId: string; status: string }>()
}

describe('scheduled messages', () => {
  it('is scheduled, listed at once, and sent after its time, not before', async () => {
    await ensureWorker()
    const sendAt = new Date(Date.now() + 2000)
    const accepted = await sendText({ sendAt: sendAt.toISOString(), clientReference: 'later' })
    expect(accepted.status).toBe('scheduled')
    const scheduled = await view(accepted.messageId)
    expect(scheduled).toMatchObject({
      status: 'scheduled',
      sendAt: sendAt.toISOString(),
      clientReference: 'later',
    })
    expect(Date.parse(scheduled.expiresAt ?? '')).toBe(sendAt.getTime() + 4 * 3600 * 1000)
    await new Promise((r) => setTimeout(r, 1000))
    // Still before its time (a loaded machine can sleep past it: then the check below says it all).
    const unsent = fake.sendsOf(accepted.messageId)
    if (Date.now() < sendAt.getTime() - 100) expect(unsent).toBe(0)
    const sent = await untilStatus(accepted.messageId, 'sent')
    const request = fake.requests.find((r) => r.messageId === accepted.messageId)
    expect(request?.receivedAt).toBeGreaterThanOrEqual(sendAt.getTime())
    expect(sent).toMatchObject({ attempts: 1, sendAt: sendAt.toISOString() })
  })

  it('refuses a sendAt too soon, too far or malformed, naming it', async () => {
    for (const sendAt of [
      new Date(Date.now() - 60_000).toISOString(),
      new Date(Date.now() + 36 * 24 * 3600 * 1000).toISOString(),
      'next tuesday',
    ]) {
      const res = await send(app, 'send-text', key, { phone: PHONE, text: 'x', sendAt })
      expectError(res, 400, 'VALIDATION_ERROR', /sendAt/)
    }
    const validity = await send(app, 'send-text', key, { phone: PHONE, text: 'x', validitySeconds: 86_401 })
    expectError(validity, 400, 'VALIDATION_ERROR', /validitySeconds/)
  })

  it('canceled before it is due, it is never sent', async () => {
    await ensureWorker()
    const accepted = await sendText({ sendAt: new Date(Date.now() + 1500).toISOString() })
    const res = await cancel(accepted.messageId)
    expect(res.statusCode, res.body).toBe(200)
    expect(res.json()).toMatchObject({ messageId: accepted.messageId, status: 'canceled' })
    await new Promise((r) => setTimeout(r, 2500))
    expect(fake.sendsOf(accepted.messageId)).toBe(0)
    expect(fake.requests.some((r) => r.messageId === accepted.messageId)).toBe(false)
    expect((await view(accepted.messageId)).status).toBe('canceled')
    // Canceling again answers the same; it never turns into a 409.
    const again = await cancel(accepted.messageId)
    expect(again.statusCode, again.body).toBe(200)
  })
})

describe('cancel', () => {
  it('a queued message no worker has taken is canceled; the worker then records it without sending', async () => {
    await stopWorker()
    const accepted = await sendText()
    const res = await cancel(accepted.messageId)
    expect(res.statusCode, res.body).toBe(200)
    expect((await view(accepted.messageId)).status).toBe('canceled')
    await ensureWorker()
    const recorded = await untilStatus(accepted.messageId, 'canceled')
    expect(recorded.attempts).toBe(0)
    await new Promise((r) => setTimeout(r, 300))
    expect(fake.requests.some((r) => r.messageId === accepted.messageId)).toBe(false)
  })

  it('a sent message is 409; another key cannot see it; a key without the send scope of its type is 403', async () => {
    await ensureWorker()
    const accepted = await sendText()
    await untilStatus(accepted.messageId, 'sent')
    expectError(await cancel(accepted.messageId), 409, 'INVALID_STATE_TRANSITION', /sent/)
    const other = await activeKey(app, { scopes: SEND_SCOPES })
    expectError(await cancel(accepted.messageId, other.key), 404, 'NOT_FOUND')
    expectError(await cancel('not-a-uuid'), 404, 'NOT_FOUND')
    const templatesOnly = await activeKey(app, { scopes: ['send:template'] })
    const theirs = await send(app, 'send-template', templatesOnly.key)
    const textOnly = await activeKey(app, { scopes: ['send:free-text'] })
    expectError(await cancel(theirs.json().messageId, textOnly.key), 404, 'NOT_FOUND')
    const readOnly = await activeKey(app, { scopes: ['read:messages'] })
    expectError(await cancel(accepted.messageId, readOnly.key), 403, 'INSUFFICIENT_SCOPE')
  })

  it('a sent message whose claim is gone from Redis is still 409: the record answers, and no claim is left behind', async () => {
    await ensureWorker()
    const accepted = await sendText()
    await untilStatus(accepted.messageId, 'sent')
    const claim = messageClaimKey(world.queuePrefix, accepted.messageId)
    await waitFor(async () => (await app.deps.redis.exists(claim)) === 0 || undefined, {
      what: 'the claim gone',
    })
    expectError(await cancel(accepted.messageId), 409, 'INVALID_STATE_TRANSITION', /sent/)
    expect(await app.deps.redis.exists(claim)).toBe(0)
    expect((await view(accepted.messageId)).status).toBe('sent')
    expect(fake.sendsOf(accepted.messageId)).toBe(1)
  })

  it('cancel racing delivery, 200 rounds or more: every message ends either canceled and never sent, or sent once and the cancel refused', async () => {
    await ensureWorker()
    const outcomes: Array<{ id: string; cancel: number }> = []
    // The cancels are spread over the moment the worker takes the message. How long that takes
    // depends on the machine's load, so the spread follows it: wider while every cancel wins,
    // narrower while every one loses, until both outcomes were seen (at most 40 batches).
    let spreadMs = 2
    for (let batch = 0; batch < 40; batch++) {
      if (batch >= 10 && new Set(outcomes.map((o) => o.cancel)).size === 2) break
      const codes = await Promise.all(
        Array.from({ length: 20 }, async (_, i) => {
          const { messageId } = await sendText()
          await new Promise((r) => setTimeout(r, (i % 10) * spreadMs))
          const res = await cancel(messageId)
          expect([200, 409], res.body).toContain(res.statusCode)
          outcomes.push({ id: messageId, cancel: res.statusCode })
          return res.statusCode
        }),
      )
      if (codes.every((code) => code === 200)) spreadMs = Math.min(spreadMs * 2, 100)
      else if (codes.every((code) => code === 409)) spreadMs = Math.max(spreadMs / 2, 0.5)
    }
    for (const { id, cancel: code } of outcomes) {
      const final = await waitFor(
        async () => {
          const v = await view(id)
          return v.status === 'canceled' || v.status === 'sent' ? v : undefined
        },
        { what: `${id} to settle` },
      )
      if (code === 200) {
        expect(final.status).toBe('canceled')
        expect(fake.sendsOf(id)).toBe(0)
      } else {
        expect(final.status).toBe('sent')
        expect(fake.sendsOf(id)).toBe(1)
      }
    }
    // Both outcomes happened: the race was a real one.
    expect(new Set(outcomes.map((o) => o.cancel)).size).toBe(2)
  }, 120_000)
})

describe('validity', () => {
  it('a message the platform keeps rate-limiting past its validity expires, never sent', async () => {
    await ensureWorker()
    fake.script(...Array.from({ length: 30 }, () => graphError(130429, 'Rate limit hit', 400)))
    const accepted = await sendText({ validitySeconds: 2 })
    const expired = await untilStatus(accepted.messageId, 'expired', 15_000)
    expect(expired.lastError).toMatchObject({ code: 'MESSAGE_EXPIRED' })
    expect(fake.sendsOf(accepted.messageId)).toBe(0)
    expect(fake.requests.filter((r) => r.messageId === accepted.messageId).length).toBeGreaterThan(0)
    fake.clearScript()
  }, 30_000)
})
