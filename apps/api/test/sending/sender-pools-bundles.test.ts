import { randomBytes } from 'node:crypto'
import {
  type MessageView,
  SENDER_CHANGES_CHANNEL,
  type SenderPoolView,
  type SenderView,
} from '@dispatch/contracts'
import { fairKeys, MESSAGE_JOB_OPTIONS } from '@dispatch/runtime/message-handoff'
import { captureLogs, type FakeWhatsApp, graphError, startFakeWhatsApp, waitFor } from '@dispatch/testing'
import type { RunningWorker } from '@dispatch/worker'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  activeKey,
  addWebhookEndpoint,
  asAdmin,
  bindKeyToPool,
  buildTestApp,
  createWorld,
  SEND_SCOPES,
  send,
  startTestWorker,
  type TestApp,
  type TestWorld,
} from '../helpers.ts'

/**
 * Bundles of several messages on a pool's number that falls while a worker holds them
 * (docs/sender-pools.md, "Messages waiting on a fallen number"): what the bundle has not sent moves to a
 * healthy member, each message sent once, from its new number; and a message moved between its
 * attempts gets no more attempts in all than the maximum. Real Postgres and Redis, a worker with
 * bundles of up to 20 (the default), the fake Cloud API.
 */
const NUMBERS = { a: '506540352240011', b: '506540352240022', c: '506540352240033' }
const TOLERANCE_MS = 1000

let world: TestWorld
let app: TestApp
let fake: FakeWhatsApp
let worker: RunningWorker
const members = {} as Record<'a' | 'b' | 'c', SenderView>
let key: { id: string; key: string }
/** The worker's log: which path moved each message (a bundle's hand-off, or the mover's pass). */
const logs = captureLogs()
/** Messages moved by each path so far, as the worker logged them. */
const movedBy = () => {
  const count = (msg: string) =>
    logs.lines
      .map((line) => JSON.parse(line) as { msg?: string; moved?: number })
      .filter((entry) => entry.msg === msg)
      .reduce((sum, entry) => sum + (entry.moved ?? 0), 0)
  return {
    bundles: count('messages a worker held handed off a fallen pool number'),
    passes: count('waiting messages moved off fallen pool numbers'),
  }
}

beforeAll(async () => {
  world = await createWorld()
  fake = await startFakeWhatsApp()
  app = await buildTestApp(world, {
    MESSAGE_RATE_PER_SECOND: '10000',
    POOL_RATE_LIMIT_TOLERANCE_SECONDS: String(TOLERANCE_MS / 1000),
  })
  worker = await startTestWorker(
    world,
    {
      WORKER_QUEUES: 'messages',
      LOG_LEVEL: 'info',
      WHATSAPP_API_URL: fake.url,
      WHATSAPP_ACCESS_TOKEN: 'EAAG-bundle-default-token',
      WHATSAPP_PHONE_NUMBER_ID: '106540352259901',
      ADMISSION_INTERVAL_MS: '20',
      MESSAGES_BACKOFF_MS: '100',
      // Two platform calls at a time per number: a bundle of twelve is held a while.
      MESSAGES_CONCURRENCY: '2',
      POOL_RATE_LIMIT_TOLERANCE_SECONDS: String(TOLERANCE_MS / 1000),
    },
    logs.stream,
  )
  for (const name of ['a', 'b', 'c'] as const) {
    const token = `EAAG${randomBytes(18).toString('base64url')}`
    fake.number(NUMBERS[name], { token })
    const res = await app.inject({
      method: 'POST',
      url: '/api/admin/senders',
      headers: asAdmin(),
      payload: {
        phoneNumberId: NUMBERS[name],
        displayName: `Bundle run ${name}`,
        accessToken: token,
        businessId: '7201',
        wabaId: '97201',
        ratePerSecond: 200,
      },
    })
    expect(res.statusCode, res.body).toBe(201)
    members[name] = res.json<SenderView>()
  }
  const created = await app.inject({
    method: 'POST',
    url: '/api/admin/sender-pools',
    headers: asAdmin(),
    payload: {
      name: 'Bundle run',
      members: (['a', 'b', 'c'] as const).map((n) => ({ senderId: members[n].id })),
    },
  })
  expect(created.statusCode, created.body).toBe(201)
  const pool = created.json<SenderPoolView>()
  key = await activeKey(app, { scopes: [...SEND_SCOPES, 'manage:webhooks'] })
  await addWebhookEndpoint(app, key.key, {
    url: 'http://127.0.0.1:9/bundle-moves',
    events: ['message.sender_changed'],
  })
  await bindKeyToPool(app, key.id, pool.id)
})
afterAll(async () => {
  await worker?.close()
  await app?.close()
  await fake?.close()
  await world?.close()
})

