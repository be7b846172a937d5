import { randomBytes } from 'node:crypto'
import type { MessageView, SenderPoolView, SenderView } from '@dispatch/contracts'
import { type ChoiceMember, decodeSticky, poolStickyKey, spreadByWeight } from '@dispatch/runtime'
import {
  captureLogs,
  type FakeWhatsApp,
  graphError,
  type LocalRedisCluster,
  messageWebhook,
  redisClusterMissing,
  startFakeWhatsApp,
  startRedisCluster,
  waitFor,
} from '@dispatch/testing'
import type { RunningWorker } from '@dispatch/worker'
import { Cluster, Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  activeKey,
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
} from '../helpers.ts'

/**
 * A key bound to a sender pool on a real Redis Cluster (docs/sender-pools.md): three
 * masters started here, two API instances and a worker with REDIS_CLUSTER=true. The recipients'
 * sticky records are strings on many slots (a GET each in a turn's reads, a SET each written), and
 * the pool mover's steps touch one fallen number's keys and another's: a command across slots
 * would fail here with CROSSSLOT, which a single Redis never shows. Recipients are picked by the
 * spread itself, so a number kept is the record's doing, not the spread's.
 */
const APP_SECRET = 'whatsapp-app-secret-for-pool-cluster-tests'
const DEFAULT_NUMBER = '106540352250001'
const NUMBERS = { a: '306540352250011', b: '306540352250022', c: '306540352250033' }
type Name = keyof typeof NUMBERS
const NAMES = ['a', 'b', 'c'] as const

let cluster: LocalRedisCluster
let world: TestWorld
let fake: FakeWhatsApp
let app: TestApp
let second: TestApp
let worker: RunningWorker
let reader: Cluster
const workerLogs = captureLogs()
const members = {} as Record<Name, SenderView>
let pool: SenderPoolView
let pooled: { id: string; key: string }

const missing = redisClusterMissing()
if (missing) console.warn(`Redis Cluster tests skipped: ${missing}`)

const admin = (method: 'GET' | 'POST' | 'PATCH', url: string, payload?: object) =>
  app.inject({ method, url, headers: asAdmin(), ...(payload ? { payload } : {}) })

const viewOf = (id: string, on: TestApp = app) =>
  on
    .inject({ method: 'GET', url: `/api/third-party/messages/${id}`, headers: { 'x-api-key': pooled.key } })
    .then((res) => res.json<MessageView>())

/** A text from the pooled key; its message id. */
async function accept(on: TestApp, phone: string, extra: Record<string, unknown> = {}): Promise<string> {
  const res = await send(on, 'send-text', pooled.key, { phone, text: 'Your order shipped', ...extra })
  expect(res.statusCode, res.body).toBe(202)
  return res.json<{ messageId: string }>().messageId
}

/** Resolves with the message's view once the worker recorded it sent. */
const untilSent = (id: string, timeoutMs = 20_000) =>
  waitFor(
    async () => {
      const view = await viewOf(id)
      return view.status === 'sent' ? view : undefined
    },
    { what: `message ${id} sent`, timeoutMs, intervalMs: 100 },
  )

const nameOf = (senderId: string | null) => NAMES.find((name) => members[name].id === senderId)
const sentBy = (name: Name, id: string) => fake.sentFrom(NUMBERS[name]).some((r) => r.messageId === id)

/** Phones the spread over every member (all healthy) gives to `name`: a series of its own per test. */
let series = 0
function phonesSpreadTo(name: Name, count: number): string[] {
  const choice: ChoiceMember[] = NAMES.map((n) => ({ senderId: members[n].id, weight: 1, excluded: null }))
  const prefix = `+55119${String(++series).padStart(2, '0')}`
  const phones: string[] = []
  for (let n = 0; phones.length < count; n++) {
    const phone = `${prefix}${String(n).padStart(6, '0')}`
    if (spreadByWeight(choice, phone) === members[name].id) phones.push(phone)
  }
  return phones
}

let wamids = 0
const replyFrom = (phone: string) => ({
  from: phone.slice(1),
  id: `wamid.pool-cluster-reply-${++wamids}.${Date.now()}`,
  timestamp: String(Math.floor(Date.now() / 1000)),
  type: 'text',
  text: { body: 'Where is it?' },
})

