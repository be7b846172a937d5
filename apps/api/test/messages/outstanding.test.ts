import { randomUUID } from 'node:crypto'
import type { RunningWorker } from '@dispatch/worker'
import type { LightMyRequestResponse } from 'fastify'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import {
  activeKey,
  asAdmin,
  buildTestApp,
  createWorld,
  expectError,
  SEND_SCOPES,
  send,
  startTestWorker,
  storedMessages,
  type TestApp,
  type TestWorld,
  untilMessageStatus,
  validSends,
} from '../helpers.ts'

/** A key's queued + scheduled messages are bounded (MESSAGE_OUTSTANDING_MAX): Redis runs `noeviction`. */
const BOUND = 3
let world: TestWorld
let app: TestApp
beforeAll(async () => {
  world = await createWorld()
  app = await buildTestApp(world, {
    MESSAGE_OUTSTANDING_MAX: String(BOUND),
    MESSAGE_RATE_PER_SECOND: '100000',
    SCHEDULE_MIN_AHEAD_SECONDS: '1',
  })
})
afterAll(async () => {
  await app?.close()
  await world?.close()
})

const sendKey = async (limits: Record<string, unknown> = {}) => {
  const key = await activeKey(app, { scopes: SEND_SCOPES })
  if (Object.keys(limits).length > 0) {
    const res = await app.inject({
      method: 'PATCH',
      url: `/api/admin/api-keys/${key.id}`,
      headers: asAdmin(),
      payload: limits,
    })
    expect(res.statusCode, res.body).toBe(200)
  }
  return key
}

const batch = (key: string, count: number) =>
  app.inject({
    method: 'POST',
    url: '/api/third-party/messages/batch',
    headers: { 'x-api-key': key },
    payload: {
      messages: Array.from({ length: count }, () => ({ type: 'text', ...validSends['send-text'] })),
    },
  })

const usageToday = async (key: string) => {
  const res = await app.inject({ method: 'GET', url: '/api/api-keys/me', headers: { 'x-api-key': key } })
  return res.json().usage.today as number
}

function expectOutstanding(res: LightMyRequestResponse) {
  expectError(res, 429, 'OUTSTANDING_LIMIT_REACHED', new RegExp(`has ${BOUND} messages queued or scheduled`))
  expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1)
}

const later = (seconds: number) => new Date(Date.now() + seconds * 1000).toISOString()

