import { randomBytes } from 'node:crypto'
import type { MessageView, SenderPoolView, SenderView, TemplateView } from '@dispatch/contracts'
import {
  decodeSticky,
  encodeSticky,
  optOutNumbersKey,
  poolStickyKey,
  recipientHasher,
  spreadByWeight,
  suppressionKey,
  suppressionsLoadedKey,
} from '@dispatch/runtime'
import { fairKeys } from '@dispatch/runtime/message-handoff'
import {
  demoTemplates,
  type FakeWhatsApp,
  graphError,
  messageWebhook,
  startFakeWhatsApp,
  waitFor,
} from '@dispatch/testing'
import type { RunningWorker } from '@dispatch/worker'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  activeKey,
  addWebhookEndpoint,
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
} from '../helpers.ts'

/**
 * A key bound to a sender pool, end to end (docs/sender-pools.md): its sends go out
 * through the pool's numbers (sticky per recipient, new recipients spread by weight), a send may
 * name a member and no other number, and a user's reply to any member reaches the key and sticks
 * them to that number. Real Postgres and Redis, a worker, the fake Cloud API.
 */
const APP_SECRET = 'whatsapp-app-secret-for-pool-tests'
const DEFAULT_NUMBER = '106540352240001'
const NUMBERS = { a: '306540352240011', b: '306540352240022', c: '306540352240033' }
const OUTSIDER_NUMBER = '306540352240044'

let world: TestWorld
let app: TestApp
let fake: FakeWhatsApp
let worker: RunningWorker
type Key = { id: string; key: string }
let pooled: Key
let unpooled: Key
const members: Record<'a' | 'b' | 'c', SenderView> = {} as never
let outsider: SenderView
let pool: SenderPoolView

/** The pool's members as the tests start them (then `extra`), weights and order included. */
const acmeMembers = (extra: { senderId: string }[] = []) => [
  { senderId: members.a.id, weight: 1 },
  { senderId: members.b.id, weight: 1 },
  { senderId: members.c.id, weight: 3 },
  ...extra,
]

const admin = (method: 'GET' | 'POST' | 'PATCH', url: string, payload?: object) =>
  app.inject({ method, url, headers: asAdmin(), ...(payload ? { payload } : {}) })

async function createSender(phoneNumberId: string, businessId: string, wabaId = `9${businessId}`) {
  const token = `EAAG${randomBytes(18).toString('base64url')}`
  fake.number(phoneNumberId, { token })
  const res = await admin('POST', '/api/admin/senders', {
    phoneNumberId,
    displayName: `Number ${phoneNumberId.slice(-2)}`,
    accessToken: token,
    businessId,
    wabaId,
  })
  expect(res.statusCode, res.body).toBe(201)
  return res.json<SenderView>()
}

beforeAll(async () => {
  world = await createWorld()
  fake = await startFakeWhatsApp()
  app = await buildTestApp(world, {
    WHATSAPP_APP_SECRET: APP_SECRET,
    MESSAGE_RATE_PER_SECOND: '10000',
    POOL_RATE_LIMIT_TOLERANCE_SECONDS: '1',
    SCHEDULE_MIN_AHEAD_SECONDS: '5',
    // Template syncs read the fake's catalogs.
    WHATSAPP_API_URL: fake.url,
  })
  worker = await startTestWorker(world, {
    WORKER_QUEUES: 'messages',
    WHATSAPP_API_URL: fake.url,
    WHATSAPP_ACCESS_TOKEN: 'EAAG-pool-default-token',
    WHATSAPP_PHONE_NUMBER_ID: DEFAULT_NUMBER,
    ADMISSION_INTERVAL_MS: '20',
    MESSAGES_BACKOFF_MS: '20',
    POOL_RATE_LIMIT_TOLERANCE_SECONDS: '1',
    // A message's own job each, which the mover takes out of a fallen number's queue (bundles a
    // worker holds hand theirs over: sender-pools-bundles.test.ts).
    MESSAGES_BUNDLE_SIZE: '1',
    // The Redis copies checked for loss often (the opt-outs' rebuild below).
    SERVICE_WINDOW_CHECK_MS: '200',
  })
  members.a = await createSender(NUMBERS.a, '7001')
  members.b = await createSender(NUMBERS.b, '7001')
  members.c = await createSender(NUMBERS.c, '7001')
  outsider = await createSender(OUTSIDER_NUMBER, '7002')
  const created = await admin('POST', '/api/admin/sender-pools', {
    name: 'Acme numbers',
    members: acmeMembers(),
  })
  expect(created.statusCode, created.body).toBe(201)
  pool = created.json<SenderPoolView>()
  // Another business's pool, with its own number: never a sender of the first pool's keys.
  const other = await admin('POST', '/api/admin/sender-pools', {
    name: 'Globex numbers',
    members: [{ senderId: outsider.id }],
  })
  expect(other.statusCode, other.body).toBe(201)
  pooled = await activeKey(app, { scopes: [...SEND_SCOPES, 'manage:suppressions'], tenantId: 'acme' })
  unpooled = await activeKey(app, { scopes: SEND_SCOPES, tenantId: 'globex' })
  const bound = await admin('PATCH', `/api/admin/api-keys/${pooled.id}`, { senderPoolId: pool.id })
  expect(bound.statusCode, bound.body).toBe(200)
  const own = await admin('PATCH', `/api/admin/api-keys/${unpooled.id}`, { senderId: outsider.id })
  expect(own.statusCode, own.body).toBe(200)
  // The pool's announcement reaches the API's copy.
  await waitFor(() => app.sending.pools.get(pool.id), { what: 'the pool loaded by the API' })
})
afterAll(async () => {
  await worker?.close()
  await app?.close()
  await fake?.close()
  await world?.close()
})

const viewOf = (key: Key, id: string) =>
  app
    .inject({ method: 'GET', url: `/api/third-party/messages/${id}`, headers: { 'x-api-key': key.key } })
    .then((res) => res.json<MessageView>())

/** A text from `key` to `phone`; resolves with its view once the worker sent it. */
async function sendTo(key: Key, phone: string, extra: Record<string, unknown> = {}) {
  const res = await send(app, 'send-text', key.key, { phone, text: 'Your order shipped', ...extra })
  expect(res.statusCode, res.body).toBe(202)
  const { messageId } = res.json<{ messageId: string }>()
  // Known at once, waiting on the number chosen for it or recorded.
  const at = await app.inject({
    method: 'GET',
    url: `/api/third-party/messages/${messageId}`,
    headers: { 'x-api-key': key.key },
  })
  expect(at.statusCode, at.body).toBe(200)
  return waitFor(
    async () => {
      const view = await viewOf(key, messageId)
      return view.status === 'sent' ? view : undefined
    },
    { what: `message ${messageId} sent`, timeoutMs: 15_000 },
  )
}

const numberOf = (senderId: string | null) =>
  Object.entries(members).find(([, m]) => m.id === senderId)?.[1].phoneNumberId
const sentBy = (number: string, messageId: string) =>
  fake.sentFrom(number).some((r) => r.messageId === messageId)

