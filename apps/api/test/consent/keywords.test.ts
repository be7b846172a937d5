import { randomBytes } from 'node:crypto'
import {
  type CloudApiRequest,
  type FakeWhatsApp,
  graphError,
  inboundMessage,
  messageWebhook,
  startFakeWhatsApp,
  waitFor,
} from '@dispatch/testing'
import type { RunningWorker } from '@dispatch/worker'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  asAdmin,
  buildTestApp,
  createWorld,
  expectError,
  postPlatformWebhook,
  startTestWorker,
  type TestApp,
  type TestWorld,
} from '../helpers.ts'
import { keyOf, newPhone, syncedSender } from '../templates/setup.ts'

const APP_SECRET = 'app-secret-0123456789'
const secretsKey = randomBytes(32).toString('base64')
const GOODBYE = 'You will get no more messages from Acme. Reply BACK to resume.'
const WELCOME = 'Welcome back to Acme: reply NO MORE to stop.'

let world: TestWorld
let app: TestApp
let fake: FakeWhatsApp
let worker: RunningWorker
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

/** Texts the fake received for `phone` from the number `phoneNumberId`, accepted or not. */
const textsTo = (phoneNumberId: string, phone: string): CloudApiRequest[] =>
  fake.requests.filter(
    (r) =>
      r.path.endsWith(`/${phoneNumberId}/messages`) && r.body.to === phone.slice(1) && r.body.type === 'text',
  )
const textOf = (request: CloudApiRequest) => (request.body.text as { body: string }).body

beforeAll(async () => {
  world = await createWorld()
  fake = await startFakeWhatsApp()
  const env = { SECRETS_KEY: secretsKey, WHATSAPP_API_URL: fake.url }
  app = await buildTestApp(world, { ...env, WHATSAPP_APP_SECRET: APP_SECRET })
  sender = await syncedSender(app, fake, { sync: false })
  key = await keyOf(app, sender.id, ['send:free-text'])
  worker = await startTestWorker(world, {
    ...env,
    WHATSAPP_ACCESS_TOKEN: 'default-token',
    WHATSAPP_PHONE_NUMBER_ID: '106540352242922',
    ADMISSION_INTERVAL_MS: '20',
    TEMPLATE_SYNC_INTERVAL_MS: '0',
    MESSAGES_BACKOFF_MS: '20',
  })
})

afterAll(async () => {
  await worker?.close()
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

describe('confirmations', () => {
  it('STOP is confirmed at once though the user is now on the list, START too; a redelivery confirms nothing twice', async () => {
    const set = await patchSender(sender.id, { consentConfirmation: { optOut: GOODBYE, optIn: WELCOME } })
    expect(set.statusCode, set.body).toBe(200)
    expect(set.json().consentConfirmation).toEqual({ optOut: GOODBYE, optIn: WELCOME })
    const phone = newPhone()
    const stop = await customerSays(sender.phoneNumberId, phone, 'STOP')
    const goodbye = await waitFor(() => textsTo(sender.phoneNumberId, phone)[0], {
      what: 'the opt-out confirmation',
    })
    expect(textOf(goodbye)).toBe(GOODBYE)
    expect(goodbye.platformMessageId).toBeDefined()
    // The user is opted out of everything: anything else to them is refused.
    expectError(await sendText(phone), 422, 'RECIPIENT_OPTED_OUT')

    // Meta delivers the same webhook again, and the user writes STOP again: the list does not change.
    expect((await postPlatformWebhook(app, stop, APP_SECRET)).statusCode).toBe(200)
    await customerSays(sender.phoneNumberId, phone, 'stop')

    await customerSays(sender.phoneNumberId, phone, 'Start')
    const welcome = await waitFor(() => textsTo(sender.phoneNumberId, phone)[1], {
      what: 'the opt-in confirmation',
    })
    expect(textOf(welcome)).toBe(WELCOME)
    // Time for any stray confirmation to arrive: none did.
    await new Promise((resolve) => setTimeout(resolve, 500))
    expect(textsTo(sender.phoneNumberId, phone).map(textOf)).toEqual([GOODBYE, WELCOME])
  })

  it('a "Stop promotions" tap is not confirmed by Dispatch (WhatsApp confirms it), and a sender without texts sends none', async () => {
    const phone = newPhone()
    const tap = inboundMessage('quick_reply', { phone }, { text: 'Stop promotions' })
    expect(
      (await postPlatformWebhook(app, messageWebhook(sender.phoneNumberId, tap), APP_SECRET)).statusCode,
    ).toBe(200)
    const quiet = await syncedSender(app, fake, { sync: false })
    const other = newPhone()
    await customerSays(quiet.phoneNumberId, other, 'STOP')
    await waitFor(
      async () =>
        (await world.sql`select 1 from suppressions where recipient in (${phone}, ${other})`).length === 2 ||
        undefined,
    )
    await new Promise((resolve) => setTimeout(resolve, 500))
    expect(textsTo(sender.phoneNumberId, phone)).toEqual([])
    expect(textsTo(quiet.phoneNumberId, other)).toEqual([])
  })

  it('is retried when the platform fails for a moment, and not retried when it refuses', async () => {
    // One 500 first: the next attempt (after MESSAGES_BACKOFF_MS) goes through.
    const phone = newPhone()
    fake.script(graphError(131000, 'Something went wrong', 500))
    await customerSays(sender.phoneNumberId, phone, 'STOP')
    await waitFor(() => textsTo(sender.phoneNumberId, phone).find((r) => r.platformMessageId), {
      what: 'the confirmation, on its second attempt',
    })
    expect(textsTo(sender.phoneNumberId, phone)).toHaveLength(2)

    // A refusal the platform would repeat: one request, no loop.
    const refused = await syncedSender(app, fake, { sync: false })
    const set = await patchSender(refused.id, { consentConfirmation: { optOut: GOODBYE } })
    expect(set.statusCode, set.body).toBe(200)
    fake.number(refused.phoneNumberId, { answer: graphError(131026, 'Message undeliverable') })
    const other = newPhone()
    await customerSays(refused.phoneNumberId, other, 'STOP')
    await waitFor(() => textsTo(refused.phoneNumberId, other)[0], { what: 'the refused confirmation' })
    // Ten attempts 20 ms apart, doubling, would have been made well within this.
    await new Promise((resolve) => setTimeout(resolve, 1500))
    expect(textsTo(refused.phoneNumberId, other)).toHaveLength(1)
    // The opt-out itself stands.
    expect((await world.sql`select scope from suppressions where recipient = ${other}`)[0]?.scope).toBe('all')
  })
})
