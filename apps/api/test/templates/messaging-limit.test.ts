import { randomBytes } from 'node:crypto'
import type { SenderView } from '@dispatch/contracts'
import { MESSAGING_LIMIT_WINDOW_MS, portfolioReachKey, serviceWindowsLoadedKey } from '@dispatch/runtime'
import { accountWebhook, type FakeWhatsApp, startFakeWhatsApp, waitFor } from '@dispatch/testing'
import type { RunningWorker } from '@dispatch/worker'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  asAdmin,
  buildTestApp,
  createWorld,
  expectError,
  postPlatformWebhook,
  SEND_SCOPES,
  send,
  startTestWorker,
  type TestApp,
  type TestWorld,
  untilMessageStatus,
  validSends,
} from '../helpers.ts'
import { keyOf, newPhone, replyFrom, syncedSender } from './setup.ts'

const SECRETS_KEY = randomBytes(32).toString('base64')
const APP_SECRET = 'app-secret-0123456789'

let world: TestWorld
let app: TestApp
let fake: FakeWhatsApp
let worker: RunningWorker
let redis: Redis

let portfolios = 0
/** A business id no other test of this run uses. */
const newBusiness = () => `9${String(Date.now()).slice(-9)}${portfolios++}`

/** A synced sender of its own portfolio (or `businessId`'s), with a limit and a policy, and a key bound to it. */
async function limitedSender(
  body: {
    messagingLimitOverride?: number
    messagingLimitPolicy?: 'hold' | 'refuse' | 'off'
    businessId?: string
  },
  scopes = SEND_SCOPES,
) {
  const sender = await syncedSender(app, fake, { body: { businessId: newBusiness(), ...body } })
  const key = await keyOf(app, sender.id, scopes)
  return { sender, key }
}

const sendTemplate = (key: string, phone: string) =>
  send(app, 'send-template', key, { ...validSends['send-template'], phone })

/** A template to `phone` scheduled 2 s ahead: accepted now, delivered after. */
const dueIn2s = (key: string, phone: string) =>
  send(app, 'send-template', key, {
    ...validSends['send-template'],
    phone,
    sendAt: new Date(Date.now() + 2000).toISOString(),
  })

async function accepted(key: string, phone: string): Promise<string> {
  const res = await sendTemplate(key, phone)
  expect(res.statusCode, res.body).toBe(202)
  return res.json().messageId as string
}

const senderView = async (id: string) => {
  const res = await app.inject({ method: 'GET', url: `/api/admin/senders/${id}`, headers: asAdmin() })
  expect(res.statusCode, res.body).toBe(200)
  return res.json<SenderView>()
}

const sentTo = (phone: string) => fake.requests.filter((r) => r.body.to === phone.slice(1))

beforeAll(async () => {
  world = await createWorld()
  fake = await startFakeWhatsApp()
  const env = { SECRETS_KEY, WHATSAPP_API_URL: fake.url }
  app = await buildTestApp(world, {
    ...env,
    WHATSAPP_APP_SECRET: APP_SECRET,
    SCHEDULE_MIN_AHEAD_SECONDS: '1',
  })
  redis = new Redis(world.redisUrl)
  worker = await startTestWorker(world, {
    ...env,
    WHATSAPP_ACCESS_TOKEN: 'default-token',
    WHATSAPP_PHONE_NUMBER_ID: '106540352242923',
    ADMISSION_INTERVAL_MS: '20',
    TEMPLATE_SYNC_INTERVAL_MS: '0',
  })
  // The worker rebuilt the copy of the windows and marked it complete: a missing one is closed.
  await waitFor(
    async () => (await redis.exists(serviceWindowsLoadedKey(world.queuePrefix))) === 1 || undefined,
    { what: 'the windows marked complete' },
  )
})

afterAll(async () => {
  redis?.disconnect()
  await worker?.close()
  await app?.close()
  await fake?.close()
  await world?.close()
})

