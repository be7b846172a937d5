import { BatchAccepted, type MessageView } from '@dispatch/contracts'
import { type FakeWhatsApp, startFakeWhatsApp, waitFor } from '@dispatch/testing'
import type { RunningWorker } from '@dispatch/worker'
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
  storedMessages,
  type TestApp,
  type TestWorld,
  validSends,
} from '../helpers.ts'

let world: TestWorld
let app: TestApp
let fake: FakeWhatsApp
let worker: RunningWorker
let queue: ReturnType<typeof storedMessages>
let key: string
beforeAll(async () => {
  world = await createWorld()
  app = await buildTestApp(world, { MESSAGE_RATE_PER_SECOND: '100000', BATCH_BODY_LIMIT_BYTES: '1048576' })
  fake = await startFakeWhatsApp()
  worker = await startTestWorker(world, {
    WORKER_QUEUES: 'messages',
    WHATSAPP_API_URL: fake.url,
    WHATSAPP_ACCESS_TOKEN: 'EAAG-batch-tests',
    WHATSAPP_PHONE_NUMBER_ID: '106540352242922',
    MESSAGES_CONCURRENCY: '50',
    PLATFORM_RATE_PER_SECOND: '100000',
  })
  queue = storedMessages(world)
  key = (await activeKey(app, { scopes: SEND_SCOPES })).key
})
afterAll(async () => {
  await queue?.close()
  await worker?.close()
  await app?.close()
  await fake?.close()
  await world?.close()
})

const batch = (messages: unknown[], apiKey = key, on: TestApp = app, headers: Record<string, string> = {}) =>
  on.inject({
    method: 'POST',
    url: '/api/third-party/messages/batch',
    headers: { 'x-api-key': apiKey, ...headers },
    payload: { messages },
  })

const text = (i: number) => ({
  type: 'text',
  ...validSends['send-text'],
  text: `Message ${i}`,
  clientReference: `ref-${i}`,
})
const template = () => ({ type: 'template', ...validSends['send-template'] })
const image = () => ({ type: 'image', ...validSends['send-image'] })