const viewOf = (id: string) =>
  app
    .inject({ method: 'GET', url: `/api/third-party/messages/${id}`, headers: { 'x-api-key': key.key } })
    .then((res) => res.json<MessageView>())

/** `count` texts to new recipients, each naming `member` (so it waits on that number). */
async function sendThrough(member: SenderView, count: number, tag: string): Promise<string[]> {
  return Promise.all(
    Array.from({ length: count }, async (_, i) => {
      const res = await send(app, 'send-text', key.key, {
        phone: `+55119${tag}${String(i).padStart(4, '0')}`,
        text: 'bundled',
        senderId: member.id,
      })
      expect(res.statusCode, res.body).toBe(202)
      return res.json<{ messageId: string }>().messageId
    }),
  )
}

/** When the fake accepted the last of these messages (ms). */
const lastAccepted = (ids: string[]) => {
  const wanted = new Set(ids)
  return Math.max(
    ...fake.requests
      .filter((r) => r.platformMessageId && wanted.has(r.messageId ?? ''))
      .map((r) => r.receivedAt),
  )
}

const numberOf = (senderId: string | null) =>
  Object.values(members).find((m) => m.id === senderId)?.phoneNumberId
/** The number whose accepted send carried the message, if any. */
const sentThrough = (id: string) =>
  Object.values(NUMBERS).find((number) => fake.sentFrom(number).some((r) => r.messageId === id))

/**
 * Once every message is sent: each sent once, the `moved` of them (each with its event) from a member
 * other than `fallen`, and every record naming the number that sent it.
 */
async function expectMovedAndSentOnce(ids: string[], moved: number, fallen: SenderView, reason: string) {
  for (const id of ids) expect(fake.sendsOf(id), `sends of ${id}`).toBe(1)
  const events = await waitFor(
    async () => {
      const rows = await world.sql`select message_id, payload from webhook_events
        where type = 'message.sender_changed' and api_key_id = ${key.id} and message_id in ${world.sql(ids)}`
      return rows.length >= moved ? rows : undefined
    },
    { what: `${moved} message.sender_changed events` },
  )
  expect(events).toHaveLength(moved)
  for (const event of events) {
    expect(event.payload.data.senderChanged).toMatchObject({ from: fallen.id, reason })
    expect(sentThrough(event.message_id as string)).not.toBe(fallen.phoneNumberId)
  }
  const views = await Promise.all(
    ids.map((id) =>
      waitFor(
        async () => {
          const view = await viewOf(id)
          return view.status === 'sent' ? view : undefined
        },
        { what: `message ${id} recorded sent` },
      ),
    ),
  )
  for (const view of views) {
    expect(view.senderPhoneNumberId).toBe(numberOf(view.senderId))
    expect(sentThrough(view.messageId)).toBe(view.senderPhoneNumberId)
  }
  // The worker's log says which path moved them (its lines reach the test a moment later).
  return waitFor(
    () => {
      const by = movedBy()
      return by.bundles + by.passes - movedBefore >= moved ? by : undefined
    },
    { what: 'the moves in the worker log' },
  )
}
/** Moves the worker logged before the current test. */
let movedBefore = 0

describe('a bundle a worker holds on a number that falls', () => {
  it('rate limited (130429) past the tolerance: its messages go out once each, from a healthy member, within the tolerance and a little', async () => {
    fake.number(NUMBERS.b, { answer: graphError(130429, '(#130429) Rate limit hit') })
    const fair = fairKeys(world.queuePrefix, members.b.id)
    try {
      const before = movedBy()
      movedBefore = before.bundles + before.passes
      const start = Date.now()
      const ids = await sendThrough(members.b, 12, '71')
      // Admitted together as a bundle (the bundle index names them) before B can fall.
      await waitFor(async () => ((await app.deps.redis.hlen(fair.bundled)) >= 2 ? true : undefined), {
        what: "the messages bundled on B's queue",
        timeoutMs: 900,
      })
      await waitFor(() => (ids.every((id) => sentThrough(id) !== undefined) ? true : undefined), {
        what: 'every message sent through A or C',
        timeoutMs: 20_000,
        intervalMs: 10,
      })
      const took = Date.now() - start
      const lastSent = lastAccepted(ids)
      const after = await expectMovedAndSentOnce(ids, ids.length, members.b, 'rate_limited')
      // B's refusals: the first starts its streak, which the tolerance is held against.
      const refused = fake.requests
        .filter((r) => ids.includes(r.messageId ?? '') && r.path.includes(NUMBERS.b))
        .map((r) => r.receivedAt - start)
      const streak = Math.min(...refused)
      console.log(
        `bundle on a rate-limited number: ${ids.length} moved (${after.bundles - before.bundles} ` +
          `handed over by their bundle, ${after.passes - before.passes} by the mover's pass); B refused ` +
          `them at ${[...new Set(refused)].join(', ')} ms, the last sent elsewhere at ${lastSent - start} ms ` +
          `(tolerance ${TOLERANCE_MS} ms; seen sent after ${took} ms)`,
      )
      expect(lastSent - start - streak).toBeLessThanOrEqual(TOLERANCE_MS + 2000)
    } finally {
      fake.number(NUMBERS.b, { answer: undefined })
    }
  }, 60_000)
})

