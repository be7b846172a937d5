import { randomBytes } from 'node:crypto'
import { type FakeWhatsApp, inboundMessage, messageWebhook, startFakeWhatsApp } from '@dispatch/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  asAdmin,
  buildTestApp,
  createWorld,
  expectError,
  postPlatformWebhook,
  type TestApp,
  type TestWorld,
} from '../helpers.ts'
import { keyOf, newPhone, syncedSender } from '../templates/setup.ts'

const APP_SECRET = 'app-secret-0123456789'
const secretsKey = randomBytes(32).toString('base64')

let world: TestWorld
let app: TestApp
let fake: FakeWhatsApp
let sender: { id: string; phoneNumberId: string }
let key: { id: string; key: string }

const patchSender = (id: string, payload: object, headers: Record<string, string> = asAdmin()) =>
  app.inject({ method: 'PATCH', url: `/api/admin/senders/${id}`, headers, payload })

const sendText = (phone: string) =>
  app.inject({
    method: 'POST',
    url: '/api/third-party/messages/send-text',
    headers: { 'x-api-key': key.key },
    payload: { phone, text: 'Our weekly offers' },
  })

/** The customer writes `text` to a business number: the webhook as Meta delivers it (answers it, and the item). */
async function customerSays(phoneNumberId: string, phone: string, text: string) {
  const item = inboundMessage('text', { phone }, { text })
  const body = messageWebhook(phoneNumberId, item)
  const res = await postPlatformWebhook(app, body, APP_SECRET)
  expect(res.statusCode, res.body).toBe(200)
  return body
}

beforeAll(async () => {
  world = await createWorld()
  fake = await startFakeWhatsApp()
  const env = { SECRETS_KEY: secretsKey, WHATSAPP_API_URL: fake.url }
  app = await buildTestApp(world, { ...env, WHATSAPP_APP_SECRET: APP_SECRET })
  sender = await syncedSender(app, fake, { sync: false })
  key = await keyOf(app, sender.id, ['send:free-text'])
})

afterAll(async () => {
  await app?.close()
  await fake?.close()
  await world?.close()
})

describe("a sender's own keywords", () => {
  it('replace the defaults: its "NO MORE" opts out, a default STOP not in its list does not', async () => {
    const set = await patchSender(sender.id, {
      consentKeywords: { optOut: ['No more', ' Párar! ', 'NO MORE'], optIn: ['Back'] },
    })
    expect(set.statusCode, set.body).toBe(200)
    // Stored as replies are matched: folded, each once.
    expect(set.json().consentKeywords).toEqual({ optOut: ['no more', 'parar'], optIn: ['back'] })

    const [leaving, staying] = [newPhone(), newPhone()]
    await customerSays(sender.phoneNumberId, leaving, 'no more!')
    await customerSays(sender.phoneNumberId, staying, 'STOP')
    expectError(await sendText(leaving), 422, 'RECIPIENT_OPTED_OUT', /opted out of messages/)
    expect((await sendText(staying)).statusCode).toBe(202)
    // Its own opt-in word lifts it; the default START would not have.
    await customerSays(sender.phoneNumberId, leaving, 'START')
    expectError(await sendText(leaving), 422, 'RECIPIENT_OPTED_OUT')
    await customerSays(sender.phoneNumberId, leaving, 'Back')
    expect((await sendText(leaving)).statusCode).toBe(202)

    // Another number keeps the defaults: STOP to the environment's number still opts out there.
    const other = newPhone()
    await customerSays('106540352242922', other, 'STOP')
    const [entry] = await world.sql<{ phone_number_id: string }[]>`
      select phone_number_id from suppressions where recipient = ${other}`
    expect(entry?.phone_number_id).toBe('106540352242922')

    // null: the defaults again.
    expect((await patchSender(sender.id, { consentKeywords: null })).json().consentKeywords).toBeNull()
    await customerSays(sender.phoneNumberId, staying, 'STOP')
    expectError(await sendText(staying), 422, 'RECIPIENT_OPTED_OUT')
  })

  it.each([
    [{ optOut: ['!!!'], optIn: [] }, /body\.consentKeywords\.optOut\[0\] has no letters or digits/],
    [
      { optOut: ['stop', 'halt'], optIn: ['go', 'HALT.'] },
      /body\.consentKeywords\.optIn\[1\] "halt" is an opt-out keyword too/,
    ],
    [{ optOut: [], optIn: ['start'] }, /body\.consentKeywords\.optOut/],
    [{ optOut: ['a'.repeat(41)], optIn: [] }, /body\.consentKeywords\.optOut\[0\] must be at most 40/],
    [
      { optOut: Array.from({ length: 51 }, (_, i) => `stop${i}`), optIn: [] },
      /body\.consentKeywords\.optOut/,
    ],
    [{ optOut: ['stop'] }, /body\.consentKeywords.*optIn/],
    [{ optOut: ['stop'], optIn: [], extra: ['x'] }, /extra/],
    [{ optOut: ['   '], optIn: [] }, /body\.consentKeywords\.optOut\/0|body\.consentKeywords\.optOut\[0\]/],
  ])('an admin giving %j is answered 400 naming the field, and nothing changes', async (lists, message) => {
    const before = await app.inject({
      method: 'GET',
      url: `/api/admin/senders/${sender.id}`,
      headers: asAdmin(),
    })
    expectError(await patchSender(sender.id, { consentKeywords: lists }), 400, 'VALIDATION_ERROR', message)
    const after = await app.inject({
      method: 'GET',
      url: `/api/admin/senders/${sender.id}`,
      headers: asAdmin(),
    })
    expect(after.json().consentKeywords).toEqual(before.json().consentKeywords)
  })

  it('confirmation texts are validated too, and only admins set either', async () => {
    expectError(
      await patchSender(sender.id, { consentConfirmation: { optOut: '' } }),
      400,
      'VALIDATION_ERROR',
      /body\.consentConfirmation\.optOut/,
    )
    expectError(
      await patchSender(sender.id, { consentConfirmation: { optOut: 'x'.repeat(1025) } }),
      400,
      'VALIDATION_ERROR',
      /body\.consentConfirmation\.optOut/,
    )
    // A key, even with every consent scope, is not an admin.
    const keyHolder = await keyOf(app, sender.id, ['manage:suppressions'])
    expectError(
      await patchSender(
        sender.id,
        { consentKeywords: { optOut: ['x'], optIn: [] } },
        { 'x-api-key': keyHolder.key },
      ),
      401,
      'ADMIN_AUTH_REQUIRED',
    )
    // On a new sender, as on a change.
    const created = await app.inject({
      method: 'POST',
      url: '/api/admin/senders',
      headers: asAdmin(),
      payload: {
        phoneNumberId: `8${randomBytes(5).readUIntBE(0, 5)}`,
        displayName: 'Keywords at birth',
        accessToken: 'EAAG-keywords-token',
        consentKeywords: { optOut: ['Halt'], optIn: ['halt'] },
      },
    })
    expectError(created, 400, 'VALIDATION_ERROR', /body\.consentKeywords\.optIn\[0\]/)
  })
})