/** Each master's own count of keys matching `match`: where the cluster really put them. */
async function keysPerMaster(match: string): Promise<number[]> {
  return Promise.all(
    cluster.ports.map(async (port) => {
      const node = new Redis({ host: '127.0.0.1', port })
      try {
        let count = 0
        for await (const keys of node.scanStream({ match, count: 1000 }) as AsyncIterable<string[]>)
          count += keys.length
        return count
      } finally {
        node.disconnect()
      }
    }),
  )
}

/** A recipient's sticky record in the pool, read through a cluster client of the test's own. */
const stickyOf = async (recipient: string) =>
  decodeSticky(await reader.get(poolStickyKey(world.queuePrefix, pool.id, recipient)))

/** Both API instances learn a member's health now (as an announcement would make them). */
const refreshPools = () => Promise.all([app.sending.pools.refresh(), second.sending.pools.refresh()])

describe.skipIf(missing !== undefined)(
  `a pooled key on a local Redis Cluster${missing ? ` (skipped: ${missing})` : ''}`,
  () => {
    beforeAll(async () => {
      cluster = await startRedisCluster({ masters: 3 })
      world = { ...(await createWorld()), redisUrl: cluster.url }
      fake = await startFakeWhatsApp()
      reader = new Cluster([{ host: '127.0.0.1', port: cluster.ports[0] as number }])
      const apiEnv = {
        REDIS_URL: cluster.url,
        REDIS_CLUSTER: 'true',
        WHATSAPP_APP_SECRET: APP_SECRET,
        MESSAGE_RATE_PER_SECOND: '10000',
        POOL_RATE_LIMIT_TOLERANCE_SECONDS: '1',
        SCHEDULE_MIN_AHEAD_SECONDS: '1',
        WHATSAPP_API_URL: fake.url,
      }
      app = await buildTestApp(world, apiEnv)
      second = await buildTestApp(world, apiEnv)
      worker = await startTestWorker(
        world,
        {
          REDIS_URL: cluster.url,
          REDIS_CLUSTER: 'true',
          WORKER_QUEUES: 'messages',
          WHATSAPP_API_URL: fake.url,
          WHATSAPP_ACCESS_TOKEN: 'EAAG-pool-cluster-default-token',
          WHATSAPP_PHONE_NUMBER_ID: DEFAULT_NUMBER,
          ADMISSION_INTERVAL_MS: '20',
          MESSAGES_BACKOFF_MS: '20',
          POOL_RATE_LIMIT_TOLERANCE_SECONDS: '1',
          // A message's own job each: a job a worker holds (a bundle meeting a 130429) does not move.
          MESSAGES_BUNDLE_SIZE: '1',
          LOG_LEVEL: 'warn',
        },
        workerLogs.stream,
      )
      for (const name of NAMES) {
        const token = `EAAG${randomBytes(18).toString('base64url')}`
        fake.number(NUMBERS[name], { token })
        const res = await admin('POST', '/api/admin/senders', {
          phoneNumberId: NUMBERS[name],
          displayName: `Cluster number ${name}`,
          accessToken: token,
          businessId: '7401',
          wabaId: '97401',
        })
        expect(res.statusCode, res.body).toBe(201)
        members[name] = res.json<SenderView>()
      }
      const created = await admin('POST', '/api/admin/sender-pools', {
        name: 'Cluster numbers',
        members: NAMES.map((name) => ({ senderId: members[name].id, weight: 1 })),
      })
      expect(created.statusCode, created.body).toBe(201)
      pool = created.json<SenderPoolView>()
      pooled = await activeKey(app, { scopes: [...SEND_SCOPES, 'manage:webhooks'], tenantId: 'acme' })
      const bound = await admin('PATCH', `/api/admin/api-keys/${pooled.id}`, { senderPoolId: pool.id })
      expect(bound.statusCode, bound.body).toBe(200)
      // Moves are recorded as events of the key's endpoints (no worker delivers them here).
      await addWebhookEndpoint(app, pooled.key, {
        url: 'http://127.0.0.1:9/pool-cluster',
        events: ['message.sender_changed'],
      })
      await waitFor(
        () => (app.sending.pools.get(pool.id) && second.sending.pools.get(pool.id)) || undefined,
        {
          what: 'the pool loaded by both API instances',
        },
      )
    }, 120_000)

    afterAll(async () => {
      await worker?.close()
      await second?.close()
      await app?.close()
      await fake?.close()
      reader?.disconnect()
      await world?.close()
      await cluster?.stop()
    }, 60_000)

    it('keeps a recipient on the number a send named, across sends on both instances', async () => {
      // The spread would give this recipient A: B is the record's doing.
      const [phone] = phonesSpreadTo('a', 1) as [string]
      const first = await untilSent(await accept(app, phone, { senderId: members.b.id }))
      expect(first.senderId).toBe(members.b.id)
      for (const on of [second, app, second]) {
        const next = await untilSent(await accept(on, phone))
        expect(next.senderId).toBe(members.b.id)
        expect(sentBy('b', next.messageId)).toBe(true)
      }
    })

    it('writes and reads a batch’s records on many slots: each recipient keeps the member named for them', async () => {
      // 30 recipients, 10 the spread gives each member; each named the member after its own.
      const phones = NAMES.flatMap((name) => phonesSpreadTo(name, 10).map((phone) => ({ phone, name })))
      const named = (name: Name) => NAMES[(NAMES.indexOf(name) + 1) % NAMES.length] as Name
      const batch = (on: TestApp, messages: object[]) =>
        on.inject({
          method: 'POST',
          url: '/api/third-party/messages/batch',
          headers: { 'x-api-key': pooled.key },
          payload: { messages },
        })
      const first = await batch(
        second,
        phones.map(({ phone, name }) => ({
          type: 'text',
          phone,
          text: 'first',
          senderId: members[named(name)].id,
        })),
      )
      expect(first.statusCode, first.body).toBe(202)
      const firstIds = first.json<{ results: { messageId: string }[] }>().results.map((r) => r.messageId)
      expect(firstIds).toHaveLength(phones.length)
      // The records are written once the messages are stored, not awaited by the answer: each
      // recipient's names the member named for them, on whichever master its slot is.
      await waitFor(
        async () => {
          const records = await Promise.all(phones.map(({ phone }) => stickyOf(phone)))
          return records.every(
            (r, i) => r?.senderId === members[named((phones[i] as { name: Name }).name)].id,
          )
            ? true
            : undefined
        },
        { what: 'the batch’s sticky records written' },
      )
      const perMaster = await keysPerMaster(`${world.queuePrefix}:pool-sticky:*`)
      expect(
        perMaster.filter((n) => n > 0).length,
        `records per master: ${perMaster}`,
      ).toBeGreaterThanOrEqual(2)

      const again = await batch(
        app,
        phones.map(({ phone }) => ({ type: 'text', phone, text: 'again' })),
      )
      expect(again.statusCode, again.body).toBe(202)
      const againIds = again.json<{ results: { messageId: string }[] }>().results.map((r) => r.messageId)
      const views = await Promise.all([...firstIds, ...againIds].map((id) => untilSent(id, 30_000)))
      views.forEach((view, i) => {
        const { name } = phones[i % phones.length] as { name: Name }
        expect(nameOf(view.senderId), `${view.messageId} to ${view.phone}`).toBe(named(name))
        expect(fake.sendsOf(view.messageId)).toBe(1)
      })
    }, 60_000)

    it('routes a reply to another member to the key, and sticks the user to the number they wrote to', async () => {
      const [phone] = phonesSpreadTo('a', 1) as [string]
      const first = await untilSent(await accept(app, phone))
      expect(first.senderId).toBe(members.a.id)
      const reply = replyFrom(phone)
      const res = await postPlatformWebhook(second, messageWebhook(NUMBERS.c, reply), APP_SECRET)
      expect(res.statusCode, res.body).toBe(200)
      const routed =
        await world.sql`select api_key_id from inbound_messages where platform_message_id = ${reply.id}`
      expect(routed[0]?.api_key_id).toBe(pooled.id)
      const next = await untilSent(await accept(app, phone))
      expect(next.senderId).toBe(members.c.id)
      expect(sentBy('c', next.messageId)).toBe(true)
    })

    it('moves messages waiting on a fallen member to healthy ones, each sent once; a recipient in an open window stays', async () => {
      // Four recipients the spread gives A, all waiting on A; the last wrote to A (window open).
      const phones = phonesSpreadTo('a', 4)
      const sendAt = new Date(Date.now() + 8_000).toISOString()
      const ids: string[] = []
      for (const [n, phone] of phones.entries()) {
        ids.push(await accept(n % 2 ? second : app, phone, { sendAt, senderId: members.a.id }))
      }
      const windowed = phones[3] as string
      const reply = await postPlatformWebhook(app, messageWebhook(NUMBERS.a, replyFrom(windowed)), APP_SECRET)
      expect(reply.statusCode, reply.body).toBe(200)

      await world.sql`update senders set quality_rating = 'RED' where id = ${members.a.id}`
      await refreshPools()
      let moved: MessageView[] = []
      try {
        moved = await waitFor(
          async () => {
            const views = await Promise.all(ids.slice(0, 3).map((id) => viewOf(id, second)))
            return views.every((v) => v.senderId !== members.a.id) ? views : undefined
          },
          { what: 'the waiting messages moved off member A', timeoutMs: 7_000, intervalMs: 100 },
        )
        for (const view of moved) {
          expect(['b', 'c']).toContain(nameOf(view.senderId))
          expect(view.status).toBe('scheduled')
        }
        const events = await world.sql`select message_id, payload from webhook_events
          where type = 'message.sender_changed' and api_key_id = ${pooled.id}`
        expect(events.map((e) => e.message_id).sort()).toEqual(ids.slice(0, 3).sort())
        expect(events[0]?.payload.data.senderChanged).toMatchObject({
          from: members.a.id,
          reason: 'quality_red',
        })

        // Due: each goes out once, the moved ones from their new number, the windowed one from A.
        const sent = await Promise.all(ids.map((id) => untilSent(id, 30_000)))
        sent.forEach((view, i) => {
          expect(fake.sendsOf(view.messageId)).toBe(1)
          if (i < 3) {
            expect(view.senderId).toBe((moved[i] as MessageView).senderId)
            expect(sentBy(nameOf(view.senderId) as Name, view.messageId)).toBe(true)
            expect(sentBy('a', view.messageId)).toBe(false)
          } else {
            expect(view.senderId).toBe(members.a.id)
            expect(sentBy('a', view.messageId)).toBe(true)
          }
        })
      } finally {
        await world.sql`update senders set quality_rating = null where id = ${members.a.id}`
        await refreshPools()
      }
      // A is back in rotation and the spread gives them A again: the mover's records keep them.
      for (const [i, phone] of phones.slice(0, 3).entries()) {
        const next = await untilSent(await accept(i % 2 ? app : second, phone))
        expect(next.senderId).toBe((moved[i] as MessageView).senderId)
      }
    }, 60_000)

    it('moves messages already in a rate-limited member’s queue, each sent once and never by it', async () => {
      // B answers every send 130429: its first message meets the limit, and the others admitted
      // into its queue sit there while it is paused; past the 1 s tolerance B is out of rotation.
      fake.number(NUMBERS.b, { answer: graphError(130429, '(#130429) Rate limit hit') })
      try {
        const phones = phonesSpreadTo('b', 6)
        const ids = await Promise.all(
          phones.map((phone, n) => accept(n % 2 ? second : app, phone, { senderId: members.b.id })),
        )
        const sent = await waitFor(
          () => {
            const from = ids.map((id) => (['a', 'c'] as const).find((name) => sentBy(name, id)))
            return from.every((name) => name !== undefined) ? from : undefined
          },
          { what: "B's waiting messages sent through A or C", timeoutMs: 30_000, intervalMs: 100 },
        )
        expect(sent).toHaveLength(ids.length)
        for (const id of ids) {
          expect(fake.sendsOf(id)).toBe(1)
          expect(sentBy('b', id)).toBe(false)
        }
        const views = await Promise.all(ids.map((id) => untilSent(id)))
        for (const view of views) expect(['a', 'c']).toContain(nameOf(view.senderId))
        const events = await waitFor(
          async () => {
            const rows = await world.sql`select message_id, payload from webhook_events
              where type = 'message.sender_changed' and message_id in ${world.sql(ids)}`
            return rows.length >= ids.length ? rows : undefined
          },
          { what: 'a message.sender_changed event per message' },
        )
        for (const event of events) {
          expect(event.payload.data.senderChanged).toMatchObject({
            from: members.b.id,
            reason: 'rate_limited',
          })
        }
      } finally {
        fake.number(NUMBERS.b, { answer: undefined })
      }
    }, 60_000)

    it('no process logged a Redis Cluster error (a script, transaction or pipeline across slots)', () => {
      const lines = [...app.logs.lines, ...second.logs.lines, ...workerLogs.lines]
      expect(lines.length).toBeGreaterThan(0)
      const slotErrors = lines.filter((line) =>
        /CROSSSLOT|same slot|slots allocation|CLUSTERDOWN/i.test(line),
      )
      expect(slotErrors.join('\n')).toBe('')
      // Sticky records not read or written are logged as warnings: none may be.
      expect(lines.filter((line) => /sticky sender/i.test(line)).join('\n')).toBe('')
    })
  },
)
