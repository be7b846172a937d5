import { randomBytes } from 'node:crypto'
import {
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
  activeKey,
  asAdmin,
  bindKeyToPool,
  buildTestApp,
  createWorld,
  expectError,
  postPlatformWebhook,
  retryWhenReleased,
  startTestWorker,
  storedMessages,
  type TestApp,
  type TestWorld,
  untilMessageStatus,
} from '../helpers.ts'
import { keyOf, newPhone, syncedSender } from '../templates/setup.ts'

const APP_SECRET = 'app-secret-0123456789'
const secretsKey = randomBytes(32).toString('base64')

let world: TestWorld
let app: TestApp
let fake: FakeWhatsApp
let sender: { id: string; phoneNumberId: string }
let key: { id: string; key: string }
let worker: RunningWorker

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

/** An admin setting a sender's frequency cap on marketing (`null`: removing it). */
const setMarketingCap = (senderId: string, marketingCap: { count: number; hours: number } | null) =>
  app.inject({
    method: 'PATCH',
    url: `/api/admin/senders/${senderId}`,
    headers: asAdmin(),
    payload: { marketingCap },
  })

beforeAll(async () => {
  world = await createWorld()
  fake = await startFakeWhatsApp()
  const env = { SECRETS_KEY: secretsKey, WHATSAPP_API_URL: fake.url }
  app = await buildTestApp(world, {
    ...env,
    WHATSAPP_APP_SECRET: APP_SECRET,
    SCHEDULE_MIN_AHEAD_SECONDS: '1',
  })
  sender = await syncedSender(app, fake)
  key = await keyOf(app, sender.id, ['send:template', 'send:free-text', 'read:messages'])
  // The Cloud API adapter (the fake) needs the environment's own credentials set, or the sandbox is used.
  worker = await startTestWorker(world, {
    ...env,
    WHATSAPP_ACCESS_TOKEN: 'default-token',
    WHATSAPP_PHONE_NUMBER_ID: '106540352242922',
    ADMISSION_INTERVAL_MS: '20',
    TEMPLATE_SYNC_INTERVAL_MS: '0',
  })
})

