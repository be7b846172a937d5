import { randomBytes } from 'node:crypto'
import type { TemplateList } from '@dispatch/contracts'
import {
  type FakeWhatsApp,
  startFakeWhatsApp,
  startWebhookReceiver,
  templateCategoryWebhook,
  templateQualityWebhook,
  templateStatusWebhook,
  type WebhookReceiver,
  waitFor,
} from '@dispatch/testing'
import type { RunningWorker } from '@dispatch/worker'
import { Webhook } from 'standardwebhooks'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  addWebhookEndpoint,
  asAdmin,
  buildTestApp,
  createWorld,
  postPlatformWebhook,
  SEND_SCOPES,
  send,
  startTestWorker,
  type TestApp,
  type TestWorld,
  validSends,
} from '../helpers.ts'
import { keyOf, syncedSender } from './setup.ts'

const SECRETS_KEY = randomBytes(32).toString('base64')
const APP_SECRET = 'app-secret-0123456789'
const shipped = validSends['send-template']
/** `order_shipped` pt_BR in the fake's demo catalog. */
const ORDER_SHIPPED = { id: '1001', name: 'order_shipped', language: 'pt_BR' }

let world: TestWorld
let app: TestApp
let second: TestApp
let fake: FakeWhatsApp
let receiver: WebhookReceiver
let worker: RunningWorker
let sender: { id: string; wabaId: string | null }
let key: { id: string; key: string }
let otherKey: { id: string; key: string }
let secret: string

const templateOf = async (name: string) => {
  const res = await app.inject({
    method: 'GET',
    url: `/api/third-party/templates?name=${name}&take=5`,
    headers: { 'x-api-key': key.key },
  })
  return res.json<TemplateList>().data[0]
}

beforeAll(async () => {
  world = await createWorld()
  fake = await startFakeWhatsApp()
  receiver = await startWebhookReceiver()
  const env = {
    SECRETS_KEY,
    WHATSAPP_API_URL: fake.url,
    WHATSAPP_APP_SECRET: APP_SECRET,
    // Only the announcement can make the second instance current within a second.
    TEMPLATE_CACHE_REFRESH_MS: '600000',
  }
  app = await buildTestApp(world, env)
  second = await buildTestApp(world, env)
  worker = await startTestWorker(world, {
    SECRETS_KEY,
    WHATSAPP_API_URL: fake.url,
    TEMPLATE_SYNC_INTERVAL_MS: '0',
  })
  sender = await syncedSender(app, fake)
  const other = await syncedSender(app, fake)
  key = await keyOf(app, sender.id, [...SEND_SCOPES, 'manage:webhooks'])
  otherKey = await keyOf(app, other.id, [...SEND_SCOPES, 'manage:webhooks'])
  const events = ['template.status_updated', 'template.quality_updated', 'template.category_updated']
  for (const k of [key, otherKey]) {
    const res = await addWebhookEndpoint(app, k.key, { url: `${receiver.url}/${k.id}`, events })
    if (k === key) secret = res.json().secret
  }
  // The second instance learned of the sync by its announcement.
  await waitFor(
    async () =>
      (await send(second, 'send-template', key.key, { ...shipped, templateId: 'nope' })).statusCode === 422 ||
      undefined,
    {
      what: 'the second instance to know the catalog',
    },
  )
})

afterAll(async () => {
  await worker?.close()
  await second?.close()
  await app?.close()
  await receiver?.close()
  await fake?.close()
  await world?.close()
})

const statusWebhook = (event: string, reason?: string) =>
  postPlatformWebhook(
    app,
    templateStatusWebhook(sender.wabaId as string, {
      ...ORDER_SHIPPED,
      event,
      ...(reason ? { reason } : {}),
    }),
    APP_SECRET,
  )

/** Sends `order_shipped` on both instances until each answers `status`; answers how long it took. */
async function untilBothAnswer(status: number): Promise<number> {
  const started = Date.now()
  await waitFor(
    async () => {
      const answers = await Promise.all(
        [app, second].map((instance) => send(instance, 'send-template', key.key, shipped)),
      )
      return answers.every((res) => res.statusCode === status) || undefined
    },
    { what: `both instances answering ${status}`, timeoutMs: 5000, intervalMs: 20 },
  )
  return Date.now() - started
}

