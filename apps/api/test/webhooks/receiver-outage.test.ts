import type { WebhookAttemptList, WebhookEndpointWithSecret } from '@dispatch/contracts'
import { startWebhookReceiver, waitFor } from '@dispatch/testing'
import type { RunningWorker } from '@dispatch/worker'
import { afterAll, beforeAll, expect, it } from 'vitest'
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

/** How long the receiver is down: a minute, as a sender's deploy or outage might be. */
const DOWN_MS = 60_000

let world: TestWorld
let app: TestApp
let worker: RunningWorker
beforeAll(async () => {
  world = await createWorld()
  app = await buildTestApp(world)
  worker = await startTestWorker(world, {
    // Svix's schedule, compressed ten times or so: tries at 0, 1, 6, 16, 36, 66, 96 s.
    WEBHOOK_RETRY_SCHEDULE: '1s,5s,10s,20s,30s,30s,30s',
  })
})
afterAll(async () => {
  await worker?.close()
  await app?.close()
  await world?.close()
})

it(
  'a receiver down for a minute gets every event once it is back, each webhook-id at least once',
  async () => {
    const key = await activeKey(app, { scopes: [...SEND_SCOPES, 'manage:webhooks'] })
    const receiver = await startWebhookReceiver()
    try {
      const created = await app.inject({
        method: 'POST',
        url: '/api/third-party/webhook-endpoints',
        headers: { 'x-api-key': key.key },
        payload: { url: receiver.url, events: ['message.sent'] },
      })
      const endpoint = created.json<WebhookEndpointWithSecret>()
      await receiver.stop()
      const sent: string[] = []
      const sendOne = async () => {
        const res = await send(app, 'send-text', key.key, { phone: '+5511987654321', text: 'hi' })
        expect(res.statusCode, res.body).toBe(202)
        sent.push(res.json<{ messageId: string }>().messageId)
      }
      // Events keep coming while it is down: at the start, in the middle, near the end.
      for (let i = 0; i < 5; i++) await sendOne()
      await new Promise((r) => setTimeout(r, DOWN_MS / 2))
      for (let i = 0; i < 5; i++) await sendOne()
      await new Promise((r) => setTimeout(r, DOWN_MS / 2))
      await receiver.start()
      await sendOne()

      await waitFor(() => sent.every((id) => receiver.received.some((r) => r.json.data?.messageId === id)), {
        timeoutMs: 60_000,
        intervalMs: 200,
        what: 'every event after the outage',
      })
      const eventIds = new Set(receiver.received.map((r) => r.headers['webhook-id']))
      expect(eventIds.size).toBe(sent.length)

      const res = await app.inject({
        method: 'GET',
        url: `/api/third-party/webhook-endpoints/${endpoint.id}/attempts?take=200&success=false`,
        headers: { 'x-api-key': key.key },
      })
      const failed = res.json<WebhookAttemptList>().data
      // Ten events failed at least once while the port was closed, each try listed with why.
      expect(new Set(failed.map((a) => a.eventId)).size).toBeGreaterThanOrEqual(10)
      for (const a of failed) {
        expect(a.statusCode).toBeNull()
        expect(a.error).toMatch(/refused|ECONNREFUSED|connect/i)
      }
    } finally {
      await receiver.close()
    }
  },
  DOWN_MS + 90_000,
)