describe('outstanding messages per key', () => {
  it('counts queued and scheduled messages; the next send is 429 with Retry-After and spends no quota', async () => {
    const key = await sendKey({ dailyQuota: 100 })
    const codes = [
      (await send(app, 'send-text', key.key)).statusCode,
      (await send(app, 'send-image', key.key)).statusCode,
      (await send(app, 'send-text', key.key, { ...validSends['send-text'], sendAt: later(3600) })).statusCode,
    ]
    expect(codes).toEqual([202, 202, 202])
    expectOutstanding(await send(app, 'send-text', key.key))
    expectOutstanding(
      await send(app, 'send-text', key.key, { ...validSends['send-text'], sendAt: later(60) }),
    )
    expect(await usageToday(key.key)).toBe(3)

    // Another key on the same sender is not held by this one's backlog.
    const other = await sendKey()
    expect((await send(app, 'send-text', other.key)).statusCode).toBe(202)
  })

  it('holds sends of one turn to the bound together: of five at once, three pass', async () => {
    const key = await sendKey()
    const answers = await Promise.all(Array.from({ length: 5 }, () => send(app, 'send-text', key.key)))
    const codes = answers.map((res) => res.statusCode).sort()
    expect(codes).toEqual([202, 202, 202, 429, 429])
    for (const res of answers.filter((r) => r.statusCode === 429)) expectOutstanding(res)
  })

  it('refuses the items of a batch past the bound, each with its own error; a batch with none left is 429', async () => {
    const key = await sendKey({ dailyQuota: 100 })
    expect((await send(app, 'send-text', key.key)).statusCode).toBe(202)
    const res = await batch(key.key, 4)
    expect(res.statusCode, res.body).toBe(202)
    const body = res.json()
    expect(body).toMatchObject({ accepted: 2, rejected: 2 })
    expect(body.results.slice(0, 2).every((r: { messageId?: string }) => r.messageId)).toBe(true)
    for (const [n, result] of body.results.slice(2).entries()) {
      expect(result.index).toBe(n + 2)
      expect(result.error).toMatchObject({ statusCode: 429, errorCode: 'OUTSTANDING_LIMIT_REACHED' })
      expect(result.error.message).toContain(`body.messages[${n + 2}]`)
    }
    expectOutstanding(await batch(key.key, 2))
    // Only the stored messages are counted against the day's quota.
    expect(await usageToday(key.key)).toBe(3)
    const stored = storedMessages(world)
    try {
      for (const result of body.results.slice(0, 2))
        expect(await stored.getJob(result.messageId)).toBeDefined()
    } finally {
      await stored.close()
    }
  })

  describe('with a worker sending', () => {
    /** A worker for what follows the test's setup: none runs while a test fills its key to the bound. */
    let worker: RunningWorker | undefined
    const startWorker = async () => {
      worker ??= await startTestWorker(world, { ADMISSION_INTERVAL_MS: '20' })
    }
    afterEach(async () => {
      await worker?.close()
      worker = undefined
    })

    it("an admin's retry of a failed message is stored past the bound, and sent: it was accepted once", async () => {
      const key = await sendKey()
      for (let i = 0; i < BOUND; i++) expect((await send(app, 'send-text', key.key)).statusCode).toBe(202)
      // A message of this key the platform refused earlier, as the worker leaves it.
      const id = randomUUID()
      const at = new Date().toISOString()
      await world.sql`
        insert into messages (id, api_key_id, type, phone, payload, status, attempts, sender_id,
          last_error_code, last_error_message, accepted_at, failed_at, updated_at)
        values (${id}, ${key.id}, 'text', '+5511912345678', ${world.sql.json({ phone: '+5511912345678', text: 'again' })},
          'failed', 1, 'default', '131000', 'refused', ${at}, ${at}, ${at})`
      const retried = await app.inject({
        method: 'POST',
        url: `/api/admin/messages/${id}/retry`,
        headers: asAdmin(),
      })
      expect(retried.statusCode, retried.body).toBe(200)
      expectOutstanding(await send(app, 'send-text', key.key))
      await startWorker()
      await untilMessageStatus(app, key.key, id, 'sent')
    })

    it('is a bound on what waits, not a cap: once messages are sent, the key sends again', async () => {
      const key = await sendKey()
      const queued = []
      for (let i = 0; i < BOUND; i++) queued.push((await send(app, 'send-text', key.key)).json())
      // Refused while they wait, no worker running yet…
      expectOutstanding(await send(app, 'send-text', key.key))
      await startWorker()
      for (const message of queued) await untilMessageStatus(app, key.key, message.messageId, 'sent')
      for (let i = 0; i < BOUND; i++) expect((await send(app, 'send-text', key.key)).statusCode).toBe(202)
    })

    it('a canceled scheduled message no longer counts', async () => {
      await startWorker()
      const key = await sendKey()
      const scheduled = []
      for (let i = 0; i < BOUND; i++) {
        const res = await send(app, 'send-text', key.key, { ...validSends['send-text'], sendAt: later(3600) })
        expect(res.statusCode, res.body).toBe(202)
        scheduled.push(res.json())
      }
      expectOutstanding(await send(app, 'send-text', key.key))
      const cancel = await app.inject({
        method: 'POST',
        url: `/api/third-party/messages/${scheduled[0].messageId}/cancel`,
        headers: { 'x-api-key': key.key },
      })
      expect(cancel.statusCode, cancel.body).toBe(200)
      await untilMessageStatus(app, key.key, scheduled[0].messageId, 'canceled')
      const next = await send(app, 'send-text', key.key)
      expect(next.statusCode, next.body).toBe(202)
    })
  })
})