describe("a pooled key's sends", () => {
  it('keep going out through the number that first spoke with a recipient', async () => {
    const first = await sendTo(pooled, '+5511955500001')
    expect(Object.values(members).map((m) => m.id)).toContain(first.senderId)
    const number = numberOf(first.senderId) as string
    expect(first.senderPhoneNumberId).toBe(number)
    for (let n = 0; n < 3; n++) {
      const next = await sendTo(pooled, '+5511955500001')
      expect(next.senderId).toBe(first.senderId)
      expect(sentBy(number, next.messageId)).toBe(true)
    }
  })

  it('spread new recipients over the members by weight', async () => {
    const views = await Promise.all(
      Array.from({ length: 60 }, (_, i) => sendTo(pooled, `+55119666${String(i).padStart(5, '0')}`)),
    )
    const counts = { a: 0, b: 0, c: 0 }
    for (const view of views) {
      const name = (Object.keys(members) as Array<'a' | 'b' | 'c'>).find(
        (k) => members[k].id === view.senderId,
      )
      expect(name, `sent through ${view.senderId}`).toBeDefined()
      counts[name as 'a']++
      expect(sentBy(view.senderPhoneNumberId as string, view.messageId)).toBe(true)
    }
    // Weights 1, 1, 3: each takes some, the heavy one the most.
    expect(counts.a).toBeGreaterThan(0)
    expect(counts.b).toBeGreaterThan(0)
    expect(counts.c).toBeGreaterThan(Math.max(counts.a, counts.b))
  })

  it('write the recipient’s record when it is new and again once POOL_STICKY_TTL_DAYS old, else nothing', async () => {
    const phone = '+5511955500501'
    const redis = app.deps.redis
    const key = poolStickyKey(world.queuePrefix, pool.id, phone)
    const DAY = 86_400_000
    const ttlMs = 30 * DAY // POOL_STICKY_TTL_DAYS' default
    const first = await sendTo(pooled, phone)
    const written = await waitFor(() => redis.get(key).then((v) => v ?? undefined), { what: 'the record' })
    expect(decodeSticky(written)?.senderId).toBe(first.senderId)
    // It lives twice the configured time.
    expect(await redis.pttl(key)).toBeGreaterThan(2 * ttlMs - 60_000)
    // Sent to again while younger than the configured time: not written (the same value).
    await sendTo(pooled, phone)
    expect(await redis.get(key)).toBe(written)
    // 31 days old, with their window's time in it: written again by the next send, for a whole
    // life, the window's time kept.
    const aged = {
      senderId: first.senderId as string,
      inboundAt: 1_700_000_000_000,
      writtenAt: Date.now() - 31 * DAY,
    }
    await redis.set(key, encodeSticky(aged), 'PX', 29 * DAY)
    const again = await sendTo(pooled, phone)
    expect(again.senderId).toBe(first.senderId)
    const refreshed = await waitFor(
      async () => {
        const record = decodeSticky(await redis.get(key))
        return record && record.writtenAt > aged.writtenAt ? record : undefined
      },
      { what: 'the record written again' },
    )
    expect(refreshed).toMatchObject({ senderId: first.senderId, inboundAt: aged.inboundAt })
    expect(await redis.pttl(key)).toBeGreaterThan(2 * ttlMs - 60_000)
    // A record of the older layout (no write time) is written again in the new one.
    await redis.set(key, `${first.senderId} 0`, 'PX', ttlMs)
    await sendTo(pooled, phone)
    await waitFor(async () => ((await redis.get(key))?.split(' ').length === 3 ? true : undefined), {
      what: 'the older record rewritten',
    })
  })

  it('go through a member a send names, and it sticks', async () => {
    // One recipient per member: at least two are not where the spread alone would put them.
    for (const [n, name] of (['a', 'b', 'c'] as const).entries()) {
      const phone = `+551195550010${n}`
      const named = await sendTo(pooled, phone, { senderId: members[name].id.toUpperCase() })
      expect(named.senderId).toBe(members[name].id)
      expect(sentBy(NUMBERS[name], named.messageId)).toBe(true)
      for (let again = 0; again < 2; again++) {
        expect((await sendTo(pooled, phone)).senderId).toBe(members[name].id)
      }
    }
  })
})

describe('a sender a key may not use', () => {
  it("is refused when a pooled key names a number outside its pool (another pool's, another tenant's)", async () => {
    const res = await send(app, 'send-text', pooled.key, {
      phone: '+5511955500003',
      text: 'hi',
      senderId: outsider.id,
    })
    expectError(res, 422, 'INVALID_REFERENCE')
    expect(res.json().message).toContain('body.senderId')
  })

  it("is refused when an unpooled key names another pool's member, or an unknown sender", async () => {
    for (const senderId of [members.a.id, 'default', 'not-a-sender']) {
      const res = await send(app, 'send-text', unpooled.key, {
        phone: '+5511955500004',
        text: 'hi',
        senderId,
      })
      expectError(res, 422, 'INVALID_REFERENCE')
    }
    const own = await sendTo(unpooled, '+5511955500004', { senderId: outsider.id })
    expect(own.senderId).toBe(outsider.id)
  })

  it('is refused item by item in a batch', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/api/third-party/messages/batch',
      headers: { 'x-api-key': pooled.key },
      payload: {
        messages: [
          { type: 'text', phone: '+5511955500005', text: 'one', senderId: members.c.id },
          { type: 'text', phone: '+5511955500006', text: 'two', senderId: outsider.id },
        ],
      },
    })
    expect(res.statusCode, res.body).toBe(202)
    const [ok, refused] = res.json<{ results: Array<Record<string, unknown>> }>().results
    expect(ok).toMatchObject({ status: 'queued' })
    expect(refused).toMatchObject({ error: { errorCode: 'INVALID_REFERENCE' } })
  })
})

let wamids = 0
const replyFrom = (phone: string) => ({
  from: phone.slice(1),
  id: `wamid.pool-reply-${++wamids}.${Date.now()}`,
  timestamp: String(Math.floor(Date.now() / 1000)),
  type: 'text',
  text: { body: 'Where is it?' },
})

describe('a reply to any number of the pool', () => {
  it('reaches the key, and the user sticks to the number they wrote to', async () => {
    const phone = '+5511955500007'
    const first = await sendTo(pooled, phone)
    const other = (['a', 'b', 'c'] as const).find((k) => members[k].id !== first.senderId) as 'a'
    const reply = replyFrom(phone)
    const res = await postPlatformWebhook(app, messageWebhook(NUMBERS[other], reply), APP_SECRET)
    expect(res.statusCode, res.body).toBe(200)
    const routed =
      await world.sql`select api_key_id from inbound_messages where platform_message_id = ${reply.id}`
    expect(routed[0]?.api_key_id).toBe(pooled.id)
    const next = await sendTo(pooled, phone)
    expect(next.senderId).toBe(members[other].id)
    expect(sentBy(NUMBERS[other], next.messageId)).toBe(true)
  })

  it('of a number no pooled key wrote to the user from stays unrouted', async () => {
    const reply = replyFrom('+5511955500099')
    const res = await postPlatformWebhook(app, messageWebhook(NUMBERS.a, reply), APP_SECRET)
    expect(res.statusCode, res.body).toBe(200)
    const routed =
      await world.sql`select api_key_id from inbound_messages where platform_message_id = ${reply.id}`
    expect(routed[0]?.api_key_id).toBeNull()
  })
})

