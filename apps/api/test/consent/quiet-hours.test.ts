import type { RunningWorker } from '@dispatch/worker'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  activeKey,
  asAdmin,
  buildTestApp,
  createWorld,
  expectError,
  messageView,
  startTestWorker,
  type TestApp,
  type TestWorld,
  untilMessageStatus,
} from '../helpers.ts'

/**
 * Quiet hours are a stretch of the recipient's day; these tests put the API's clock a few seconds
 * before one ends (the stretch is the ten minutes up to the next-but-one minute, in real time), so
 * a held message is released within seconds, by the real worker.
 */
const MINUTE = 60_000
const LEAD_MS = 6000
/** When the quiet hours of the test under way end, in real time. */
let quietEnd = 0
/** The API's clock runs this far from real time; the worker and Redis keep real time. */
let shift = 0
/** Puts the API's clock LEAD_MS before the end of a ten-minute stretch of quiet hours. */
function justBeforeQuietHoursEnd() {
  quietEnd = (Math.floor(Date.now() / MINUTE) + 2) * MINUTE
  shift = quietEnd - LEAD_MS - Date.now()
}

/** `HH:MM` of an instant in a zone. */
const hhmm = (ms: number, timeZone: string) =>
  new Intl.DateTimeFormat('en-GB', { timeZone, hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).format(
    ms,
  )
const quietIn = (timeZone: string) => ({
  start: hhmm(quietEnd - 10 * MINUTE, timeZone),
  end: hhmm(quietEnd, timeZone),
})

const LONDON_PHONE = '+447400123456'
const BRAZIL_PHONE = '+5511987654321'

let world: TestWorld
let app: TestApp
let worker: RunningWorker
let key: { id: string; key: string }

const sendText = (apiKey: string, payload: object) =>
  app.inject({
    method: 'POST',
    url: '/api/third-party/messages/send-text',
    headers: { 'x-api-key': apiKey },
    payload: { text: 'Your order shipped', ...payload },
  })
const setKey = (id: string, payload: object) =>
  app.inject({ method: 'PATCH', url: `/api/admin/api-keys/${id}`, headers: asAdmin(), payload })

beforeAll(async () => {
  world = await createWorld()
  app = await buildTestApp(world, {}, undefined, { clock: () => new Date(Date.now() + shift) })
  worker = await startTestWorker(world, { ADMISSION_INTERVAL_MS: '20' })
  key = await activeKey(app, { scopes: ['send:free-text', 'read:messages'] })
})

afterAll(async () => {
  await worker?.close()
  await app?.close()
  await world?.close()
})

describe("a send's own quiet hours", () => {
  it('hold a message due inside them until they end, then it goes through the queue', async () => {
    justBeforeQuietHoursEnd()
    const res = await sendText(key.key, { phone: BRAZIL_PHONE, quietHours: quietIn('UTC'), timeZone: 'UTC' })
    expect(res.statusCode, res.body).toBe(202)
    const accepted = res.json()
    expect(accepted).toMatchObject({
      status: 'scheduled',
      scheduledReason: 'quiet_hours',
      sendAt: new Date(quietEnd).toISOString(),
    })
    const waiting = await messageView(app, key.key, accepted.messageId)
    expect(waiting).toMatchObject({ status: 'scheduled', scheduledReason: 'quiet_hours' })

    const sent = await untilMessageStatus(app, key.key, accepted.messageId, 'sent', LEAD_MS + 15_000)
    expect(sent).toMatchObject({ scheduledReason: 'quiet_hours', sendAt: new Date(quietEnd).toISOString() })
    const [row] = await world.sql<
      { sent_at: Date }[]
    >`select sent_at from messages where id = ${accepted.messageId}`
    // Sent once quiet hours were over (the API's clock runs ahead of the worker's by `shift`).
    expect(row).toBeDefined()
    expect((row as { sent_at: Date }).sent_at.valueOf() + shift).toBeGreaterThanOrEqual(quietEnd)
  }, 30_000)

  it('let a message go at once when the recipient is outside them', async () => {
    justBeforeQuietHoursEnd()
    // Fourteen hours ahead of UTC, the stretch is long past.
    const res = await sendText(key.key, {
      phone: BRAZIL_PHONE,
      quietHours: quietIn('UTC'),
      timeZone: 'Pacific/Kiritimati',
    })
    expect(res.statusCode, res.body).toBe(202)
    expect(res.json().status).toBe('queued')
    expect(res.json().scheduledReason).toBeUndefined()
    await untilMessageStatus(app, key.key, res.json().messageId, 'sent')
  })

  it('are refused when malformed, naming the field', async () => {
    expectError(
      await sendText(key.key, { phone: BRAZIL_PHONE, quietHours: { start: '21:00', end: '21:00' } }),
      400,
      'VALIDATION_ERROR',
      /body\.quietHours\.end/,
    )
    expectError(
      await sendText(key.key, { phone: BRAZIL_PHONE, quietHours: { start: '25:00', end: '08:00' } }),
      400,
      'VALIDATION_ERROR',
      /quietHours\/start|quietHours\.start/,
    )
    expectError(
      await sendText(key.key, {
        phone: BRAZIL_PHONE,
        quietHours: { start: '21:00', end: '08:00' },
        timeZone: 'Mars/Olympus',
      }),
      400,
      'VALIDATION_ERROR',
      /body\.timeZone/,
    )
  })
})

describe("a key's quiet hours, set by an admin", () => {
  let quietKey: { id: string; key: string }
  beforeAll(async () => {
    quietKey = await activeKey(app, { scopes: ['send:free-text', 'read:messages'] })
    expect((await setKey(quietKey.id, { transactional: true })).statusCode).toBe(200)
  })
  /** Quiet hours on the key that end LEAD_MS after the API's clock, in London. */
  const quietKeyNow = async () => {
    justBeforeQuietHoursEnd()
    const res = await setKey(quietKey.id, { quietHours: quietIn('Europe/London') })
    expect(res.statusCode, res.body).toBe(200)
    expect(res.json().quietHours).toEqual(quietIn('Europe/London'))
  }

  it("hold its messages in the recipient's local time, from the phone number's country", async () => {
    await quietKeyNow()
    const res = await sendText(quietKey.key, { phone: LONDON_PHONE })
    expect(res.statusCode, res.body).toBe(202)
    expect(res.json()).toMatchObject({ status: 'scheduled', scheduledReason: 'quiet_hours' })
    await untilMessageStatus(app, quietKey.key, res.json().messageId, 'sent', LEAD_MS + 15_000)
  }, 30_000)

  it('are skipped by a high-priority message', async () => {
    await quietKeyNow()
    const res = await sendText(quietKey.key, { phone: LONDON_PHONE, priority: 'high' })
    expect(res.statusCode, res.body).toBe(202)
    expect(res.json().status).toBe('queued')
    // Sent before quiet hours would have let it go.
    await untilMessageStatus(app, quietKey.key, res.json().messageId, 'sent', LEAD_MS - 1000)
  })

  it('are replaced by a send that names its own', async () => {
    await quietKeyNow()
    const res = await sendText(quietKey.key, {
      phone: LONDON_PHONE,
      quietHours: { start: '03:00', end: '03:01' },
      timeZone: 'Pacific/Kiritimati',
    })
    expect(res.statusCode, res.body).toBe(202)
    expect(res.json().status).toBe('queued')
  })

  it('hold items of a batch one by one', async () => {
    await quietKeyNow()
    const res = await app.inject({
      method: 'POST',
      url: '/api/third-party/messages/batch',
      headers: { 'x-api-key': quietKey.key },
      payload: {
        messages: [
          { type: 'text', phone: LONDON_PHONE, text: 'held' },
          { type: 'text', phone: LONDON_PHONE, text: 'not held', timeZone: 'Pacific/Kiritimati' },
        ],
      },
    })
    expect(res.statusCode, res.body).toBe(202)
    const [held, free] = res.json().results
    expect(held).toMatchObject({
      status: 'scheduled',
      scheduledReason: 'quiet_hours',
      sendAt: new Date(quietEnd).toISOString(),
    })
    expect(free.status).toBe('queued')
  })

  it('are checked, audited, and lifted with null', async () => {
    expectError(
      await setKey(quietKey.id, { quietHours: { start: '08:00', end: '08:00' } }),
      400,
      'VALIDATION_ERROR',
      /quietHours/,
    )
    expectError(
      await setKey(quietKey.id, { quietHours: { start: '21:00', end: '08:00', timeZone: 'Nowhere/City' } }),
      400,
      'VALIDATION_ERROR',
      /quietHours\.timeZone/,
    )
    const evening = { start: '21:00', end: '08:00', timeZone: 'America/Sao_Paulo' }
    expect((await setKey(quietKey.id, { quietHours: evening })).statusCode).toBe(200)
    const detail = await app.inject({
      method: 'GET',
      url: `/api/admin/api-keys/${quietKey.id}`,
      headers: asAdmin(),
    })
    expect(detail.json().history.at(-1).changes.quietHours).toMatchObject({ to: evening })

    // The same quiet hours again, keys in another order, change nothing (and record nothing).
    const again = await setKey(quietKey.id, {
      quietHours: { timeZone: 'America/Sao_Paulo', end: '08:00', start: '21:00' },
    })
    expect(again.statusCode).toBe(200)
    const after = await app.inject({
      method: 'GET',
      url: `/api/admin/api-keys/${quietKey.id}`,
      headers: asAdmin(),
    })
    expect(after.json().history).toHaveLength(detail.json().history.length)

    expect((await setKey(quietKey.id, { quietHours: null })).json().quietHours).toBeNull()
    const res = await sendText(quietKey.key, { phone: LONDON_PHONE })
    expect(res.json().status).toBe('queued')
  })
})
