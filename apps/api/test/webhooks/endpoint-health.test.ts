import type { WebhookAttemptList, WebhookEndpointView, WebhookEndpointWithSecret } from '@dispatch/contracts'
import {
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
  buildTestApp,
  createWorld,
  SEND_SCOPES,
  send,
  startTestWorker,
  type TestApp,
  type TestWorld,
} from '../helpers.ts'

const SCOPES = [...SEND_SCOPES, 'manage:webhooks']
const OWNER = 'hooks-owner@acme.test'

let world: TestWorld
let app: TestApp
let smtp: TestSmtpServer
let worker: RunningWorker
let key: { id: string; key: string }
beforeAll(async () => {
  world = await createWorld()
  app = await buildTestApp(world)
  smtp = await startSmtpServer()
  worker = await startTestWorker(world, {
    SMTP_URL: smtp.url,
    WEBHOOK_RETRY_SCHEDULE: '300ms,300ms,300ms,300ms,300ms,300ms,300ms',
    WEBHOOK_TIMEOUT_MS: '2000',
    // "Failing for 5 days", shortened: a streak of a second and a half disables.
    WEBHOOK_DISABLE_AFTER_MS: '1500',
    WEBHOOK_ENDPOINT_CONCURRENCY: '2',
    // Registered while private targets were allowed, delivered by a worker that refuses them.
    WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
  })
  key = await activeKey(app, { scopes: SCOPES, email: OWNER })
})
afterAll(async () => {
  await worker?.close()
  await app?.close()
  await smtp?.close()
  await world?.close()
})

const call = (method: 'GET' | 'POST', path: string, payload?: object) =>
  app.inject({
    method,
    url: `/api/third-party/webhook-endpoints${path}`,
    headers: { 'x-api-key': key.key },
    ...(payload ? { payload } : {}),
  })

async function register(receiver: WebhookReceiver) {
  const res = await call('POST', '', { url: receiver.url, events: ['message.sent'] })
  expect(res.statusCode, res.body).toBe(201)
  return res.json<WebhookEndpointWithSecret>()
}

async function sendText() {
  const res = await send(app, 'send-text', key.key, { phone: '+5511987654321', text: 'hello' })
  expect(res.statusCode, res.body).toBe(202)
  return res.json<{ messageId: string }>().messageId
}

describe('endpoint health', () => {
  it('an endpoint failing for longer than the limit is disabled and its owner e-mailed', async () => {
    const receiver = await startWebhookReceiver()
    try {
      receiver.answer = () => ({ status: 503 })
      const endpoint = await register(receiver)
      await sendText()
      const disabled = await waitFor(
        async () => {
          const view = (await call('GET', `/${endpoint.id}`)).json<WebhookEndpointView>()
          return view.enabled ? undefined : view
        },
        { what: 'the endpoint disabled' },
      )
      expect(disabled).toMatchObject({ enabled: false, disabledReason: 'failing' })
      expect(disabled.failingSince).not.toBeNull()
      const mail = await waitFor(
        () => smtp.messagesTo(OWNER).find((m) => /webhook endpoint/.test(m.subject ?? '')),
        {
          what: 'the e-mail to the owner',
        },
      )
      expect(mail.text).toContain(receiver.url)
      expect(mail.text).toContain(endpoint.id)
      // Nothing signs in the e-mail: the secret never leaves the service after creation.
      expect(mail.text).not.toContain('whsec_')
      const tries = receiver.received.length
      await new Promise((r) => setTimeout(r, 1000))
      expect(receiver.received.length).toBe(tries)
    } finally {
      await receiver.close()
    }
  })

  it('a success ends a failing streak before it disables anything', async () => {
    const receiver = await startWebhookReceiver()
    try {
      receiver.answer = (_r, index) => (index === 0 ? { status: 500 } : { status: 204 })
      const endpoint = await register(receiver)
      await sendText()
      await waitFor(() => receiver.received.length >= 2)
      const healthy = await waitFor(async () => {
        const res = await call('GET', `/${endpoint.id}`)
        return res.json().failingSince === null && res.json()
      })
      expect(healthy).toMatchObject({ enabled: true, disabledReason: null })
    } finally {
      await receiver.close()
    }
  })

  it('no more than the endpoint concurrency is in flight to one endpoint', async () => {
    const receiver = await startWebhookReceiver()
    try {
      receiver.answer = () => ({ status: 204, delayMs: 150 })
      await register(receiver)
      for (let i = 0; i < 12; i++) await sendText()
      await waitFor(() => receiver.received.length >= 12, { timeoutMs: 15_000, what: 'twelve events' })
      expect(receiver.maxInFlight).toBeGreaterThanOrEqual(1)
      expect(receiver.maxInFlight).toBeLessThanOrEqual(2)
    } finally {
      await receiver.close()
    }
  })
})

describe('the target is checked again at delivery', () => {
  it('a worker that refuses private targets delivers nothing to loopback, and says why', async () => {
    const strict = await startTestWorker(world, {
      WORKER_QUEUES: 'webhooks',
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'false',
      WEBHOOK_RETRY_SCHEDULE: '5m',
    })
    await worker.close()
    const receiver = await startWebhookReceiver()
    try {
      const endpoint = await register(receiver)
      const relayOnly = await startTestWorker(world, { WORKER_QUEUES: 'messages,outbox' })
      try {
        await sendText()
        const log = await waitFor(async () => {
          const res = await call('GET', `/${endpoint.id}/attempts?take=10`)
          const list = res.json<WebhookAttemptList>().data
          return list.length > 0 && list
        })
        expect(log[0]).toMatchObject({ success: false, statusCode: null })
        expect(log[0]?.error).toMatch(/private|loopback|not allowed|refused/i)
        expect(receiver.received).toEqual([])
      } finally {
        await relayOnly.close()
      }
    } finally {
      await receiver.close()
      await strict.close()
      worker = await startTestWorker(world, { SMTP_URL: smtp.url })
    }
  })
})