/** Meta's `phone_number_quality_update` for one of our numbers (FLAGGED / UNFLAGGED is its quality). */
const qualityUpdate = (phoneNumberId: string, event: string) => ({
  object: 'whatsapp_business_account',
  entry: [
    {
      id: '102290129340398',
      time: Math.floor(Date.now() / 1000),
      changes: [
        {
          field: 'phone_number_quality_update',
          value: { display_phone_number: phoneNumberId, event, metadata: { phone_number_id: phoneNumberId } },
        },
      ],
    },
  ],
})

describe('a member out of rotation', () => {
  it('takes no new recipients and loses those outside their window; back in rotation, it takes new ones again', async () => {
    // A recipient of member C, before it falls.
    const stuck = await sendTo(pooled, '+5511955500201', { senderId: members.c.id })
    expect(stuck.senderId).toBe(members.c.id)

    const flagged = await postPlatformWebhook(app, qualityUpdate(NUMBERS.c, 'FLAGGED'), APP_SECRET)
    expect(flagged.statusCode, flagged.body).toBe(200)
    await waitFor(
      () =>
        app.sending.pools.get(pool.id)?.members.find((m) => m.senderId === members.c.id)?.excluded ===
          'flagged' || undefined,
      { what: 'member C out of rotation in the API' },
    )
    const during = await Promise.all(
      Array.from({ length: 30 }, (_, i) => sendTo(pooled, `+55119777${String(i).padStart(5, '0')}`)),
    )
    expect(during.filter((v) => v.senderId === members.c.id)).toEqual([])
    const moved = await sendTo(pooled, '+5511955500201')
    expect([members.a.id, members.b.id]).toContain(moved.senderId)

    const unflagged = await postPlatformWebhook(app, qualityUpdate(NUMBERS.c, 'UNFLAGGED'), APP_SECRET)
    expect(unflagged.statusCode, unflagged.body).toBe(200)
    await waitFor(
      () =>
        app.sending.pools.get(pool.id)?.members.find((m) => m.senderId === members.c.id)?.excluded === null ||
        undefined,
      { what: 'member C back in rotation in the API' },
    )
    const after = await Promise.all(
      Array.from({ length: 30 }, (_, i) => sendTo(pooled, `+55119888${String(i).padStart(5, '0')}`)),
    )
    expect(after.filter((v) => v.senderId === members.c.id).length).toBeGreaterThan(0)
    // The recipient who moved keeps their new number.
    expect((await sendTo(pooled, '+5511955500201')).senderId).toBe(moved.senderId)
  })

  it('in the RED keeps a recipient whose window with it is open', async () => {
    const phone = '+5511955500202'
    await sendTo(pooled, phone, { senderId: members.a.id })
    // The user writes to member A: their window with it opens.
    const res = await postPlatformWebhook(app, messageWebhook(NUMBERS.a, replyFrom(phone)), APP_SECRET)
    expect(res.statusCode, res.body).toBe(200)
    await world.sql`update senders set quality_rating = 'RED' where id = ${members.a.id}`
    await app.sending.pools.refresh()
    try {
      expect(app.sending.pools.get(pool.id)?.members.find((m) => m.senderId === members.a.id)?.excluded).toBe(
        'quality_red',
      )
      expect((await sendTo(pooled, phone)).senderId).toBe(members.a.id)
      const fresh = await Promise.all(
        Array.from({ length: 20 }, (_, i) => sendTo(pooled, `+55119333${String(i).padStart(5, '0')}`)),
      )
      expect(fresh.filter((v) => v.senderId === members.a.id)).toEqual([])
    } finally {
      await world.sql`update senders set quality_rating = null where id = ${members.a.id}`
      await app.sending.pools.refresh()
    }
  })

  it('limited by the platform (130429) longer than the configured time, takes no new recipients until the limit ends', async () => {
    fake.number(NUMBERS.b, { answer: graphError(130429, '(#130429) Rate limit hit') })
    const memberB = () => app.sending.pools.get(pool.id)?.members.find((m) => m.senderId === members.b.id)
    try {
      const res = await send(app, 'send-text', pooled.key, {
        phone: '+5511955500203',
        text: 'waits on a limited number',
        senderId: members.b.id,
      })
      expect(res.statusCode, res.body).toBe(202)
      await waitFor(() => (memberB()?.excluded === 'rate_limited' ? true : undefined), {
        what: 'member B out of rotation after its 130429 streak passed 1 s',
        timeoutMs: 15_000,
      })
      const during = await Promise.all(
        Array.from({ length: 20 }, (_, i) => sendTo(pooled, `+55119444${String(i).padStart(5, '0')}`)),
      )
      expect(during.filter((v) => v.senderId === members.b.id)).toEqual([])
    } finally {
      fake.number(NUMBERS.b, { answer: undefined })
    }
    await waitFor(() => (memberB()?.excluded === null ? true : undefined), {
      what: 'member B back in rotation once its pause ended',
      timeoutMs: 70_000,
    })
  }, 90_000)
})

describe('messages waiting on a number that falls', () => {
  it('move to a healthy member, recorded on the message and in a message.sender_changed event; a recipient in an open window stays', async () => {
    const watcher = await activeKey(app, { scopes: [...SEND_SCOPES, 'manage:webhooks'], tenantId: 'acme' })
    const bound = await admin('PATCH', `/api/admin/api-keys/${watcher.id}`, { senderPoolId: pool.id })
    expect(bound.statusCode, bound.body).toBe(200)
    await addWebhookEndpoint(app, watcher.key, {
      url: 'http://127.0.0.1:9/pool-events',
      events: ['message.sender_changed'],
    })
    const sendAt = new Date(Date.now() + 60_000).toISOString()
    // Waiting on member A: four recipients, one of whom wrote to A (their window is open).
    const phones = ['+5511955500301', '+5511955500302', '+5511955500303', '+5511955500304']
    const ids: string[] = []
    for (const phone of phones) {
      const res = await send(app, 'send-text', watcher.key, {
        phone,
        text: 'later',
        sendAt,
        senderId: members.a.id,
      })
      expect(res.statusCode, res.body).toBe(202)
      ids.push(res.json<{ messageId: string }>().messageId)
    }
    const windowed = phones[3] as string
    const reply = await postPlatformWebhook(app, messageWebhook(NUMBERS.a, replyFrom(windowed)), APP_SECRET)
    expect(reply.statusCode, reply.body).toBe(200)

    await world.sql`update senders set quality_rating = 'RED' where id = ${members.a.id}`
    try {
      const views = await waitFor(
        async () => {
          const all = await Promise.all(ids.slice(0, 3).map((id) => viewOf(watcher, id)))
          return all.every((v) => v.senderId !== members.a.id) ? all : undefined
        },
        { what: 'the waiting messages moved off member A', timeoutMs: 15_000 },
      )
      for (const view of views) {
        expect([members.b.id, members.c.id]).toContain(view.senderId)
        expect(view.senderPhoneNumberId).toBe(numberOf(view.senderId))
        expect(view.status).toBe('scheduled')
      }
      const events = await world.sql`select message_id, payload from webhook_events
        where type = 'message.sender_changed' and api_key_id = ${watcher.id}`
      expect(events.map((e) => e.message_id).sort()).toEqual(ids.slice(0, 3).sort())
      expect(events[0]?.payload.data.senderChanged).toMatchObject({
        from: members.a.id,
        reason: 'quality_red',
      })
      // The recipient in an open window with A stays on it; the others now stick to their new number.
      expect((await viewOf(watcher, ids[3] as string)).senderId).toBe(members.a.id)
    } finally {
      await world.sql`update senders set quality_rating = null where id = ${members.a.id}`
      await app.sending.pools.refresh()
    }
  })
})