afterAll(async () => {
  await worker?.close()
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

/** Meta's `user_preferences` webhook: the user stopped or resumed the number's marketing messages. */
const userPreferences = (phoneNumberId: string, phone: string, value: 'stop' | 'resume') => ({
  object: 'whatsapp_business_account',
  entry: [
    {
      id: 'WABA_ID',
      changes: [
        {
          field: 'user_preferences',
          value: {
            messaging_product: 'whatsapp',
            metadata: { display_phone_number: '15550001111', phone_number_id: phoneNumberId },
            contacts: [{ profile: { name: 'A User' }, wa_id: phone.slice(1) }],
            user_preferences: [
              {
                wa_id: phone.slice(1),
                detail:
                  value === 'stop'
                    ? 'User requested to stop marketing messages'
                    : 'User resumed marketing messages',
                category: 'marketing_messages',
                value,
                timestamp: Math.floor(Date.now() / 1000),
              },
            ],
          },
        },
      ],
    },
  ],
})

describe('what the platform says', () => {
  it('user_preferences stop blocks marketing; resume lifts it', async () => {
    const phone = newPhone()
    const say = (value: 'stop' | 'resume') =>
      postPlatformWebhook(app, userPreferences(sender.phoneNumberId, phone, value), APP_SECRET)
    expect((await say('stop')).statusCode).toBe(200)
    expectError(await sendTemplate(marketing(phone)), 422, 'RECIPIENT_OPTED_OUT')
    expect((await sendTemplate(utility(phone))).statusCode).toBe(202)
    const [entry] = await world.sql<
      { source: string }[]
    >`select source from suppressions where recipient = ${phone}`
    expect(entry?.source).toBe('user_preferences')
    expect((await say('resume')).statusCode).toBe(200)
    expect((await sendTemplate(marketing(phone))).statusCode).toBe(202)
  })

  it('a 131050 failure records the opt-out: the next marketing template is refused at the door', async () => {
    const phone = newPhone()
    // Every send from the number is answered 131050 until cleared (messages of the tests above may still go).
    const stopped = graphError(131050, 'Unable to deliver message: the user stopped marketing messages')
    fake.number(sender.phoneNumberId, { answer: stopped })
    try {
      const first = await sendTemplate(marketing(phone))
      expect(first.statusCode, first.body).toBe(202)
      const failed = await untilMessageStatus(app, key.key, first.json().messageId, 'failed')
      expect(failed.lastError?.code).toBe('131050')
    } finally {
      fake.number(sender.phoneNumberId, { answer: undefined })
    }
    await waitFor(
      async () => {
        const res = await sendTemplate(marketing(phone))
        return res.statusCode === 422 ? res : undefined
      },
      { what: 'the next marketing send refused' },
    )
    const [entry] = await world.sql<
      { source: string; scope: string }[]
    >`select source, scope from suppressions where recipient = ${phone}`
    expect(entry).toEqual({ source: '131050', scope: 'marketing' })
  })
})

describe('a frequency cap on marketing', () => {
  it('refuses the (N+1)th marketing message to one recipient across two API instances; utility goes on', async () => {
    const capped = await setMarketingCap(sender.id, { count: 2, hours: 24 })
    expect(capped.statusCode, capped.body).toBe(200)
    expect(capped.json().marketingCap).toEqual({ count: 2, hours: 24 })
    const second = await buildTestApp(world, { SECRETS_KEY: secretsKey, WHATSAPP_API_URL: fake.url })
    try {
      const phone = newPhone()
      const other = newPhone()
      const on = (instance: TestApp, payload: object) =>
        instance.inject({
          method: 'POST',
          url: '/api/third-party/messages/send-template',
          headers: { 'x-api-key': key.key },
          payload,
        })
      // Each instance reloads the sender when the change is announced.
      await waitFor(async () => {
        const probe = newPhone()
        await on(second, marketing(probe))
        await on(second, marketing(probe))
        return (await on(second, marketing(probe))).statusCode === 422 || undefined
      })
      expect((await on(app, marketing(phone))).statusCode).toBe(202)
      expect((await on(second, marketing(phone))).statusCode).toBe(202)
      expectError(
        await on(app, marketing(phone)),
        422,
        'FREQUENCY_CAP_EXCEEDED',
        /already got 2 marketing messages .* 24 h/,
      )
      expectError(await on(second, marketing(phone)), 422, 'FREQUENCY_CAP_EXCEEDED')
      expect((await on(second, utility(phone))).statusCode).toBe(202)
      expect((await on(app, marketing(other))).statusCode).toBe(202)
      // In a batch, per item.
      const batch = await app.inject({
        method: 'POST',
        url: '/api/third-party/messages/batch',
        headers: { 'x-api-key': key.key },
        payload: {
          messages: [
            { type: 'template', ...marketing(newPhone()) },
            { type: 'template', ...marketing(other) },
            { type: 'template', ...utility(other) },
            { type: 'template', ...marketing(other) },
            { type: 'template', ...marketing(phone) },
          ],
        },
      })
      expect(
        batch
          .json()
          .results.map(
            (r: { status?: string; error?: { errorCode: string } }) => r.status ?? r.error?.errorCode,
          ),
      ).toEqual(['queued', 'queued', 'queued', 'FREQUENCY_CAP_EXCEEDED', 'FREQUENCY_CAP_EXCEEDED'])
      // Requests arriving together are counted together (one script call a turn): still two, no more.
      const burst = newPhone()
      const answers = await Promise.all([1, 2, 3, 4, 5].map(() => on(app, marketing(burst))))
      expect(answers.map((r) => r.statusCode).sort()).toEqual([202, 202, 422, 422, 422])
    } finally {
      await second.close()
      await setMarketingCap(sender.id, null)
    }
  })
})

describe("a tenant's own marketing entry under a cap", () => {
  it("refuses its keys' marketing templates uncounted, and counts another tenant's", async () => {
    const tenantKey = async (tenantId: string) => {
      const made = await activeKey(app, {
        scopes: ['send:template', 'manage:suppressions'],
        tenantId,
      })
      const bound = await app.inject({
        method: 'PATCH',
        url: `/api/admin/api-keys/${made.id}`,
        headers: asAdmin(),
        payload: { senderId: sender.id },
      })
      expect(bound.statusCode, bound.body).toBe(200)
      return made
    }
    const [ours, theirs] = [await tenantKey('acme'), await tenantKey('globex')]
    const as = (k: { key: string }, payload: object, path = 'send-template') =>
      app.inject({
        method: 'POST',
        url: `/api/third-party/messages/${path}`,
        headers: { 'x-api-key': k.key },
        payload,
      })
    const capped = await setMarketingCap(sender.id, { count: 1, hours: 24 })
    expect(capped.statusCode, capped.body).toBe(200)
    try {
      await waitFor(async () => {
        const probe = newPhone()
        await as(theirs, marketing(probe))
        return (await as(theirs, marketing(probe))).statusCode === 422 || undefined
      })
      const phone = newPhone()
      const entry = await app.inject({
        method: 'POST',
        url: '/api/third-party/suppressions',
        headers: { 'x-api-key': ours.key },
        payload: { phone, scope: 'marketing', reason: 'Asked acme' },
      })
      expect(entry.statusCode, entry.body).toBe(201)
      expectError(await as(ours, marketing(phone)), 422, 'RECIPIENT_OPTED_OUT', /opted out of marketing/)
      const batch = await as(
        ours,
        {
          messages: [
            { type: 'template', ...marketing(phone) },
            { type: 'template', ...utility(phone) },
          ],
        },
        'batch',
      )
      expect(batch.statusCode, batch.body).toBe(202)
      expect(batch.json().results[0].error).toMatchObject({ errorCode: 'RECIPIENT_OPTED_OUT' })
      expect(batch.json().results[1]).toMatchObject({ status: 'queued' })
      expect((await as(ours, utility(phone))).statusCode).toBe(202)
      // Not counted for acme's refusals: globex's first marketing message goes, its second is capped.
      expect((await as(theirs, marketing(phone))).statusCode).toBe(202)
      expectError(await as(theirs, marketing(phone)), 422, 'FREQUENCY_CAP_EXCEEDED')
    } finally {
      await setMarketingCap(sender.id, null)
    }
  })
})

describe("a pooled key's marketing template under a cap", () => {
  it('refused by an opt-out on another number of its pool, is not counted against the cap', async () => {
    // Two numbers of one business, each with the catalog, both capped at one marketing message.
    const [a, b] = [
      await syncedSender(app, fake, { body: { businessId: '7100' } }),
      await syncedSender(app, fake, { body: { businessId: '7100' } }),
    ]
    const made = await app.inject({
      method: 'POST',
      url: '/api/admin/sender-pools',
      headers: asAdmin(),
      payload: { name: 'Capped pool', members: [{ senderId: a.id }, { senderId: b.id }] },
    })
    expect(made.statusCode, made.body).toBe(201)
    const poolId = made.json<{ id: string }>().id
    const pooled = await activeKey(app, { scopes: ['send:template'], tenantId: 'capped-co' })
    await bindKeyToPool(app, pooled.id, poolId)
    for (const s of [a, b]) {
      const capped = await setMarketingCap(s.id, { count: 1, hours: 24 })
      expect(capped.statusCode, capped.body).toBe(200)
    }
    // Through a (the send names it): once the pool and the cap are in force, a second is capped.
    const throughA = (phone: string, path = 'send-template') =>
      app.inject({
        method: 'POST',
        url: `/api/third-party/messages/${path}`,
        headers: { 'x-api-key': pooled.key },
        payload: { ...marketing(phone), senderId: a.id },
      })
    await waitFor(async () => {
      const probe = newPhone()
      await throughA(probe)
      return (await throughA(probe)).statusCode === 422 || undefined
    })
    const phone = newPhone()
    const entry = await app.inject({
      method: 'POST',
      url: '/api/admin/suppressions',
      headers: asAdmin(),
      payload: { senderId: b.id, phone, scope: 'marketing', reason: 'Asked at the shop' },
    })
    expect(entry.statusCode, entry.body).toBe(201)
    for (let n = 0; n < 2; n++) {
      expectError(
        await throughA(phone),
        422,
        'RECIPIENT_OPTED_OUT',
        /another number of this key's sender pool/,
      )
    }
    const batch = await app.inject({
      method: 'POST',
      url: '/api/third-party/messages/batch',
      headers: { 'x-api-key': pooled.key },
      payload: {
        messages: [
          { type: 'template', ...marketing(phone), senderId: a.id },
          { type: 'template', ...utility(phone), senderId: a.id },
        ],
      },
    })
    expect(batch.statusCode, batch.body).toBe(202)
    expect(batch.json().results[0].error, batch.body).toMatchObject({ errorCode: 'RECIPIENT_OPTED_OUT' })
    expect(batch.json().results[1], batch.body).toMatchObject({ status: 'queued' })
    // The entry lifted: the refusals were not counted, so the first marketing message goes, and the
    // cap still holds the second.
    const lifted = await app.inject({
      method: 'DELETE',
      url: `/api/admin/suppressions/${entry.json<{ id: string }>().id}`,
      headers: asAdmin(),
      payload: { reason: 'Asked again' },
    })
    expect(lifted.statusCode, lifted.body).toBe(200)
    expect((await throughA(phone)).statusCode).toBe(202)
    expectError(await throughA(phone), 422, 'FREQUENCY_CAP_EXCEEDED')
  })
})

/** A marketing-only entry for `phone` on `senderId`, as an admin adds it. */
async function optedOutOfMarketing(senderId: string, phone: string) {
  const added = await app.inject({
    method: 'POST',
    url: '/api/admin/suppressions',
    headers: asAdmin(),
    payload: { senderId, phone, scope: 'marketing', reason: 'Asked at the shop' },
  })
  expect(added.statusCode, added.body).toBe(201)
}

/** A template its sender's catalog has never seen (the sender never synced): only the send says what it is. */
const springSale = (phone: string, category?: string) => ({
  phone,
  templateId: 'spring_sale',
  language: 'en_US',
  ...(category === undefined ? {} : { category }),
})

describe("a send's own category", () => {
  let fresh: { id: string; phoneNumberId: string }
  let freshKey: { id: string; key: string }
  const sendFresh = (payload: object, url = '/api/third-party/messages/send-template') =>
    app.inject({ method: 'POST', url, headers: { 'x-api-key': freshKey.key }, payload })

  beforeAll(async () => {
    fresh = await syncedSender(app, fake, { sync: false })
    freshKey = await keyOf(app, fresh.id, ['send:template', 'read:messages'])
  })

  it('decides for a template the catalog lacks: MARKETING is refused to a marketing opt-out, UTILITY goes', async () => {
    const phone = newPhone()
    await optedOutOfMarketing(fresh.id, phone)
    expectError(
      await sendFresh(springSale(phone, 'MARKETING')),
      422,
      'RECIPIENT_OPTED_OUT',
      /body\.phone: \+55\d+ opted out of marketing messages/,
    )
    const utility = await sendFresh(springSale(phone, 'UTILITY'))
    expect(utility.statusCode, utility.body).toBe(202)
    // Without one, a template the catalog does not know is not taken for marketing (as before).
    expect((await sendFresh(springSale(phone))).statusCode).toBe(202)
    // A delivery option: it never reaches the message the platform gets.
    const stored = storedMessages(world, fresh.id)
    try {
      const job = await stored.getJob(utility.json().messageId)
      expect(job?.data.message.body).not.toHaveProperty('category')
    } finally {
      await stored.close()
    }
    // Per item in a batch.
    const batch = await sendFresh(
      {
        messages: [
          { type: 'template', ...springSale(phone, 'MARKETING') },
          { type: 'template', ...springSale(phone, 'AUTHENTICATION') },
        ],
      },
      '/api/third-party/messages/batch',
    )
    expect(batch.statusCode, batch.body).toBe(202)
    expect(
      batch
        .json()
        .results.map(
          (r: { status?: string; error?: { errorCode: string } }) => r.status ?? r.error?.errorCode,
        ),
    ).toEqual(['RECIPIENT_OPTED_OUT', 'queued'])
    expectError(await sendFresh(springSale(phone, 'PROMOTIONAL')), 400, 'VALIDATION_ERROR', /body\.category/)
  })

  it("loses to the catalog's category when the catalog knows the template", async () => {
    const phone = newPhone()
    await optedOutOfMarketing(sender.id, phone)
    expectError(await sendTemplate({ ...marketing(phone), category: 'UTILITY' }), 422, 'RECIPIENT_OPTED_OUT')
    expect((await sendTemplate({ ...utility(phone), category: 'MARKETING' })).statusCode).toBe(202)
  })
})

describe('an opt-out of marketing after a message was accepted', () => {
  const inTwoSeconds = () => new Date(Date.now() + 2000).toISOString()

  it.each([
    ["Meta's user_preferences stop", 'preferences'],
    ['the "Stop promotions" button', 'button'],
  ])(
    '(%s) cancels the queued marketing template at delivery; the utility one is sent',
    async (_name, how) => {
      const phone = newPhone()
      const promo = await sendTemplate({ ...marketing(phone), sendAt: inTwoSeconds() })
      const reminder = await sendTemplate({ ...utility(phone), sendAt: inTwoSeconds() })
      expect(promo.statusCode, promo.body).toBe(202)
      expect(reminder.statusCode, reminder.body).toBe(202)
      const said =
        how === 'preferences'
          ? userPreferences(sender.phoneNumberId, phone, 'stop')
          : messageWebhook(
              sender.phoneNumberId,
              inboundMessage('quick_reply', { phone }, { text: 'Stop promotions' }),
            )
      expect((await postPlatformWebhook(app, said, APP_SECRET)).statusCode).toBe(200)
      const canceled = await untilMessageStatus(app, key.key, promo.json().messageId, [
        'canceled',
        'sent',
        'failed',
      ])
      expect(canceled.status).toBe('canceled')
      expect(canceled.lastError).toMatchObject({
        code: 'RECIPIENT_OPTED_OUT',
        message: expect.stringMatching(/opted out of marketing messages/),
      })
      expect(fake.sendsOf(promo.json().messageId)).toBe(0)
      const sent = await untilMessageStatus(app, key.key, reminder.json().messageId, [
        'sent',
        'canceled',
        'failed',
      ])
      expect(sent.status).toBe('sent')
    },
  )

  it("cancels a failed marketing template an admin retries after the recipient's opt-out", async () => {
    const phone = newPhone()
    fake.number(sender.phoneNumberId, { answer: graphError(131026, 'Message undeliverable') })
    const promo = await sendTemplate(marketing(phone))
    expect(promo.statusCode, promo.body).toBe(202)
    const id = promo.json().messageId
    try {
      await untilMessageStatus(app, key.key, id, 'failed')
    } finally {
      fake.number(sender.phoneNumberId, { answer: undefined })
    }
    const said = userPreferences(sender.phoneNumberId, phone, 'stop')
    expect((await postPlatformWebhook(app, said, APP_SECRET)).statusCode).toBe(200)
    const retried = await retryWhenReleased(app, id)
    expect(retried.statusCode, retried.body).toBe(200)
    const view = await untilMessageStatus(app, key.key, id, ['canceled', 'sent'])
    expect(view).toMatchObject({ status: 'canceled', lastError: { code: 'RECIPIENT_OPTED_OUT' } })
  })

  it("cancels a tenant's failed message an admin retries after that tenant's own entry", async () => {
    const ours = await activeKey(app, {
      scopes: ['send:template', 'read:messages', 'manage:suppressions'],
      tenantId: 'acme',
    })
    const bound = await app.inject({
      method: 'PATCH',
      url: `/api/admin/api-keys/${ours.id}`,
      headers: asAdmin(),
      payload: { senderId: sender.id },
    })
    expect(bound.statusCode, bound.body).toBe(200)
    const phone = newPhone()
    fake.number(sender.phoneNumberId, { answer: graphError(131026, 'Message undeliverable') })
    const promo = await app.inject({
      method: 'POST',
      url: '/api/third-party/messages/send-template',
      headers: { 'x-api-key': ours.key },
      payload: marketing(phone),
    })
    expect(promo.statusCode, promo.body).toBe(202)
    const id = promo.json().messageId
    try {
      await untilMessageStatus(app, ours.key, id, 'failed')
    } finally {
      fake.number(sender.phoneNumberId, { answer: undefined })
    }
    const entry = await app.inject({
      method: 'POST',
      url: '/api/third-party/suppressions',
      headers: { 'x-api-key': ours.key },
      payload: { phone, reason: 'Asked acme' },
    })
    expect(entry.statusCode, entry.body).toBe(201)
    // The retried job carries the key's tenant, as its accept did: the tenant's entry cancels it.
    const retried = await retryWhenReleased(app, id)
    expect(retried.statusCode, retried.body).toBe(200)
    const view = await untilMessageStatus(app, ours.key, id, ['canceled', 'sent'])
    expect(view).toMatchObject({ status: 'canceled', lastError: { code: 'RECIPIENT_OPTED_OUT' } })
  })

  it("cancels one the send's own category made marketing, too", async () => {
    const fresh = await syncedSender(app, fake, { sync: false })
    const freshKey = await keyOf(app, fresh.id, ['send:template', 'read:messages'])
    const phone = newPhone()
    const promo = await app.inject({
      method: 'POST',
      url: '/api/third-party/messages/send-template',
      headers: { 'x-api-key': freshKey.key },
      payload: { ...springSale(phone, 'MARKETING'), sendAt: inTwoSeconds() },
    })
    expect(promo.statusCode, promo.body).toBe(202)
    await optedOutOfMarketing(fresh.id, phone)
    const view = await untilMessageStatus(app, freshKey.key, promo.json().messageId, [
      'canceled',
      'sent',
      'failed',
    ])
    expect(view).toMatchObject({ status: 'canceled', lastError: { code: 'RECIPIENT_OPTED_OUT' } })
  })
})