describe('the messaging limit under hold', () => {
  it('sends up to the limit, holds the next one scheduled, and sends it once the 24 hours free room', async () => {
    const { sender, key } = await limitedSender({ messagingLimitOverride: 3, messagingLimitPolicy: 'hold' })
    const portfolio = (await senderView(sender.id)).messagingLimit.portfolio
    // Someone reached almost 24 hours ago (the clock, driven through the data): leaves in 6 s.
    const leavesAt = Date.now() + 6000
    await redis.zadd(
      portfolioReachKey(world.queuePrefix, portfolio),
      leavesAt - MESSAGING_LIMIT_WINDOW_MS,
      'hmac:earlier',
    )
    const [one, two, three] = [newPhone(), newPhone(), newPhone()]
    const [first, second] = [await accepted(key.key, one), await accepted(key.key, two)]
    await untilMessageStatus(app, key.key, first, 'sent')
    await untilMessageStatus(app, key.key, second, 'sent')
    const third = await accepted(key.key, three)
    const held = await untilMessageStatus(app, key.key, third, 'scheduled')
    expect(held).toMatchObject({ scheduledReason: 'messaging_limit' })
    expect(Math.abs(Date.parse(held.sendAt as string) - leavesAt)).toBeLessThan(1000)
    expect(sentTo(three)).toHaveLength(0)
    expect((await senderView(sender.id)).messagingLimit).toMatchObject({
      limit: 3,
      source: 'admin',
      policy: 'hold',
      reach: 3,
    })
    // The key sees its own sender's limit, the reach and when room frees.
    const mine = await app.inject({
      method: 'GET',
      url: '/api/third-party/messaging-limit',
      headers: { 'x-api-key': key.key },
    })
    expect(mine.statusCode, mine.body).toBe(200)
    expect(mine.json()).toMatchObject({ limit: 3, reach: 3, policy: 'hold' })
    expect(Math.abs(Date.parse(mine.json().roomAt) - leavesAt)).toBeLessThan(1000)
    const sent = await untilMessageStatus(app, key.key, third, 'sent', 20_000)
    expect(Date.now()).toBeGreaterThanOrEqual(leavesAt - 50)
    expect(sentTo(three)).toHaveLength(1)
    expect(sent.attempts).toBe(1)
    const after = (await senderView(sender.id)).messagingLimit
    expect(after.reach).toBe(3)
    // The oldest counted now is the first of the three: room frees 24 h after it went.
    expect(Date.parse(after.roomAt as string)).toBeGreaterThan(
      Date.now() + MESSAGING_LIMIT_WINDOW_MS - 60_000,
    )
  }, 40_000)

  it('counts a recipient once, never one inside their window, never a free-form message', async () => {
    const { sender, key } = await limitedSender({ messagingLimitOverride: 1, messagingLimitPolicy: 'hold' })
    const inside = newPhone()
    expect((await replyFrom(app, APP_SECRET, sender.phoneNumberId, inside)).statusCode).toBe(200)
    await untilMessageStatus(app, key.key, await accepted(key.key, inside), 'sent')
    const text = await send(app, 'send-text', key.key, { phone: newPhone(), text: 'Hello' })
    expect(text.statusCode, text.body).toBe(202)
    await untilMessageStatus(app, key.key, text.json().messageId, 'sent')
    expect((await senderView(sender.id)).messagingLimit.reach).toBe(0)
    const outside = newPhone()
    await untilMessageStatus(app, key.key, await accepted(key.key, outside), 'sent')
    // Already counted: reached again, not counted twice, not held.
    await untilMessageStatus(app, key.key, await accepted(key.key, outside), 'sent')
    expect((await senderView(sender.id)).messagingLimit).toMatchObject({ limit: 1, reach: 1 })
    const held = await accepted(key.key, newPhone())
    expect(await untilMessageStatus(app, key.key, held, 'scheduled')).toMatchObject({
      scheduledReason: 'messaging_limit',
    })
  }, 40_000)

  it('counts by the window the accept path read: a recipient who writes between the accept and the send is counted', async () => {
    const { sender, key } = await limitedSender({ messagingLimitOverride: 5, messagingLimitPolicy: 'hold' })
    // The portfolio's first count in a worker goes through the script, which reads windows afresh.
    await untilMessageStatus(app, key.key, await accepted(key.key, newPhone()), 'sent')
    const phone = newPhone()
    const due = await dueIn2s(key.key, phone)
    expect(due.statusCode, due.body).toBe(202)
    expect((await replyFrom(app, APP_SECRET, sender.phoneNumberId, phone)).statusCode).toBe(200)
    await untilMessageStatus(app, key.key, due.json().messageId, 'sent')
    // Counted as the accept path found them, outside their window (it went within a minute of
    // its acceptance, WINDOW_KNOWN_AT_ACCEPT_MS): the reach errs high, never low.
    expect((await senderView(sender.id)).messagingLimit.reach).toBe(2)
    // In their window when accepted: not counted.
    await untilMessageStatus(app, key.key, await accepted(key.key, phone), 'sent')
    expect((await senderView(sender.id)).messagingLimit.reach).toBe(2)
    // A batch's templates carry theirs too.
    const other = newPhone()
    const batch = await app.inject({
      method: 'POST',
      url: '/api/third-party/messages/batch',
      headers: { 'x-api-key': key.key },
      payload: {
        messages: [
          {
            type: 'template',
            ...validSends['send-template'],
            phone: other,
            sendAt: new Date(Date.now() + 2000).toISOString(),
          },
        ],
      },
    })
    expect(batch.statusCode, batch.body).toBe(202)
    expect((await replyFrom(app, APP_SECRET, sender.phoneNumberId, other)).statusCode).toBe(200)
    await untilMessageStatus(app, key.key, batch.json().results[0].messageId, 'sent')
    expect((await senderView(sender.id)).messagingLimit.reach).toBe(3)
  }, 40_000)

  it('takes one place for a recipient reached three times far from the limit, once it nears', async () => {
    const { sender, key } = await limitedSender({ messagingLimitOverride: 3, messagingLimitPolicy: 'hold' })
    const again = newPhone()
    // Far from the limit each send is appended uncounted: three entries for one recipient.
    for (let i = 0; i < 3; i++) await untilMessageStatus(app, key.key, await accepted(key.key, again), 'sent')
    // The next recipient would pass the limit if each entry were a recipient: counted exactly
    // instead, one place taken by the first, the second sent.
    await untilMessageStatus(app, key.key, await accepted(key.key, newPhone()), 'sent')
    expect((await senderView(sender.id)).messagingLimit).toMatchObject({ limit: 3, reach: 2 })
  }, 40_000)

  it('lets exactly the limit through when a batch arrives at once (one bundle, one count)', async () => {
    const { sender, key } = await limitedSender({ messagingLimitOverride: 2, messagingLimitPolicy: 'hold' })
    const res = await app.inject({
      method: 'POST',
      url: '/api/third-party/messages/batch',
      headers: { 'x-api-key': key.key },
      payload: {
        messages: Array.from({ length: 5 }, () => ({
          type: 'template',
          ...validSends['send-template'],
          phone: newPhone(),
        })),
      },
    })
    expect(res.statusCode, res.body).toBe(202)
    const ids: string[] = res.json().results.map((r: { messageId: string }) => r.messageId)
    const ends = await Promise.all(
      ids.map((id) => untilMessageStatus(app, key.key, id, ['sent', 'scheduled'])),
    )
    expect(ends.filter((v) => v.status === 'sent')).toHaveLength(2)
    expect(
      ends.filter((v) => v.status === 'scheduled' && v.scheduledReason === 'messaging_limit'),
    ).toHaveLength(3)
    expect((await senderView(sender.id)).messagingLimit.reach).toBe(2)
  }, 40_000)

  it('is shared by the numbers of one portfolio', async () => {
    const businessId = newBusiness()
    const a = await limitedSender({ messagingLimitOverride: 1, businessId })
    const b = await limitedSender({ messagingLimitOverride: 1, businessId })
    await untilMessageStatus(app, a.key.key, await accepted(a.key.key, newPhone()), 'sent')
    const held = await accepted(b.key.key, newPhone())
    expect(await untilMessageStatus(app, b.key.key, held, 'scheduled')).toMatchObject({
      scheduledReason: 'messaging_limit',
    })
    const view = (await senderView(b.sender.id)).messagingLimit
    expect(view).toMatchObject({ portfolio: `business:${businessId}`, reach: 1, policy: 'hold' })
  }, 40_000)

  it('gives back a recipient counted beside the claim when a later gate stops the message', async () => {
    const { sender, key } = await limitedSender({ messagingLimitOverride: 1, messagingLimitPolicy: 'hold' }, [
      ...SEND_SCOPES,
      'manage:suppressions',
    ])
    const phone = newPhone()
    const due = await dueIn2s(key.key, phone)
    expect(due.statusCode, due.body).toBe(202)
    // Opted out once accepted (an entry added, no reply: the window stays closed): the worker
    // counts the recipient beside its claim, then the opt-out gate stops the message.
    const optOut = await app.inject({
      method: 'POST',
      url: '/api/third-party/suppressions',
      headers: { 'x-api-key': key.key },
      payload: { phone, reason: 'Asked by phone call' },
    })
    expect(optOut.statusCode, optOut.body).toBe(201)
    const stopped = await untilMessageStatus(app, key.key, due.json().messageId, ['canceled', 'sent'])
    expect(stopped.status).toBe('canceled')
    expect(sentTo(phone)).toHaveLength(0)
    // Not counted: the limit's one place is still free for the next recipient.
    expect((await senderView(sender.id)).messagingLimit.reach).toBe(0)
    await untilMessageStatus(app, key.key, await accepted(key.key, newPhone()), 'sent')
    expect((await senderView(sender.id)).messagingLimit).toMatchObject({ limit: 1, reach: 1 })
  }, 40_000)

  it('counts nothing under off', async () => {
    const { sender, key } = await limitedSender({ messagingLimitOverride: 1, messagingLimitPolicy: 'off' })
    const ids = [await accepted(key.key, newPhone()), await accepted(key.key, newPhone())]
    for (const id of ids) await untilMessageStatus(app, key.key, id, 'sent')
    const view = (await senderView(sender.id)).messagingLimit
    expect(view).toMatchObject({ limit: 1, policy: 'off', reach: null })
    expect(await redis.exists(portfolioReachKey(world.queuePrefix, view.portfolio))).toBe(0)
  }, 40_000)
})