/** A pool of `senders` and a key bound to it (no webhook endpoint), once the API has the pool. */
async function poolOf(name: string, senders: SenderView[]) {
  const created = await admin('POST', '/api/admin/sender-pools', {
    name,
    members: senders.map((sender) => ({ senderId: sender.id })),
  })
  expect(created.statusCode, created.body).toBe(201)
  const made = created.json<SenderPoolView>()
  const key = await activeKey(app, { scopes: SEND_SCOPES })
  const bound = await admin('PATCH', `/api/admin/api-keys/${key.id}`, { senderPoolId: made.id })
  expect(bound.statusCode, bound.body).toBe(200)
  await waitFor(() => app.sending.pools.get(made.id), { what: `the pool ${name}` })
  return { pool: made, key }
}

/** A text from `key` to `phone` through `senderId`, a minute ahead: it waits on that number. */
async function scheduleText(key: Key, phone: string, senderId: string) {
  const res = await send(app, 'send-text', key.key, {
    phone,
    text: 'later',
    sendAt: new Date(Date.now() + 60_000).toISOString(),
    senderId,
  })
  expect(res.statusCode, res.body).toBe(202)
  return res.json<{ messageId: string }>().messageId
}

/** The view once its `senderId` is `senderId` (moved there, or still there). */
const viewOn = (key: Key, id: string, senderId: string, what: string) =>
  waitFor(
    async () => {
      const view = await viewOf(key, id)
      return view.senderId === senderId ? view : undefined
    },
    { what, timeoutMs: 15_000 },
  )

/** Longer than a pass of the mover (POOL_MOVE_INTERVAL_MS, 1 s): one that would move a message has run. */
const aPass = () => new Promise((resolve) => setTimeout(resolve, 2500))

describe('a move off a fallen number, as the message records it', () => {
  it('is in its view and its timelines with no webhook endpoint on the key', async () => {
    // A pool of its own: the moved message waits a minute on its new number, and no other test's.
    const from = await createSender('606540352240066', '7403')
    const to = await createSender('606540352240077', '7403')
    const { key: quiet } = await poolOf('Quiet', [from, to])
    const id = await scheduleText(quiet, '+5511955500601', from.id)
    expect((await viewOf(quiet, id)).senderChanged).toBeUndefined()
    await world.sql`update senders set quality_rating = 'RED' where id = ${from.id}`
    try {
      const view = await waitFor(
        async () => {
          const found = await viewOf(quiet, id)
          return found.senderId !== from.id ? found : undefined
        },
        { what: 'the message moved off its fallen number', timeoutMs: 15_000 },
      )
      expect(view.senderId).toBe(to.id)
      expect(view.senderChanged).toEqual({
        from: from.id,
        to: view.senderId,
        at: expect.any(String),
        reason: 'quality_red',
      })
      const at = Date.parse(view.senderChanged?.at as string)
      expect(at).toBeGreaterThanOrEqual(Date.parse(view.createdAt))
      expect(at).toBeLessThanOrEqual(Date.now())

      const timeline = await app.inject({
        method: 'GET',
        url: `/api/third-party/messages/${id}/timeline`,
        headers: { 'x-api-key': quiet.key },
      })
      expect(timeline.statusCode, timeline.body).toBe(200)
      const { message, entries } = timeline.json<{
        message: MessageView
        entries: Array<{ kind: string; summary: string; senderChanged?: unknown }>
      }>()
      expect(message.senderChanged).toEqual(view.senderChanged)
      const moves = entries.filter((entry) => entry.kind === 'sender_changed')
      expect(moves).toHaveLength(1)
      expect(moves[0]?.senderChanged).toEqual(view.senderChanged)
      expect(moves[0]?.summary).toContain(from.id)
      // Not a failed attempt.
      expect(entries.filter((entry) => entry.kind === 'attempt_failed')).toEqual([])

      const adminTimeline = await admin('GET', `/api/admin/messages/${id}/timeline`)
      expect(adminTimeline.statusCode, adminTimeline.body).toBe(200)
      expect(adminTimeline.json().message.senderChanged).toEqual(view.senderChanged)
      expect(
        adminTimeline.json<{ entries: Array<{ kind: string }> }>().entries.map((entry) => entry.kind),
      ).toContain('sender_changed')
      // No endpoint, no event: the record above is the message's own.
      expect(await world.sql`select 1 from webhook_events where message_id = ${id}`).toHaveLength(0)
    } finally {
      await world.sql`update senders set quality_rating = null where id = ${from.id}`
    }
  })
})