describe('POST /messages/batch', () => {
  it('1,000 mixed items, some invalid: one exact result per item, every valid one delivered once', async () => {
    const items: unknown[] = []
    const bad = new Map<number, RegExp>()
    for (let i = 0; i < 1000; i++) {
      if (i % 97 === 5) {
        items.push({ type: 'text', phone: 'not-a-phone', text: 'x' })
        bad.set(i, new RegExp(`^body\\.messages\\[${i}\\]\\.phone `))
      } else if (i % 113 === 7) {
        items.push({ type: 'sms', phone: '+5511987654321', text: 'x' })
        bad.set(i, new RegExp(`^body\\.messages\\[${i}\\]\\.type must be one of`))
      } else if (i % 131 === 9) {
        items.push({ ...text(i), color: 'red' })
        bad.set(i, /unknown property "color"/)
      } else {
        items.push(i % 3 === 0 ? text(i) : i % 3 === 1 ? template() : image())
      }
    }
    const res = await batch(items)
    expect(res.statusCode, res.body.slice(0, 500)).toBe(202)
    const body = res.json<BatchAccepted>()
    expect(Value.Check(BatchAccepted, body)).toBe(true)
    expect(body.results).toHaveLength(1000)
    expect(body.rejected).toBe(bad.size)
    expect(body.accepted).toBe(1000 - bad.size)
    body.results.forEach((result, i) => {
      expect(result.index).toBe(i)
      const why = bad.get(i)
      if (why) {
        expect('error' in result && result.error).toMatchObject({
          statusCode: 400,
          errorCode: 'VALIDATION_ERROR',
        })
        expect('error' in result && result.error.message).toMatch(why)
      } else {
        expect(result).toEqual({ index: i, messageId: expect.any(String), status: 'queued' })
      }
    })
    const ids = body.results.flatMap((r) => ('messageId' in r ? [r.messageId] : []))
    await waitFor(() => ids.every((id) => fake.sendsOf(id) >= 1), {
      timeoutMs: 60_000,
      what: 'every valid item sent',
    })
    for (const id of ids) expect(fake.sendsOf(id)).toBe(1)
    // The batch id and each item's own reference are on each message.
    const first = await app.inject({
      method: 'GET',
      url: `/api/third-party/messages/${ids[0]}`,
      headers: { 'x-api-key': key },
    })
    expect(first.json<MessageView>()).toMatchObject({ batchId: body.batchId, clientReference: 'ref-0' })
  }, 90_000)

  it('refuses a batch over 1,000 items, or over the byte limit, whole', async () => {
    const before = await queue.count()
    expectError(
      await batch(Array.from({ length: 1001 }, (_, i) => text(i))),
      400,
      'VALIDATION_ERROR',
      /messages/,
    )
    const huge = Array.from({ length: 300 }, (_, i) => ({ ...text(i), text: 'x'.repeat(4000) }))
    expectError(await batch(huge), 413, 'PAYLOAD_TOO_LARGE')
    expectError(await batch([]), 400, 'VALIDATION_ERROR')
    expect(await queue.count()).toBe(before)
  })

  it('a batch with no valid item is 400 and queues nothing', async () => {
    const before = await queue.count()
    const res = await batch([{ type: 'text', phone: 'x', text: 'y' }, { type: 'fax' }])
    expectError(res, 400, 'VALIDATION_ERROR', /no item of the batch is valid/i)
    expect(await queue.count()).toBe(before)
  })

  it('an item of a type the key may not send is refused in its result; the others go', async () => {
    const textOnly = await activeKey(app, { scopes: ['send:free-text', 'read:messages'] })
    const res = await batch([text(1), template()], textOnly.key)
    expect(res.statusCode, res.body).toBe(202)
    const [ok, refused] = res.json<BatchAccepted>().results
    expect(ok).toMatchObject({ index: 0, status: 'queued' })
    expect(refused).toMatchObject({ index: 1, error: { statusCode: 403, errorCode: 'INSUFFICIENT_SCOPE' } })
  })

  it('an Idempotency-Key replays the answer and enqueues nothing again', async () => {
    await worker.close()
    try {
      const headers = { 'idempotency-key': `batch-${Date.now()}` }
      const first = await batch([text(1), text(2)], key, app, headers)
      expect(first.statusCode, first.body).toBe(202)
      const count = await queue.count()
      const again = await batch([text(1), text(2)], key, app, headers)
      expect(again.statusCode).toBe(202)
      expect(again.json()).toEqual(first.json())
      expect(await queue.count()).toBe(count)
    } finally {
      worker = await startTestWorker(world, {
        WORKER_QUEUES: 'messages',
        WHATSAPP_API_URL: fake.url,
        WHATSAPP_ACCESS_TOKEN: 'EAAG-batch-tests',
        WHATSAPP_PHONE_NUMBER_ID: '106540352242922',
      })
    }
  })

  it('scheduled items are scheduled; the rate limit counts messages, not requests', async () => {
    const limited = await buildTestApp(world, {
      MESSAGE_RATE_PER_SECOND: '10',
      SCHEDULE_MIN_AHEAD_SECONDS: '1',
    })
    try {
      const own = await activeKey(limited, { scopes: SEND_SCOPES })
      const sendAt = new Date(Date.now() + 60_000).toISOString()
      const res = await batch(
        Array.from({ length: 12 }, (_, i) => ({ ...text(i), ...(i === 0 ? { sendAt } : {}) })),
        own.key,
        limited,
      )
      expect(res.statusCode, res.body).toBe(202)
      expect(res.json<BatchAccepted>().results[0]).toMatchObject({ status: 'scheduled' })
      // Twelve messages spent more than the ten a second: the next single send waits.
      const next = await send(limited, 'send-text', own.key)
      expectError(next, 429, 'RATE_LIMITED')
      expect(Number(next.headers['retry-after'])).toBeGreaterThanOrEqual(1)
    } finally {
      await limited.close()
    }
  })
})