describe('Meta’s template webhooks', () => {
  it('a status change is refused or allowed on every API instance within a second', async () => {
    expect((await send(second, 'send-template', key.key, shipped)).statusCode).toBe(202)
    const paused = await statusWebhook('PAUSED', 'Low quality: users blocked it')
    expect(paused.statusCode, paused.body).toBe(200)
    expect(await untilBothAnswer(422)).toBeLessThan(1000)
    const refused = await send(second, 'send-template', key.key, shipped)
    expect(refused.json()).toMatchObject({
      errorCode: 'TEMPLATE_NOT_APPROVED',
      message: expect.stringContaining('is PAUSED: Low quality: users blocked it'),
    })
    expect(await templateOf('order_shipped')).toMatchObject({
      status: 'PAUSED',
      rejectedReason: 'Low quality: users blocked it',
    })

    expect((await statusWebhook('APPROVED')).statusCode).toBe(200)
    expect(await untilBothAnswer(202)).toBeLessThan(1000)
    expect(await templateOf('order_shipped')).toMatchObject({ status: 'APPROVED', rejectedReason: null })
  })

  it('forwards each change as a signed event to the keys of that sender only', async () => {
    const event = await waitFor(
      () =>
        receiver.received.find(
          (r) =>
            r.path === `/${key.id}` &&
            r.json.type === 'template.status_updated' &&
            r.json.data.status === 'PAUSED',
        ),
      { what: 'the template.status_updated event', timeoutMs: 15_000 },
    )
    expect(() =>
      new Webhook(secret).verify(event.body, event.headers as Record<string, string>),
    ).not.toThrow()
    expect(event.json.data).toMatchObject({
      senderId: sender.id,
      templateId: '1001',
      name: 'order_shipped',
      language: 'pt_BR',
      event: 'PAUSED',
      status: 'PAUSED',
      previousStatus: 'APPROVED',
      reason: 'Low quality: users blocked it',
    })
    // The other sender's key has the same template names on another account: it hears nothing.
    expect(receiver.received.filter((r) => r.path === `/${otherKey.id}`)).toEqual([])
  })

  it('keeps a FLAGGED template sendable, and stores quality and category changes', async () => {
    expect((await statusWebhook('FLAGGED')).statusCode).toBe(200)
    expect((await send(app, 'send-template', key.key, shipped)).statusCode).toBe(202)

    const wabaId = sender.wabaId as string
    const quality = await postPlatformWebhook(
      app,
      templateQualityWebhook(wabaId, { ...ORDER_SHIPPED, previous: 'GREEN', next: 'RED' }),
      APP_SECRET,
    )
    expect(quality.statusCode).toBe(200)
    const category = await postPlatformWebhook(
      app,
      templateCategoryWebhook(wabaId, { ...ORDER_SHIPPED, previous: 'UTILITY', next: 'MARKETING' }),
      APP_SECRET,
    )
    expect(category.statusCode).toBe(200)
    expect(await templateOf('order_shipped')).toMatchObject({ quality: 'RED', category: 'MARKETING' })
    for (const [type, data] of [
      ['template.quality_updated', { quality: 'RED', previousQuality: 'GREEN' }],
      ['template.category_updated', { category: 'MARKETING', previousCategory: 'UTILITY' }],
    ] as const) {
      const event = await waitFor(
        () => receiver.received.find((r) => r.path === `/${key.id}` && r.json.type === type),
        { what: type, timeoutMs: 15_000 },
      )
      expect(event.json.data).toMatchObject({ senderId: sender.id, templateId: '1001', ...data })
    }
  })

  it('acknowledges an unknown account and skips a malformed change, applying the others', async () => {
    const unknown = await postPlatformWebhook(
      app,
      templateStatusWebhook('999999999999999', { ...ORDER_SHIPPED, event: 'DISABLED' }),
      APP_SECRET,
    )
    expect(unknown.statusCode).toBe(200)
    const mixed = templateStatusWebhook(sender.wabaId as string, { ...ORDER_SHIPPED, event: 'DISABLED' })
    const entry = mixed.entry[0] as { changes: Array<{ field: string; value: object }> }
    entry.changes.unshift({ field: 'message_template_status_update', value: { event: 'PAUSED' } })
    const res = await postPlatformWebhook(app, mixed, APP_SECRET)
    expect(res.statusCode).toBe(200)
    expect(app.logs.text()).toContain('whatsapp webhook items skipped')
    expect(await templateOf('order_shipped')).toMatchObject({ status: 'DISABLED' })
    expect((await send(app, 'send-template', key.key, shipped)).json()).toMatchObject({
      errorCode: 'TEMPLATE_NOT_APPROVED',
    })
    const onlyOurs = await app.inject({
      method: 'GET',
      url: `/api/admin/senders/${sender.id}`,
      headers: asAdmin(),
    })
    expect(onlyOurs.statusCode).toBe(200)
  })
})