describe('a message waiting on a fallen number that stays', () => {
  it('is a template with no healthy member of its WABA; it moves to one once there is', async () => {
    // One business, two WABAs: X and Z share one (and its catalog), Y has the other.
    const wabas = { xz: '96001', y: '96002' }
    const numbers = { x: '606540352240011', y: '606540352240022', z: '606540352240033' }
    fake.templates.set(wabas.xz, demoTemplates())
    fake.templates.set(wabas.y, demoTemplates())
    fake.templates.link(numbers.x, wabas.xz)
    fake.templates.link(numbers.z, wabas.xz)
    fake.templates.link(numbers.y, wabas.y)
    const x = await createSender(numbers.x, '7401', wabas.xz)
    const y = await createSender(numbers.y, '7401', wabas.y)
    const z = await createSender(numbers.z, '7401', wabas.xz)
    const synced = await admin('POST', `/api/admin/senders/${x.id}/templates/sync`)
    expect(synced.statusCode, synced.body).toBe(200)
    const { key } = await poolOf('Two WABAs', [x, y, z])
    // Z, X's only WABA sibling, is out of rotation.
    await world.sql`update senders set quality_rating = 'RED' where id = ${z.id}`
    const res = await app.inject({
      method: 'POST',
      url: '/api/third-party/messages/send-template',
      headers: { 'x-api-key': key.key },
      payload: {
        phone: '+5511955500701',
        templateId: 'appointment_reminder',
        language: 'en_US',
        variables: { first_name: 'Ana', date: 'Tuesday' },
        sendAt: new Date(Date.now() + 60_000).toISOString(),
        senderId: x.id,
      },
    })
    expect(res.statusCode, res.body).toBe(202)
    const template = res.json<{ messageId: string }>().messageId
    const text = await scheduleText(key, '+5511955500702', x.id)

    await world.sql`update senders set quality_rating = 'RED' where id = ${x.id}`
    // The text moves to Y, the one healthy member; the template cannot (Y has another WABA).
    const movedText = await viewOn(key, text, y.id, 'the text moved to Y')
    expect(movedText.senderChanged).toMatchObject({ from: x.id, to: y.id, reason: 'quality_red' })
    await aPass()
    const stayed = await viewOf(key, template)
    expect(stayed.senderId).toBe(x.id)
    expect(stayed.senderChanged).toBeUndefined()

    // Z back in rotation: the template moves there, not to Y.
    await world.sql`update senders set quality_rating = null where id = ${z.id}`
    const movedTemplate = await viewOn(key, template, z.id, 'the template moved to Z, of its WABA')
    expect(movedTemplate.senderChanged).toMatchObject({ from: x.id, to: z.id, reason: 'quality_red' })
    await world.sql`update senders set quality_rating = null where id = ${x.id}`
  })

  it('is a recipient in an open window with a number that is only RED; with one that is banned, it moves', async () => {
    const numbers = { p: '606540352240044', q: '606540352240055' }
    const p = await createSender(numbers.p, '7402')
    const q = await createSender(numbers.q, '7402')
    const { pool: made, key } = await poolOf('Window', [p, q])
    const windowed = '+5511955500801'
    const other = '+5511955500802'
    const kept = await scheduleText(key, windowed, p.id)
    const leaving = await scheduleText(key, other, p.id)
    // The user writes to P: their window with it opens (their record says P, and when).
    const reply = await postPlatformWebhook(app, messageWebhook(numbers.p, replyFrom(windowed)), APP_SECRET)
    expect(reply.statusCode, reply.body).toBe(200)
    const sticky = poolStickyKey(world.queuePrefix, made.id, windowed)
    await waitFor(
      async () => {
        const record = decodeSticky(await app.deps.redis.get(sticky))
        return record?.senderId === p.id && record.inboundAt > 0 ? true : undefined
      },
      { what: "the user's window with P open" },
    )

    await world.sql`update senders set quality_rating = 'RED' where id = ${p.id}`
    try {
      // Outside a window, a message leaves P; in one, it stays while P is only RED.
      await viewOn(key, leaving, q.id, 'the message outside a window moved to Q')
      await aPass()
      const stayed = await viewOf(key, kept)
      expect(stayed.senderId).toBe(p.id)
      expect(stayed.senderChanged).toBeUndefined()

      // P banned: it can answer no one, and the conversation leaves it.
      await world.sql`update senders set account_status = 'BANNED' where id = ${p.id}`
      const moved = await viewOn(key, kept, q.id, 'the windowed message moved off the banned P')
      expect(moved.senderChanged).toMatchObject({ from: p.id, to: q.id, reason: 'account_banned' })
    } finally {
      await world.sql`update senders set quality_rating = null, account_status = null where id = ${p.id}`
    }
  })
})

describe('a pooled template send', () => {
  // One business, two WABAs: only the first's catalog has appointment_reminder.
  const made: Record<'full' | 'bare', SenderView> = {} as never
  let key: Key
  let poolId: string
  beforeAll(async () => {
    const numbers = { full: '506540352240011', bare: '506540352240022' }
    const wabas = { full: '95001', bare: '95002' }
    fake.templates.set(wabas.full, demoTemplates())
    fake.templates.set(
      wabas.bare,
      demoTemplates().filter((t) => t.name !== 'appointment_reminder'),
    )
    for (const name of ['full', 'bare'] as const) {
      fake.templates.link(numbers[name], wabas[name])
      const token = `EAAG${randomBytes(18).toString('base64url')}`
      fake.number(numbers[name], { token })
      const res = await admin('POST', '/api/admin/senders', {
        phoneNumberId: numbers[name],
        displayName: `Catalog ${name}`,
        accessToken: token,
        businessId: '7301',
        wabaId: wabas[name],
      })
      expect(res.statusCode, res.body).toBe(201)
      made[name] = res.json<SenderView>()
      const synced = await admin('POST', `/api/admin/senders/${made[name].id}/templates/sync`)
      expect(synced.statusCode, synced.body).toBe(200)
    }
    const created = await admin('POST', '/api/admin/sender-pools', {
      name: 'Two catalogs',
      members: [{ senderId: made.full.id }, { senderId: made.bare.id }],
    })
    expect(created.statusCode, created.body).toBe(201)
    poolId = created.json<SenderPoolView>().id
    key = await activeKey(app, { scopes: SEND_SCOPES })
    const bound = await admin('PATCH', `/api/admin/api-keys/${key.id}`, { senderPoolId: poolId })
    expect(bound.statusCode, bound.body).toBe(200)
    await waitFor(() => app.sending.pools.get(poolId), { what: 'the pool' })
  })

  it('is checked against the catalog of the number that sends it (templates are per WABA)', async () => {
    const template = (senderId: string) =>
      app.inject({
        method: 'POST',
        url: '/api/third-party/messages/send-template',
        headers: { 'x-api-key': key.key },
        payload: {
          phone: '+5511955500401',
          templateId: 'appointment_reminder',
          language: 'en_US',
          variables: { first_name: 'Ana', date: 'Tuesday' },
          senderId,
        },
      })
    expectError(await template(made.bare.id), 422, 'TEMPLATE_NOT_FOUND')
    expect((await template(made.full.id)).statusCode).toBe(202)
    // Without a senderId, the number the recipient sticks to is checked, whatever the spread
    // would give them: one the spread gives the bare number, stuck to the full one, is accepted;
    // one the spread gives the full number, stuck to the bare one, is refused.
    const members = app.sending.pools.get(poolId)?.members ?? []
    const phones = Array.from({ length: 40 }, (_, n) => `+55119555006${String(n).padStart(2, '0')}`)
    const spreadTo = (id: string) => phones.find((phone) => spreadByWeight(members, phone) === id) as string
    const stick = (phone: string, senderId: string) =>
      app.deps.redis.set(
        poolStickyKey(world.queuePrefix, poolId, phone),
        encodeSticky({ senderId, inboundAt: 0, writtenAt: Date.now() }),
        'PX',
        3_600_000,
      )
    const unnamed = (phone: string) =>
      app.inject({
        method: 'POST',
        url: '/api/third-party/messages/send-template',
        headers: { 'x-api-key': key.key },
        payload: {
          phone,
          templateId: 'appointment_reminder',
          language: 'en_US',
          variables: { first_name: 'Ana', date: 'Tuesday' },
        },
      })
    const toFull = spreadTo(made.bare.id)
    await stick(toFull, made.full.id)
    const accepted = await unnamed(toFull)
    expect(accepted.statusCode, accepted.body).toBe(202)
    const view = await app.inject({
      method: 'GET',
      url: `/api/third-party/messages/${accepted.json().messageId}`,
      headers: { 'x-api-key': key.key },
    })
    expect(view.json().senderId).toBe(made.full.id)
    const toBare = spreadTo(made.full.id)
    await stick(toBare, made.bare.id)
    expectError(await unnamed(toBare), 422, 'TEMPLATE_NOT_FOUND')
  })

  it("is listed with every member's catalog, each template naming its number, and no other's", async () => {
    const list = async (apiKey: Key, query = '') => {
      const res = await app.inject({
        method: 'GET',
        url: `/api/third-party/templates?take=100${query}`,
        headers: { 'x-api-key': apiKey.key },
      })
      expect(res.statusCode, res.body).toBe(200)
      return res.json<{ data: TemplateView[]; itemCount: number }>()
    }
    const reminders = (page: { data: TemplateView[] }) =>
      page.data.filter((t) => t.name === 'appointment_reminder').map((t) => t.senderId)
    const all = await list(key)
    // The full catalog's reminder, not the bare one's (it has none): what a send there is checked against.
    expect(reminders(all)).toEqual([made.full.id])
    expect(new Set(all.data.map((t) => t.senderId))).toEqual(new Set([made.full.id, made.bare.id]))
    const bare = await list(key, `&senderId=${made.bare.id}`)
    expect(bare.data.length).toBeGreaterThan(0)
    expect(bare.data.every((t) => t.senderId === made.bare.id)).toBe(true)
    expect(reminders(bare)).toEqual([])
    expect(all.itemCount).toBe(bare.itemCount + (await list(key, `&senderId=${made.full.id}`)).itemCount)
    // Another business's number, or an unknown one: nothing, not its catalog.
    fake.templates.set(outsider.wabaId as string, demoTemplates())
    fake.templates.link(OUTSIDER_NUMBER, outsider.wabaId as string)
    const synced = await admin('POST', `/api/admin/senders/${outsider.id}/templates/sync`)
    expect(synced.statusCode, synced.body).toBe(200)
    const own = await list(unpooled)
    expect(own.data.every((t) => t.senderId === outsider.id)).toBe(true)
    expect(own.itemCount).toBeGreaterThan(0)
    for (const senderId of [outsider.id, 'no-such-sender']) {
      const page = await list(key, `&senderId=${senderId}`)
      expect(page.data, senderId).toEqual([])
      expect(page.itemCount, senderId).toBe(0)
    }
    // A key without a pool names its own sender, or gets nothing.
    expect((await list(unpooled, `&senderId=${made.full.id}`)).data).toEqual([])
  })
})