describe('the messaging limit under refuse', () => {
  it('refuses a new recipient outside their window once the reach is at the limit, and nobody else', async () => {
    const { sender, key } = await limitedSender({ messagingLimitOverride: 2, messagingLimitPolicy: 'refuse' })
    const [a, b] = [newPhone(), newPhone()]
    await untilMessageStatus(app, key.key, await accepted(key.key, a), 'sent')
    await untilMessageStatus(app, key.key, await accepted(key.key, b), 'sent')
    const stranger = newPhone()
    const refused = await sendTemplate(key.key, stranger)
    expectError(refused, 422, 'MESSAGING_LIMIT_REACHED', /messaging limit \(2 users .*room frees at/)
    // Asked again within the second the door keeps what it read: still refused.
    expectError(await sendTemplate(key.key, stranger), 422, 'MESSAGING_LIMIT_REACHED')
    // Already counted (again and again, as the door then knows), inside a window, or free-form: accepted.
    expect((await sendTemplate(key.key, a)).statusCode).toBe(202)
    expect((await sendTemplate(key.key, a)).statusCode).toBe(202)
    const inside = newPhone()
    expect((await replyFrom(app, APP_SECRET, sender.phoneNumberId, inside)).statusCode).toBe(200)
    expect((await sendTemplate(key.key, inside)).statusCode).toBe(202)
    expect((await send(app, 'send-text', key.key, { phone: newPhone(), text: 'Hi' })).statusCode).toBe(202)
    const batch = await app.inject({
      method: 'POST',
      url: '/api/third-party/messages/batch',
      headers: { 'x-api-key': key.key },
      payload: {
        messages: [
          { type: 'template', ...validSends['send-template'], phone: b },
          { type: 'template', ...validSends['send-template'], phone: newPhone() },
        ],
      },
    })
    expect(batch.statusCode, batch.body).toBe(202)
    expect(
      batch.json().results.map((r: { error?: { errorCode: string } }) => r.error?.errorCode ?? 'ok'),
    ).toEqual(['ok', 'MESSAGING_LIMIT_REACHED'])
  }, 40_000)
})

describe('the limit a portfolio has', () => {
  it('is the synced tier until an admin sets one, and changes with business_capability_update', async () => {
    const sender = await syncedSender(app, fake, { sync: false })
    const view = await senderView(sender.id)
    // Nothing known: unlimited, nothing counted; a sender's default policy holds once a limit is known.
    expect(view.messagingLimit).toMatchObject({ limit: null, source: 'none', reach: null, policy: 'hold' })
    expect(view.messagingLimit.portfolio).toBe(`waba:${sender.wabaId}`)
    const capability = async (value: Record<string, unknown>) => {
      const res = await postPlatformWebhook(
        app,
        accountWebhook(sender.wabaId as string, 'business_capability_update', value),
        APP_SECRET,
      )
      expect(res.statusCode, res.body).toBe(200)
      return (await senderView(sender.id)).messagingLimit
    }
    expect(await capability({ max_daily_conversations_per_business: 'TIER_250' })).toMatchObject({
      limit: 250,
      tier: 'TIER_250',
      source: 'synced',
      reach: 0,
      roomAt: null,
    })
    expect(await capability({ max_daily_conversations_per_business: 2000 })).toMatchObject({
      limit: 2000,
      tier: 'TIER_2K',
    })
    expect(await capability({ max_daily_conversations_per_business: 'TIER_UNLIMITED' })).toMatchObject({
      limit: null,
      source: 'synced',
      reach: null,
    })
    const set = await app.inject({
      method: 'PATCH',
      url: `/api/admin/senders/${sender.id}`,
      headers: asAdmin(),
      payload: { messagingLimitOverride: 5, messagingLimitPolicy: 'refuse' },
    })
    expect(set.statusCode, set.body).toBe(200)
    expect(set.json<SenderView>().messagingLimit).toMatchObject({
      limit: 5,
      source: 'admin',
      policy: 'refuse',
    })
    const bad = await app.inject({
      method: 'PATCH',
      url: `/api/admin/senders/${sender.id}`,
      headers: asAdmin(),
      payload: { messagingLimitOverride: 0 },
    })
    expectError(bad, 400, 'VALIDATION_ERROR')
  })

  it('is read from the Graph API with the catalog, stored as the webhook stores it, and an admin limit still comes first', async () => {
    const sender = await syncedSender(app, fake, { sync: false })
    const sync = async () => {
      const res = await app.inject({
        method: 'POST',
        url: `/api/admin/senders/${sender.id}/templates/sync`,
        headers: asAdmin(),
      })
      expect(res.statusCode, res.body).toBe(200)
      return senderView(sender.id)
    }
    // A number whose answer has no limit leaves it unknown (and the catalog synced all the same).
    expect((await sync()).messagingLimit).toMatchObject({ limit: null, source: 'none' })
    fake.phoneNumberFields.set(sender.phoneNumberId, { whatsapp_business_manager_messaging_limit: 'TIER_2K' })
    const synced = await sync()
    expect(synced.health.messagingLimitTier).toBe('TIER_2K')
    expect(synced.messagingLimit).toMatchObject({ limit: 2000, tier: 'TIER_2K', source: 'synced' })
    const read = fake.phoneNumberReads
      .filter((r) => r.url.pathname.endsWith(`/${sender.phoneNumberId}`))
      .at(-1)
    expect(read?.url.searchParams.get('fields')).toBe('whatsapp_business_manager_messaging_limit')
    expect(read?.authorization).toBe(`Bearer ${sender.token}`)
    // Meta raises it: the next sync brings it.
    fake.phoneNumberFields.set(sender.phoneNumberId, {
      whatsapp_business_manager_messaging_limit: 'TIER_UNLIMITED',
    })
    expect((await sync()).messagingLimit).toMatchObject({
      limit: null,
      tier: 'TIER_UNLIMITED',
      source: 'synced',
    })
    // An admin's limit comes first; the synced tier is still shown.
    const set = await app.inject({
      method: 'PATCH',
      url: `/api/admin/senders/${sender.id}`,
      headers: asAdmin(),
      payload: { messagingLimitOverride: 100 },
    })
    expect(set.statusCode, set.body).toBe(200)
    fake.phoneNumberFields.set(sender.phoneNumberId, {
      whatsapp_business_manager_messaging_limit: 'TIER_10K',
    })
    const overridden = await sync()
    expect(overridden.health.messagingLimitTier).toBe('TIER_10K')
    expect(overridden.messagingLimit).toMatchObject({ limit: 100, source: 'admin' })
  })

  it('is enforced at once when the webhook lowers it (the send rules reload)', async () => {
    const { sender, key } = await limitedSender({ messagingLimitPolicy: 'refuse' })
    const first = newPhone()
    await untilMessageStatus(app, key.key, await accepted(key.key, first), 'sent')
    // Unlimited until now: nothing was counted.
    expect((await senderView(sender.id)).messagingLimit.reach).toBeNull()
    const res = await postPlatformWebhook(
      app,
      accountWebhook(sender.wabaId as string, 'business_capability_update', {
        max_daily_conversations_per_business: 'TIER_250',
      }),
      APP_SECRET,
    )
    expect(res.statusCode).toBe(200)
    // The business id wins over the WABA for the count; the WABA's tier applies to its senders.
    expect((await senderView(sender.id)).messagingLimit).toMatchObject({ limit: 250, source: 'synced' })
    // The workers reload the sender on its announcement: a send after that is counted.
    await waitFor(
      async () => {
        await untilMessageStatus(app, key.key, await accepted(key.key, newPhone()), 'sent')
        return ((await senderView(sender.id)).messagingLimit.reach ?? 0) >= 1 || undefined
      },
      { what: 'a send counted under the synced limit', timeoutMs: 20_000 },
    )
  }, 40_000)
})
