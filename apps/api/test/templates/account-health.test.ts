import { randomBytes } from 'node:crypto'
import type { SenderView } from '@dispatch/contracts'
import {
  accountWebhook,
  startSmtpServer,
  startWebhookReceiver,
  type TestSmtpServer,
  type WebhookReceiver,
  waitFor,
} from '@dispatch/testing'
import type { RunningWorker } from '@dispatch/worker'
import { afterAll, beforeAll, expect, it } from 'vitest'
import {
  addWebhookEndpoint,
  asAdmin,
  buildTestApp,
  createWorld,
  postPlatformWebhook,
  SEND_SCOPES,
  startTestWorker,
  type TestApp,
  type TestWorld,
} from '../helpers.ts'
import { keyOf } from './setup.ts'

const SECRETS_KEY = randomBytes(32).toString('base64')
const APP_SECRET = 'app-secret-0123456789'
const ADMINS = 'oncall@dispatch.test'
const WABA = '320000000000001'
const DISPLAY = '15550009999'

let world: TestWorld
let app: TestApp
let worker: RunningWorker
let smtp: TestSmtpServer
let receiver: WebhookReceiver
let sender: SenderView
let key: { id: string; key: string }

beforeAll(async () => {
  world = await createWorld()
  smtp = await startSmtpServer()
  receiver = await startWebhookReceiver()
  app = await buildTestApp(world, { SECRETS_KEY, WHATSAPP_APP_SECRET: APP_SECRET, ADMIN_ALERT_EMAIL: ADMINS })
  worker = await startTestWorker(world, { SECRETS_KEY, SMTP_URL: smtp.url, TEMPLATE_SYNC_INTERVAL_MS: '0' })
  const created = await app.inject({
    method: 'POST',
    url: '/api/admin/senders',
    headers: asAdmin(),
    payload: {
      phoneNumberId: '230000000000001',
      displayName: 'Health line',
      displayPhoneNumber: DISPLAY,
      accessToken: `EAAG${randomBytes(16).toString('hex')}`,
      wabaId: WABA,
    },
  })
  expect(created.statusCode, created.body).toBe(201)
  sender = created.json<SenderView>()
  expect(sender.health).toEqual({
    accountStatus: null,
    accountStatusReason: null,
    messagingLimitTier: null,
    qualityRating: null,
    updatedAt: null,
  })
  key = await keyOf(app, sender.id, [...SEND_SCOPES, 'manage:webhooks'])
  await addWebhookEndpoint(app, key.key, { url: receiver.url, events: ['sender.updated'] })
})

afterAll(async () => {
  await worker?.close()
  await app?.close()
  await receiver?.close()
  await smtp?.close()
  await world?.close()
})

const health = async () =>
  (
    await app.inject({ method: 'GET', url: `/api/admin/senders/${sender.id}`, headers: asAdmin() })
  ).json<SenderView>().health

it('a ban is stored on the sender, forwarded as sender.updated, and e-mailed to the admins', async () => {
  const res = await postPlatformWebhook(
    app,
    accountWebhook(WABA, 'account_update', {
      event: 'DISABLED_UPDATE',
      ban_info: { waba_ban_state: 'DISABLE', waba_ban_date: '2026-11-24' },
      violation_info: { violation_type: 'SCAM' },
    }),
    APP_SECRET,
  )
  expect(res.statusCode).toBe(200)
  expect(await health()).toMatchObject({
    accountStatus: 'BANNED',
    accountStatusReason: 'DISABLED_UPDATE: SCAM',
  })
  const event = await waitFor(() => receiver.received.find((r) => r.json.type === 'sender.updated'), {
    what: 'the sender.updated event',
    timeoutMs: 15_000,
  })
  expect(event.json.data).toMatchObject({
    senderId: sender.id,
    source: 'account_update',
    health: { accountStatus: 'BANNED', accountStatusReason: 'DISABLED_UPDATE: SCAM' },
  })
  const mail = await waitFor(() => smtp.messagesTo(ADMINS).find((m) => /BANNED/.test(m.subject ?? '')), {
    what: 'the admins’ e-mail',
    timeoutMs: 15_000,
  })
  expect(mail.text).toContain('DISABLED_UPDATE: SCAM')
  // Meta repeats itself: the same report changes nothing and sends nothing again.
  await postPlatformWebhook(
    app,
    accountWebhook(WABA, 'account_update', {
      event: 'DISABLED_UPDATE',
      ban_info: { waba_ban_state: 'DISABLE' },
      violation_info: { violation_type: 'SCAM' },
    }),
    APP_SECRET,
  )
  await new Promise((resolve) => setTimeout(resolve, 500))
  expect(smtp.messagesTo(ADMINS).filter((m) => /BANNED/.test(m.subject ?? ''))).toHaveLength(1)
})

it('stores the messaging limit and the number’s quality, without alerting', async () => {
  const before = smtp.messagesTo(ADMINS).length
  const capability = await postPlatformWebhook(
    app,
    accountWebhook(WABA, 'business_capability_update', { max_daily_conversations_per_business: 'TIER_10K' }),
    APP_SECRET,
  )
  expect(capability.statusCode).toBe(200)
  expect(await health()).toMatchObject({ messagingLimitTier: 'TIER_10K' })

  const quality = await postPlatformWebhook(
    app,
    accountWebhook(WABA, 'phone_number_quality_update', {
      display_phone_number: DISPLAY,
      event: 'FLAGGED',
      current_limit: 'TIER_2K',
    }),
    APP_SECRET,
  )
  expect(quality.statusCode).toBe(200)
  expect(await health()).toMatchObject({
    qualityRating: 'FLAGGED',
    messagingLimitTier: 'TIER_2K',
    accountStatus: 'BANNED',
  })
  await waitFor(
    () => receiver.received.filter((r) => r.json.type === 'sender.updated').length >= 3 || undefined,
    { what: 'an event per change', timeoutMs: 15_000 },
  )
  expect(smtp.messagesTo(ADMINS).length).toBe(before)
})

it('acknowledges account events it does not show, and unknown accounts, changing nothing', async () => {
  const before = await health()
  for (const body of [
    accountWebhook(WABA, 'account_update', { event: 'PARTNER_ADDED' }),
    accountWebhook('329999999999999', 'account_update', {
      event: 'ACCOUNT_RESTRICTION',
      restriction_info: [],
    }),
    accountWebhook(WABA, 'business_capability_update', { something: 'else' }),
  ]) {
    expect((await postPlatformWebhook(app, body, APP_SECRET)).statusCode).toBe(200)
  }
  expect(await health()).toEqual(before)
})