/** Sets a member's quality and announces it, as a quality webhook does (senders:changed). */
async function setQuality(member: SenderView, rating: 'RED' | null) {
  await world.sql`update senders set quality_rating = ${rating} where id = ${member.id}`
  await app.deps.redis.publish(`${world.queuePrefix}:${SENDER_CHANGES_CHANNEL}`, member.id)
}

describe('a bundle a worker is sending when its number turns RED', () => {
  it('hands over what it has not sent yet: each message once, the fallen number sends only the calls under way', async () => {
    fake.latencyMs = 250
    try {
      const ids = await sendThrough(members.a, 12, '72')
      // Under way on A, two calls at a time, 250 ms each: the bundle is held about 1.5 s.
      await waitFor(() => (ids.some((id) => sentThrough(id) === NUMBERS.a) ? true : undefined), {
        what: 'the bundle sending on A',
        timeoutMs: 5000,
        intervalMs: 5,
      })
      const before = movedBy()
      movedBefore = before.bundles + before.passes
      const fellAt = Date.now()
      await setQuality(members.a, 'RED')
      await waitFor(() => (ids.every((id) => sentThrough(id) !== undefined) ? true : undefined), {
        what: 'every message sent',
        timeoutMs: 20_000,
      })
      const onA = ids.filter((id) => sentThrough(id) === NUMBERS.a)
      const lastOnA = lastAccepted(onA)
      const moved = ids.length - onA.length
      expect(onA.length).toBeGreaterThan(0)
      expect(moved).toBeGreaterThan(0)
      const after = await expectMovedAndSentOnce(ids, moved, members.a, 'quality_red')
      console.log(
        `bundle on a number turned RED: ${onA.length} sent on it (the last ${lastOnA - fellAt} ms after ` +
          `it fell), ${moved} moved (${after.bundles - before.bundles} handed over by their bundle)`,
      )
      // The bundle under way handed its unsent messages over itself.
      expect(after.bundles - before.bundles).toBeGreaterThan(0)
      // Only the calls under way when it fell (two places of 250 ms) went out on A after.
      expect(lastOnA - fellAt).toBeLessThanOrEqual(1000)
    } finally {
      fake.latencyMs = 0
      await setQuality(members.a, null)
    }
  }, 60_000)
})

describe('a message moved off a fallen number between its attempts', () => {
  it('makes no more attempts in all than the maximum', async () => {
    const failing = graphError(131000, 'Something went wrong', 500)
    for (const number of Object.values(NUMBERS)) fake.number(number, { answer: failing })
    try {
      const [id] = await sendThrough(members.c, 1, '73')
      const calls = () => fake.requests.filter((r) => r.messageId === id)
      await waitFor(() => (calls().length >= 1 ? true : undefined), {
        what: 'a first attempt on C',
        timeoutMs: 5000,
        intervalMs: 5,
      })
      await setQuality(members.c, 'RED')
      const view = await waitFor(
        async () => {
          const found = await viewOf(id as string)
          return found.status === 'failed' ? found : undefined
        },
        { what: 'the message failed for good', timeoutMs: 40_000, intervalMs: 100 },
      )
      // No attempt after the last.
      await new Promise((resolve) => setTimeout(resolve, 500))
      const onC = calls().filter((r) => r.path.includes(NUMBERS.c)).length
      console.log(`attempts on the fallen number ${onC}, after the move ${calls().length - onC}`)
      expect(onC).toBeGreaterThanOrEqual(1)
      expect(calls().length - onC).toBeGreaterThanOrEqual(1)
      expect(calls()).toHaveLength(MESSAGE_JOB_OPTIONS.attempts)
      expect(view.attempts).toBe(MESSAGE_JOB_OPTIONS.attempts)
      expect([members.a.id, members.b.id]).toContain(view.senderId)
    } finally {
      for (const number of Object.values(NUMBERS)) fake.number(number, { answer: undefined })
      await setQuality(members.c, null)
    }
  }, 60_000)
})
