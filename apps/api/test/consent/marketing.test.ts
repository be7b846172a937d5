import { randomBytes } from 'node:crypto'
import { type FakeWhatsApp, inboundMessage, messageWebhook, startFakeWhatsApp } from '@dispatch/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  buildTestApp,
  createWorld,
  expectError,
  postPlatformWebhook,
  type TestApp,
  type TestWorld,
} from '../helpers.ts'
import { keyOf, newPhone, syncedSender } from '../templates/setup.ts'

const APP_SECRET = 'app-secret-0123456789'

let world: TestWorld
let app: TestApp
let fake: FakeWhatsApp
let sender: { id: string; phoneNumberId: string }
let key: { id: string; key: string }

const marketing = (phone: string) => ({
  phone,
  templateId: 'we_miss_you',
  language: 'en_US',
  variables: { '1': '20%' },
  headerVariables: [{ type: 'text', value: 'Ana', originalMediaId: '-' }],
})
const utility = (phone: string) => ({
  phone,
  templateId: 'appointment_reminder',
  language: 'en_US',
  variables: { first_name: 'Ana', date: 'Tuesday' },
})
const sendTemplate = (payload: object) =>
  app.inject({
    method: 'POST',
    url: '/api/third-party/messages/send-template',
    headers: { 'x-api-key': key.key },
    payload,
  })

beforeAll(async () => {
  world = await createWorld()
  fake = await startFakeWhatsApp()
  app = await buildTestApp(world, {
    SECRETS_KEY: randomBytes(32).toString('base64'),
    WHATSAPP_API_URL: fake.url,
    WHATSAPP_APP_SECRET: APP_SECRET,
  })
  sender = await syncedSender(app, fake)
  key = await keyOf(app, sender.id, ['send:template', 'send:free-text'])
})

afterAll(async () => {
  await app?.close()
  await fake?.close()
  await world?.close()
})

describe('an opt-out of marketing', () => {
  it('the "Stop promotions" button blocks marketing templates and lets a utility template through', async () => {
    const phone = newPhone()
    expect((await sendTemplate(marketing(phone))).statusCode).toBe(202)
    const tap = inboundMessage('quick_reply', { phone }, { text: 'Stop promotions', id: 'Stop promotions' })
    expect(
      (await postPlatformWebhook(app, messageWebhook(sender.phoneNumberId, tap), APP_SECRET)).statusCode,
    ).toBe(200)
    expectError(
      await sendTemplate(marketing(phone)),
      422,
      'RECIPIENT_OPTED_OUT',
      /opted out of marketing messages/,
    )
    expect((await sendTemplate(utility(phone))).statusCode).toBe(202)
    // Free text is not marketing either.
    const text = await app.inject({
      method: 'POST',
      url: '/api/third-party/messages/send-text',
      headers: { 'x-api-key': key.key },
      payload: { phone, text: 'Your order shipped' },
    })
    expect(text.statusCode).toBe(202)
    // The entry is this sender's: another number's customers are not touched.
    const [entry] = await world.sql<{ scope: string; sender_id: string; phone_number_id: string }[]>`
      select scope, sender_id, phone_number_id from suppressions where recipient = ${phone}`
    expect(entry).toEqual({ scope: 'marketing', sender_id: sender.id, phone_number_id: sender.phoneNumberId })
  })

  it('a STOP after it widens the entry to everything', async () => {
    const phone = newPhone()
    const say = (message: object) =>
      postPlatformWebhook(app, messageWebhook(sender.phoneNumberId, message), APP_SECRET)
    await say(inboundMessage('quick_reply', { phone }, { text: 'Stop promotions' }))
    expect((await sendTemplate(utility(phone))).statusCode).toBe(202)
    await say(inboundMessage('text', { phone }, { text: 'STOP' }))
    expectError(await sendTemplate(utility(phone)), 422, 'RECIPIENT_OPTED_OUT', /opted out of messages/)
  })
})
