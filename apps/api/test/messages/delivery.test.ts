import type { MessageView } from '@dispatch/contracts'
import { type FakeWhatsApp, signWebhook, startFakeWhatsApp, statusWebhook, waitFor } from '@dispatch/testing'
import type { RunningWorker } from '@dispatch/worker'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  activeKey,
  buildTestApp,
  createWorld,
  expectError,
  SEND_SCOPES,
  type SendPath,
  send,
  startTestWorker,
  type TestApp,
  type TestWorld,
  validSends,
} from '../helpers.ts'

const APP_SECRET = 'whatsapp-app-secret-for-tests'

let world: TestWorld
let app: TestApp
let fake: FakeWhatsApp
let worker: RunningWorker
let key: string
beforeAll(async () => {
  world = await createWorld()
  app = await buildTestApp(world, { WHATSAPP_APP_SECRET: APP_SECRET })
  fake = await startFakeWhatsApp()
  worker = await startTestWorker(world, {
    WORKER_QUEUES: 'messages',
    WHATSAPP_API_URL: fake.url,
    WHATSAPP_ACCESS_TOKEN: 'EAAG-e2e-token',
    WHATSAPP_PHONE_NUMBER_ID: '106540352242922',
  })
  key = (await activeKey(app, { scopes: SEND_SCOPES })).key
})
afterAll(async () => {
  await worker?.close()
  await app?.close()
  await fake?.close()
  await world?.close()
})

const statusOn = async (on: TestApp, apiKey: string, id: string) =>
  (
    await on.inject({
      method: 'GET',
      url: `/api/third-party/messages/${id}`,
      headers: { 'x-api-key': apiKey },
    })
  ).json<MessageView>()
const status = (id: string) => statusOn(app, key, id)

/** The message's status once it reads `sent`. */
const untilSent = (id: string, on = app, apiKey = key) =>
  waitFor(
    async () => {
      const current = await statusOn(on, apiKey, id)
      return current.status === 'sent' ? current : undefined
    },
    { what: `message ${id} to be sent` },
  )

describe('from the API to the platform and back', () => {
  it.each<SendPath>(['send-text', 'send-template', 'send-image'])(
    '%s: accepted, delivered to the Cloud API, status sent with the platform id',
    async (path) => {
      const accepted = (await send(app, path, key)).json()
      const view = await untilSent(accepted.messageId)
      const request = fake.requests.find((r) => r.messageId === accepted.messageId)
      expect(request?.body.to).toBe('5511987654321')
      expect(view).toMatchObject({ messageId: accepted.messageId, attempts: 1, lastError: null })
      expect(view.platformMessageId).toBe(request?.platformMessageId)
    },
  )

  it('the platform webhooks then move it to delivered and read', async () => {
    const accepted = (await send(app, 'send-text', key)).json()
    const sent = await untilSent(accepted.messageId)
    for (const value of ['delivered', 'read']) {
      const body = JSON.stringify(
        statusWebhook({
          id: sent.platformMessageId,
          status: value,
          timestamp: String(Math.floor(Date.now() / 1000)),
          biz_opaque_callback_data: accepted.messageId,
        }),
      )
      const res = await app.inject({
        method: 'POST',
        url: '/api/webhooks/whatsapp',
        headers: { 'content-type': 'application/json', 'x-hub-signature-256': signWebhook(body, APP_SECRET) },
        payload: body,
      })
      expect(res.statusCode).toBe(200)
      expect((await status(accepted.messageId)).status).toBe(value)
    }
  })
})

describe("clientReference, the sender's own reference", () => {
  it.each<SendPath>(['send-text', 'send-template', 'send-image'])(
    '%s: shown by the status before and after the worker records it, never sent to the platform',
    async (path) => {
      const clientReference = `order-42/${path}/ação`
      const res = await send(app, path, key, { ...validSends[path], clientReference })
      expect(res.statusCode, res.body).toBe(202)
      const { messageId } = res.json()
      expect((await status(messageId)).clientReference).toBe(clientReference)
      const view = await untilSent(messageId)
      expect(view.clientReference).toBe(clientReference)
      const request = fake.requests.find((r) => r.messageId === messageId)
      expect(JSON.stringify(request?.body)).not.toContain('order-42')
      const [row] = await world.sql<{ payload: object; client_reference: string }[]>`
        select payload, client_reference from messages where id = ${messageId}`
      expect(row?.client_reference).toBe(clientReference)
      expect(row?.payload).toEqual(validSends[path])
    },
  )

  it('is null when not given, and refused past 256 characters or empty', async () => {
    const { messageId } = (await send(app, 'send-text', key)).json()
    expect((await untilSent(messageId)).clientReference).toBeNull()
    for (const clientReference of ['x'.repeat(257), '']) {
      const res = await send(app, 'send-text', key, { ...validSends['send-text'], clientReference })
      expectError(res, 400, 'VALIDATION_ERROR', /^body\.clientReference/)
    }
  })
})

describe('the sandbox adapter', () => {
  it('is the default without platform credentials: messages are recorded as sent', async () => {
    const sandboxWorld = await createWorld()
    const sandboxApp = await buildTestApp(sandboxWorld)
    const sandbox = await startTestWorker(sandboxWorld, { WORKER_QUEUES: 'messages' })
    try {
      const sandboxKey = (await activeKey(sandboxApp, { scopes: SEND_SCOPES })).key
      const accepted = (await send(sandboxApp, 'send-image', sandboxKey)).json()
      const view = await untilSent(accepted.messageId, sandboxApp, sandboxKey)
      expect(view?.platformMessageId).toMatch(/^wamid\.sandbox\./)
    } finally {
      await sandbox.close()
      await sandboxApp.close()
      await sandboxWorld.close()
    }
  })
})