describe('messages already in a number’s queue when it falls', () => {
  it('move to a healthy member once it is out of rotation, each sent once, never by the fallen number', async () => {
    const watcher = await activeKey(app, { scopes: [...SEND_SCOPES, 'manage:webhooks'], tenantId: 'acme' })
    const bound = await admin('PATCH', `/api/admin/api-keys/${watcher.id}`, { senderPoolId: pool.id })
    expect(bound.statusCode, bound.body).toBe(200)
    await addWebhookEndpoint(app, watcher.key, {
      url: 'http://127.0.0.1:9/queued-moves',
      events: ['message.sender_changed'],
    })
    // Member B answers every send 130429: its first message meets the limit, and every message
    // admitted into its queue sits there while the number is paused.
    fake.number(NUMBERS.b, { answer: graphError(130429, '(#130429) Rate limit hit') })
    const fair = fairKeys(world.queuePrefix, members.b.id)
    try {
      const ids = await Promise.all(
        Array.from({ length: 6 }, async (_, i) => {
          const res = await send(app, 'send-text', watcher.key, {
            phone: `+55119333${String(i).padStart(5, '0')}`,
            text: 'queued on B',
            senderId: members.b.id,
          })
          expect(res.statusCode, res.body).toBe(202)
          return res.json<{ messageId: string }>().messageId
        }),
      )
      // All admitted into B's queue (none left on its admission lists), as B falls (its streak
      // must pass the 1 s tolerance): on a loaded machine the last may be admitted just after, and
      // those the list mover finds are moved from the lists instead; each is sent once either way.
      await waitFor(async () => ((await app.deps.redis.hlen(fair.jobs)) === 0 ? true : undefined), {
        what: "the messages admitted into B's queue",
        timeoutMs: 2_000,
      })
      const sent = await waitFor(
        () => {
          const from = ids.map(
            (id) => [NUMBERS.a, NUMBERS.c].find((number) => sentBy(number, id)) ?? undefined,
          )
          return from.every((number) => number !== undefined) ? from : undefined
        },
        { what: "B's queued messages sent through A or C", timeoutMs: 20_000 },
      )
      expect(sent).toHaveLength(6)
      for (const id of ids) {
        expect(fake.sendsOf(id)).toBe(1)
        expect(sentBy(NUMBERS.b, id)).toBe(false)
      }
      const events = await waitFor(
        async () => {
          const rows = await world.sql`select message_id, payload from webhook_events
            where type = 'message.sender_changed' and api_key_id = ${watcher.id}`
          return rows.length >= ids.length ? rows : undefined
        },
        { what: 'a message.sender_changed event per message' },
      )
      expect(events.map((e) => e.message_id).sort()).toEqual([...ids].sort())
      for (const event of events) {
        expect(event.payload.data.senderChanged).toMatchObject({ from: members.b.id, reason: 'rate_limited' })
      }
      const views = await Promise.all(
        ids.map((id) =>
          waitFor(
            async () => {
              const view = await viewOf(watcher, id)
              return view.status === 'sent' ? view : undefined
            },
            { what: `message ${id} recorded sent` },
          ),
        ),
      )
      for (const view of views) {
        expect([members.a.id, members.c.id]).toContain(view.senderId)
        expect(view.senderPhoneNumberId).toBe(numberOf(view.senderId))
      }
    } finally {
      fake.number(NUMBERS.b, { answer: undefined })
    }
  }, 60_000)
})

