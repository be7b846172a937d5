import { QueueNames, type SmsFallbackTimerJob } from '@dispatch/contracts'
import {
  type FakeSms,
  type FakeWhatsApp,
  startFakeSms,
  startFakeWhatsApp,
  startWebhookReceiver,
  type WebhookReceiver,
  waitFor,
} from '@dispatch/testing'
import type { RunningWorker } from '@dispatch/worker'
import { Queue, QueueEvents } from 'bullmq'
import { expect } from 'vitest'
import {
  activeKey,
  addWebhookEndpoint,
  buildTestApp,
  createWorld,
  send,
  startTestWorker,
  type TestApp,
  type TestWorld,
  untilMessageStatus,
} from '../helpers.ts'

export const APP_SECRET = 'whatsapp-app-secret-for-fallback-tests'
export const PUBLIC_URL = 'https://dispatch.example.com/api/webhooks/sms/status'
export const SMS = { text: 'Your order has shipped: track it at example.com/t/1' }

/**
 * The API and a worker pointed at the fake Cloud API and the fake SMS provider, a key that may ask
 * for a fallback with an endpoint subscribed to `message.delivered`, `message.fallback_sent` and
 * `message.delivered_after_failure`,
 * and the fallback timers' queue: what the end-to-end fallback tests share.
 */
export interface SmsFallbackWorld {
  world: TestWorld
  app: TestApp
  whatsapp: FakeWhatsApp
  sms: FakeSms
  worker: RunningWorker
  receiver: WebhookReceiver
  timers: Queue<SmsFallbackTimerJob>
  timerEvents: QueueEvents
  key: { id: string; key: string }
  /** Sends a text; answers its id once WhatsApp took it (recorded `sent`). */
  sentText(
    phone: string,
    extra: Record<string, unknown>,
    apiKey?: string,
  ): Promise<{ messageId: string; platformMessageId: string }>
  close(): Promise<void>
}

export async function startSmsFallbackWorld(): Promise<SmsFallbackWorld> {
  const world = await createWorld()
  const whatsapp = await startFakeWhatsApp()
  const sms = await startFakeSms()
  const smsEnv = sms.env(PUBLIC_URL)
  const app = await buildTestApp(world, { ...smsEnv, WHATSAPP_APP_SECRET: APP_SECRET })
  const worker = await startTestWorker(world, {
    ...smsEnv,
    WHATSAPP_API_URL: whatsapp.url,
    WHATSAPP_ACCESS_TOKEN: 'default-token',
    WHATSAPP_PHONE_NUMBER_ID: '106540352242922',
    ADMISSION_INTERVAL_MS: '20',
    TEMPLATE_SYNC_INTERVAL_MS: '0',
    // The SMS's prices read from the provider soon after their delivery ends.
    SMS_PRICE_CHECK_MS: '200',
  })
  const key = await activeKey(app, {
    scopes: ['send:free-text', 'read:messages', 'send:sms-fallback', 'manage:webhooks'],
  })
  const receiver = await startWebhookReceiver()
  await addWebhookEndpoint(app, key.key, {
    url: receiver.url,
    events: ['message.delivered', 'message.fallback_sent', 'message.delivered_after_failure'],
  })
  const connection = { connection: { url: world.redisUrl }, prefix: world.queuePrefix }
  const timers = new Queue<SmsFallbackTimerJob>(QueueNames.smsFallbackTimers, connection)
  const timerEvents = new QueueEvents(QueueNames.smsFallbackTimers, connection)
  await timerEvents.waitUntilReady()

  return {
    world,
    app,
    whatsapp,
    sms,
    worker,
    receiver,
    timers,
    timerEvents,
    key,
    async sentText(phone, extra, apiKey = key.key) {
      const res = await send(app, 'send-text', apiKey, { phone, text: 'Your order has shipped', ...extra })
      expect(res.statusCode, res.body).toBe(202)
      const { messageId } = res.json<{ messageId: string }>()
      const view = await untilMessageStatus(app, apiKey, messageId, 'sent')
      // Recorded in Postgres too (a view may answer from Redis first), so WhatsApp's statuses find it.
      await waitFor(
        async () =>
          (await world.sql`select 1 from messages where id = ${messageId} and status = 'sent'`).length > 0,
        { what: 'the sent record' },
      )
      return { messageId, platformMessageId: view.platformMessageId as string }
    },
    async close() {
      await worker.close()
      await timerEvents.close()
      await timers.close()
      await app.close()
      await receiver.close()
      await sms.close()
      await whatsapp.close()
      await world.close()
    },
  }
}