describe("a pooled key's opt-outs", () => {
  const sendsFrom = (key: Key, phone: string) => [
    ...(['a', 'b', 'c'] as const).map((name) =>
      send(app, 'send-text', key.key, { phone, text: 'Your order shipped', senderId: members[name].id }),
    ),
    send(app, 'send-text', key.key, { phone, text: 'Your order shipped' }),
  ]

  /** A key of `tenantId` with a consent-events endpoint, bound to `bind` (a pool, or a sender). */
  async function consentKey(tenantId: string, bind: { senderPoolId: string } | { senderId: string }) {
    const key = await activeKey(app, {
      scopes: [...SEND_SCOPES, 'manage:suppressions', 'manage:webhooks', 'manage:data'],
      tenantId,
    })
    const bound = await admin('PATCH', `/api/admin/api-keys/${key.id}`, bind)
    expect(bound.statusCode, bound.body).toBe(200)
    await addWebhookEndpoint(app, key.key, {
      url: 'http://127.0.0.1:9/consent-events',
      events: ['recipient.opted_out', 'recipient.opted_in'],
    })
    return key
  }
  const consentEventsOf = (key: Key, phone: string) =>
    world.sql<{ type: string; senderId: string }[]>`
      select type, payload->'data'->>'senderId' as "senderId" from webhook_events
      where api_key_id = ${key.id} and type like 'recipient.%' and payload->'data'->>'phone' = ${phone}
      order by sequence`
  const keyGet = (key: Key, url: string) =>
    app.inject({ method: 'GET', url, headers: { 'x-api-key': key.key } })
  const keyLift = (key: Key, id: string) =>
    app.inject({
      method: 'DELETE',
      url: `/api/third-party/suppressions/${id}`,
      headers: { 'x-api-key': key.key },
      payload: { reason: 'the customer asked again' },
    })
  const addEntry = async (key: Key, phone: string) => {
    const res = await app.inject({
      method: 'POST',
      url: '/api/third-party/suppressions',
      headers: { 'x-api-key': key.key },
      payload: { phone, reason: 'asked us by e-mail' },
    })
    expect(res.statusCode, res.body).toBe(201)
    return res.json<{ id: string; senderId: string }>()
  }

  it("block its sends through every number of the pool: its tenant's, kept on its own sender (a member)", async () => {
    const phone = '+5511955500801'
    await addEntry(pooled, phone)
    for (const res of await Promise.all(sendsFrom(pooled, phone))) {
      expectError(res, 422, 'RECIPIENT_OPTED_OUT')
    }
    // Another tenant's key on the same pool is not blocked by this tenant's list.
    const other = await activeKey(app, { scopes: SEND_SCOPES, tenantId: 'initech' })
    const bound = await admin('PATCH', `/api/admin/api-keys/${other.id}`, { senderPoolId: pool.id })
    expect(bound.statusCode, bound.body).toBe(200)
    for (const res of await Promise.all(sendsFrom(other, phone))) expect(res.statusCode, res.body).toBe(202)
  })

  it("block its sends through every number of the pool: the recipient's STOP to one of them", async () => {
    const phone = '+5511955500802'
    const stop = { ...replyFrom(phone), text: { body: 'STOP' } }
    const res = await postPlatformWebhook(app, messageWebhook(NUMBERS.b, stop), APP_SECRET)
    expect(res.statusCode, res.body).toBe(200)
    await waitFor(
      async () => {
        const tried = await send(app, 'send-text', pooled.key, {
          phone,
          text: 'Your order shipped',
          senderId: members.b.id,
        })
        return tried.statusCode === 422 ? true : undefined
      },
      { what: 'the opt-out on b' },
    )
    const batch = await app.inject({
      method: 'POST',
      url: '/api/third-party/messages/batch',
      headers: { 'x-api-key': pooled.key },
      payload: {
        messages: [
          ...(['a', 'c'] as const).map((name) => ({
            type: 'text',
            phone,
            text: 'Your order shipped',
            senderId: members[name].id,
          })),
          { type: 'text', phone: '+5511955500803', text: 'Your order shipped' },
        ],
      },
    })
    expect(batch.statusCode, batch.body).toBe(202)
    const items = batch.json<{ results: Array<{ error?: { errorCode: string } }> }>().results
    expect(items.map((r) => r.error?.errorCode)).toEqual([
      'RECIPIENT_OPTED_OUT',
      'RECIPIENT_OPTED_OUT',
      undefined,
    ])
    for (const res of await Promise.all(sendsFrom(pooled, phone))) {
      expectError(res, 422, 'RECIPIENT_OPTED_OUT')
    }
    // Asked about, the key is told it is blocked: the recipient's own entry, on another number.
    const asked = await app.inject({
      method: 'GET',
      url: `/api/third-party/suppressions/${encodeURIComponent(phone)}`,
      headers: { 'x-api-key': pooled.key },
    })
    expect(asked.statusCode, asked.body).toBe(200)
    expect(asked.json()).toMatchObject({
      blocked: true,
      scope: 'all',
      entries: [{ owner: 'recipient', id: null, senderId: members.b.id }],
    })
  })

  it('hold again once Redis lost its copy and a worker rebuilt it; a START lifts them', async () => {
    const phone = '+5511955500806'
    const stop = { ...replyFrom(phone), text: { body: 'STOP' } }
    const res = await postPlatformWebhook(app, messageWebhook(NUMBERS.b, stop), APP_SECRET)
    expect(res.statusCode, res.body).toBe(200)
    const refusedOn = (name: 'a' | 'c') =>
      send(app, 'send-text', pooled.key, { phone, text: 'Your order shipped', senderId: members[name].id })
    await waitFor(async () => ((await refusedOn('a')).statusCode === 422 ? true : undefined), {
      what: 'the opt-out on b',
    })
    // What a Redis restart without persistence leaves: no entry, no list of numbers, no marker.
    const redis = app.deps.redis
    const hashed = recipientHasher({})(phone)
    const marker = suppressionsLoadedKey(world.queuePrefix)
    await redis.del(
      suppressionKey(world.queuePrefix, NUMBERS.b, hashed),
      optOutNumbersKey(world.queuePrefix, hashed),
      marker,
    )
    await waitFor(async () => ((await redis.exists(marker)) === 1 ? true : undefined), {
      what: 'the suppression copy rebuilt',
    })
    // Refused throughout, as the API learns the copy is whole again (it reads the marker once a
    // second) and reads the recipient's list of numbers instead of every member's entry.
    const until = Date.now() + 2_500
    while (Date.now() < until) {
      for (const res of await Promise.all([refusedOn('a'), refusedOn('c')])) {
        expectError(res, 422, 'RECIPIENT_OPTED_OUT')
      }
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    const start = { ...replyFrom(phone), text: { body: 'START' } }
    const lifted = await postPlatformWebhook(app, messageWebhook(NUMBERS.b, start), APP_SECRET)
    expect(lifted.statusCode, lifted.body).toBe(200)
    await waitFor(async () => ((await refusedOn('c')).statusCode === 202 ? true : undefined), {
      what: 'the START on b',
    })
    for (const res of await Promise.all(sendsFrom(pooled, phone))) expect(res.statusCode, res.body).toBe(202)
  })

  it("are not blocked by a recipient's STOP to a number outside the pool", async () => {
    // Another business's number (in a pool of its own): the pool's keys are not its senders. Not
    // the environment's `default`: which number that is, the API learns when the worker records
    // its own (a STOP sent to the API's first idea of it was sometimes to no sender of its keys).
    const phone = '+5511955500805'
    const stop = { ...replyFrom(phone), text: { body: 'STOP' } }
    const res = await postPlatformWebhook(app, messageWebhook(OUTSIDER_NUMBER, stop), APP_SECRET)
    expect(res.statusCode, res.body).toBe(200)
    // Recorded on the outsider: its own key is refused.
    const refused = await send(app, 'send-text', unpooled.key, { phone, text: 'Your order shipped' })
    expectError(refused, 422, 'RECIPIENT_OPTED_OUT')
    const sent = await send(app, 'send-text', pooled.key, { phone, text: 'Your order shipped' })
    expect(sent.statusCode, sent.body).toBe(202)
  })

  /** A text of the pooled key to `phone`, scheduled a few seconds ahead: its id. */
  async function scheduledTo(phone: string) {
    const sendAt = new Date(Date.now() + 6_000).toISOString()
    const res = await send(app, 'send-text', pooled.key, { phone, text: 'Your order shipped', sendAt })
    expect(res.statusCode, res.body).toBe(202)
    return res.json<{ messageId: string }>().messageId
  }
  /** The recipient's STOP to `number`; then the scheduled message is canceled, sent by no member. */
  async function stopCancels(messageId: string, phone: string, number: string) {
    const stop = { ...replyFrom(phone), text: { body: 'STOP' } }
    const webhook = await postPlatformWebhook(app, messageWebhook(number, stop), APP_SECRET)
    expect(webhook.statusCode, webhook.body).toBe(200)
    const done = await waitFor(
      async () => {
        const view = await viewOf(pooled, messageId)
        return view.status === 'queued' || view.status === 'scheduled' ? undefined : view
      },
      { what: 'the scheduled message settled', timeoutMs: 20_000 },
    )
    expect(done.status).toBe('canceled')
    expect(done.lastError?.message).toMatch(/opted out/)
    expect(Object.values(NUMBERS).some((n) => sentBy(n, messageId))).toBe(false)
  }

  it('stop a message accepted before the recipient opted out on another number of the pool', async () => {
    const phone = '+5511955500804'
    const messageId = await scheduledTo(phone)
    const chosen = (await viewOf(pooled, messageId)).senderId
    const other = (['a', 'b', 'c'] as const).find((k) => members[k].id !== chosen) as 'a'
    await stopCancels(messageId, phone, NUMBERS[other])
  })

  it('stop a message accepted before a number joined the pool, once the recipient opts out on that number', async () => {
    // The worker reads the pool's numbers at delivery: a number that joined since counts too.
    const joining = await createSender('306540352240055', '7001')
    const phone = '+5511955500805'
    const messageId = await scheduledTo(phone)
    const joined = await admin('PATCH', `/api/admin/sender-pools/${pool.id}`, {
      members: acmeMembers([{ senderId: joining.id }]),
    })
    expect(joined.statusCode, joined.body).toBe(200)
    try {
      await stopCancels(messageId, phone, joining.phoneNumberId)
    } finally {
      const left = await admin('PATCH', `/api/admin/sender-pools/${pool.id}`, { members: acmeMembers() })
      expect(left.statusCode, left.body).toBe(200)
    }
  })

  it("are its tenant's to list, read, lift and export on every number of the pool, not another tenant's nor a number outside it", async () => {
    const phone = '+5511955500807'
    const acmePooled = await consentKey('acme', { senderPoolId: pool.id })
    const initechPooled = await consentKey('initech', { senderPoolId: pool.id })
    // The tenant's entry on member c, added by its key of that number alone.
    const acmeOnC = await consentKey('acme', { senderId: members.c.id })
    const onC = await addEntry(acmeOnC, phone)
    expect(onC.senderId).toBe(members.c.id)
    // The same tenant's entry on a number outside the pool: not the pooled key's.
    const acmeOutside = await consentKey('acme', { senderId: outsider.id })
    const outside = await addEntry(acmeOutside, phone)

    const listed = await keyGet(
      acmePooled,
      `/api/third-party/suppressions?recipient=${encodeURIComponent(phone)}`,
    )
    expect(listed.statusCode, listed.body).toBe(200)
    expect(listed.json()).toMatchObject({ itemCount: 1, data: [{ id: onC.id, senderId: members.c.id }] })
    expect((await keyGet(acmePooled, `/api/third-party/suppressions/${onC.id}`)).json()).toMatchObject({
      id: onC.id,
      tenantId: 'acme',
    })
    expectError(await keyGet(acmePooled, `/api/third-party/suppressions/${outside.id}`), 404, 'NOT_FOUND')
    expectError(await keyLift(acmePooled, outside.id), 404, 'NOT_FOUND')
    // Its export of the recipient holds what blocks it on the pool (the entry on c), nothing outside.
    const exportOf = async (key: Key) => {
      const res = await keyGet(key, `/api/third-party/recipients/${encodeURIComponent(phone)}/export`)
      expect(res.statusCode, res.body).toBe(200)
      return res.body
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as { kind: string; id?: string })
        .filter((line) => line.kind === 'suppression')
        .map((line) => line.id)
    }
    expect(await exportOf(acmePooled)).toEqual([onC.id])
    expect(await exportOf(initechPooled)).toEqual([])
    // Another tenant's key on the same pool: none of acme's entries, as if absent.
    const theirs = await keyGet(
      initechPooled,
      `/api/third-party/suppressions?recipient=${encodeURIComponent(phone)}`,
    )
    expect(theirs.json()).toMatchObject({ itemCount: 0, data: [] })
    expectError(await keyGet(initechPooled, `/api/third-party/suppressions/${onC.id}`), 404, 'NOT_FOUND')
    expectError(await keyLift(initechPooled, onC.id), 404, 'NOT_FOUND')

    // The entry on c blocks the pooled key there; the pooled key lifts it, and sends again.
    const throughC = () =>
      send(app, 'send-text', acmePooled.key, { phone, text: 'Your order shipped', senderId: members.c.id })
    expectError(await throughC(), 422, 'RECIPIENT_OPTED_OUT')
    const lifted = await keyLift(acmePooled, onC.id)
    expect(lifted.statusCode, lifted.body).toBe(200)
    expect((await throughC()).statusCode).toBe(202)
    const [audit] = await world.sql<{ actor: string; senderId: string }[]>`
      select actor, details->>'senderId' as "senderId" from admin_audit_log where target_id = ${onC.id}`
    expect(audit).toEqual({ actor: `key:${acmePooled.id}`, senderId: members.c.id })
    // Still listed and lifted by the key of the number outside the pool only.
    expect((await keyGet(acmeOutside, `/api/third-party/suppressions/${outside.id}`)).statusCode).toBe(200)

    // The pooled key heard of the entry on its member and of its lift; another tenant's, nothing.
    await waitFor(async () => ((await consentEventsOf(acmePooled, phone)).length === 2 ? true : undefined), {
      what: "the pooled key's consent events",
    })
    expect(await consentEventsOf(acmePooled, phone)).toEqual([
      { type: 'recipient.opted_out', senderId: members.c.id },
      { type: 'recipient.opted_in', senderId: members.c.id },
    ])
    expect(await consentEventsOf(initechPooled, phone)).toEqual([])
  })

  it('reach its endpoints when the recipient opts out of any number of the pool, and not of a number outside it', async () => {
    const phone = '+5511955500808'
    const acmePooled = await consentKey('acme', { senderPoolId: pool.id })
    const initechPooled = await consentKey('initech', { senderPoolId: pool.id })
    const onOutsider = await consentKey('globex', { senderId: outsider.id })
    const stop = { ...replyFrom(phone), text: { body: 'STOP' } }
    const res = await postPlatformWebhook(app, messageWebhook(NUMBERS.b, stop), APP_SECRET)
    expect(res.statusCode, res.body).toBe(200)
    // The recipient's own opt-out is everyone's: every key of the pool hears of it, whatever its tenant.
    for (const key of [acmePooled, initechPooled]) {
      const events = await waitFor(
        async () => {
          const found = await consentEventsOf(key, phone)
          return found.length ? found : undefined
        },
        { what: 'the opt-out event' },
      )
      expect(events).toEqual([{ type: 'recipient.opted_out', senderId: members.b.id }])
    }
    expect(await consentEventsOf(onOutsider, phone)).toEqual([])
    // A STOP to the number outside the pool: its key hears of it, the pool's keys do not.
    const other = '+5511955500809'
    const outsideStop = { ...replyFrom(other), text: { body: 'STOP' } }
    const sent = await postPlatformWebhook(app, messageWebhook(OUTSIDER_NUMBER, outsideStop), APP_SECRET)
    expect(sent.statusCode, sent.body).toBe(200)
    await waitFor(async () => ((await consentEventsOf(onOutsider, other)).length ? true : undefined), {
      what: "the outsider's opt-out event",
    })
    expect(await consentEventsOf(acmePooled, other)).toEqual([])
    expect(await consentEventsOf(initechPooled, other)).toEqual([])
  })
})
