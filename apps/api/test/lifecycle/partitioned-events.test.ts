import { randomUUID } from 'node:crypto'
import {
  createDb,
  EVENT_BEFORE_MESSAGE_SLACK_MS,
  type ExportPage,
  eraseRecipientRows,
  findRoutedInboundMessage,
  findWebhookEvent,
  listPartitions,
  maintainPartitions,
  messageHistory,
  recipientExportPages,
  recordInboundMessage,
  redactExpiredMessages,
  redactExpiredReplies,
  webhookEventsBetween,
} from '@dispatch/db'
import { migrateDatabase } from '@dispatch/db/migrate'
import {
  acceptedAtOfMessageId,
  createdAtOfWebhookEventId,
  messageIdAt,
  recipientHasher,
} from '@dispatch/runtime'
import {
  type FakeWhatsApp,
  inboundMessage,
  messageWebhook,
  startFakeWhatsApp,
  startWebhookReceiver,
  type WebhookReceiver,
  waitFor,
} from '@dispatch/testing'
import type { RunningWorker } from '@dispatch/worker'
import postgres from 'postgres'
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
  untilMessageStatus,
} from '../helpers.ts'

const APP_SECRET = 'whatsapp-app-secret-for-tests'
const NUMBER = '106540352242922'
const PHONE = '+5511987654321'
const DAY = 86_400_000

let world: TestWorld
let app: TestApp
let fake: FakeWhatsApp
let worker: RunningWorker
let receiver: WebhookReceiver
let db: ReturnType<typeof createDb>
let key: { id: string; key: string }
let endpointId: string
/** The app's clock: the tests move it across days no partition of the migration covers. */
let now = new Date()
/**
 * The UTC day the file was loaded, before the worker started: the days the worker makes ahead are
 * counted from its start, so a run that crosses midnight after it must not expect the next day's.
 */
const loadedDay = Math.floor(Date.now() / DAY) * DAY
/** A UTC midnight three weeks ahead: past the days the workers create, so each day here is new. */
const base = loadedDay + 21 * DAY
const stamp = (ms: number) => new Date(ms).toISOString().slice(0, 10).replaceAll('-', '')
/** Days of one period, for messages (and replies) and for webhook events and attempts alike. */
const days = (at: number, retention: { messages: number; webhooks: number }, aheadDays = 0) => ({
  now: new Date(at),
  aheadDays,
  retentionDays: retention.messages,
  widthDays: 1,
  webhooks: { retentionDays: retention.webhooks, widthDays: 1 },
})

beforeAll(async () => {
  world = await createWorld()
  db = createDb(world.databaseUrl, { max: 2 })
  app = await buildTestApp(world, { WHATSAPP_APP_SECRET: APP_SECRET }, undefined, { clock: () => now })
  fake = await startFakeWhatsApp()
  worker = await startTestWorker(world, {
    WORKER_QUEUES: 'messages,outbox,webhooks',
    MESSAGE_PARTITION_DAYS: '1',
    WEBHOOK_EVENT_PARTITION_DAYS: '1',
    MESSAGE_PARTITIONS_AHEAD_DAYS: '7',
    WHATSAPP_API_URL: fake.url,
    WHATSAPP_ACCESS_TOKEN: 'EAAG-e2e-token',
    WHATSAPP_PHONE_NUMBER_ID: NUMBER,
  })
  key = await activeKey(app, { scopes: [...SEND_SCOPES, 'manage:webhooks'] })
  receiver = await startWebhookReceiver()
  const created = await addWebhookEndpoint(app, key.key, {
    url: receiver.url,
    events: ['message.sent', 'message.received'],
  })
  endpointId = created.json<{ id: string }>().id
})
afterAll(async () => {
  await worker?.close()
  await app?.close()
  await fake?.close()
  await receiver?.stop()
  await db?.close()
  await world?.close()
})

const postWebhook = async (body: object) => {
  const res = await postPlatformWebhook(app, body, APP_SECRET)
  expect(res.statusCode, res.body).toBe(200)
}

/** The partitions holding rows of `table` whose `column` is `value`. */
const partitionsOf = async (table: string, column: string, value: string) =>
  (
    await world.sql.unsafe<{ name: string }[]>(
      `select tableoid::regclass::text as name from ${table} where ${column} = $1`,
      [value],
    )
  ).map((r) => r.name)

/** An event as the trigger writes one, at `at`, with the id it gets since migration 0024. */
async function insertEvent(at: number) {
  const id = `msg_${messageIdAt(at).replaceAll('-', '')}`
  const payload = {
    type: 'message.sent',
    timestamp: new Date(at).toISOString(),
    data: { messageId: randomUUID() },
  }
  await world.sql`
    insert into webhook_events (id, api_key_id, type, payload, created_at)
    values (${id}, ${key.id}, 'message.sent', ${world.sql.json(payload)}, ${new Date(at)})`
  return id
}

const replay = (since: number, until: number) =>
  app.inject({
    method: 'POST',
    url: `/api/third-party/webhook-endpoints/${endpointId}/replay`,
    headers: { 'x-api-key': key.key },
    payload: { since: new Date(since).toISOString(), until: new Date(until).toISOString() },
  })

describe('replies, webhook events and attempts stored by day', () => {
  let replyId: string
  let events: string[]

  it('days are created ahead; a reply redelivered by the platform, even a day later, is stored once in its day', async () => {
    // Two days ahead, not one: the migration's legacy partitions reach to the end of tomorrow, or of
    // the day after from 23:00 UTC (its cutoff is an hour ahead), and CI once ran in that hour.
    const coming = ['inbound_messages', 'webhook_events', 'webhook_attempts'].flatMap((table) =>
      [2, 7].map((d) => `${table}_p${stamp(loadedDay + d * DAY)}`),
    )
    await waitFor(
      async () => {
        const names = new Set(
          (
            await Promise.all(
              (['inbound_messages', 'webhook_events', 'webhook_attempts'] as const).map((t) =>
                listPartitions(world.sql, t),
              ),
            )
          ).flatMap((list) => list.map((p) => p.name)),
        )
        return coming.every((name) => names.has(name)) || undefined
      },
      { what: "the worker's days ahead" },
    )
    const made = await maintainPartitions(world.sql, days(base - DAY, { messages: 30, webhooks: 30 }, 2))
    expect(made.created).toEqual(
      expect.arrayContaining([
        `inbound_messages_p${stamp(base - DAY)}`,
        `inbound_messages_p${stamp(base)}`,
        `webhook_events_p${stamp(base)}`,
        `webhook_attempts_p${stamp(base + DAY)}`,
      ]),
    )

    // A message sent just before midnight, and its reply just after, quoting it.
    now = new Date(base - 60_000)
    const sent = await send(app, 'send-text', key.key, { phone: PHONE, text: 'before midnight' })
    expect(sent.statusCode, sent.body).toBe(202)
    const view = await untilMessageStatus(app, key.key, sent.json<{ messageId: string }>().messageId, 'sent')
    now = new Date(base + 5000)
    const answer = inboundMessage(
      'text',
      { phone: PHONE },
      { at: base + 1000, quotes: view.platformMessageId ?? undefined },
    )
    const body = messageWebhook(NUMBER, answer)
    await postWebhook(body)
    await postWebhook(body)
    await Promise.all([1, 2, 3].map(() => postWebhook(messageWebhook(NUMBER, { ...answer }))))
    // The platform tries again the next day: our time differs, the reply's own does not.
    now = new Date(base + DAY + 5000)
    await postWebhook(messageWebhook(NUMBER, { ...answer }))

    expect(await partitionsOf('inbound_messages', 'platform_message_id', answer.id)).toEqual([
      `inbound_messages_p${stamp(base)}`,
    ])
    const [row] = await world.sql<{ id: string }[]>`
      select id from inbound_messages where platform_message_id = ${answer.id}`
    replyId = row?.id ?? ''
    expect(acceptedAtOfMessageId(replyId)).toBe(base + 1000)
    const events = await world.sql`select type from webhook_events where message_id = ${replyId}`
    expect(events.map((e) => e.type)).toEqual(['message.received'])

    // Found by id (its partition), by wamid, and in the admins' list.
    expect((await findRoutedInboundMessage(db.db, key.id, replyId))?.inReplyTo).toBe(view.messageId)
    expect((await findRoutedInboundMessage(db.db, key.id, answer.id))?.id).toBe(replyId)
    const list = await app.inject({
      method: 'GET',
      url: `/api/admin/inbound-messages?take=10&q=${encodeURIComponent(answer.id)}`,
      headers: asAdmin(),
    })
    expect(list.json<{ data: { id: string }[] }>().data.map((r) => r.id)).toEqual([replyId])
  })

  it('events on each side of a midnight are replayed, retried by id and listed with their attempts', async () => {
    events = [await insertEvent(base + DAY - 1000), await insertEvent(base + DAY + 1000)]
    expect(events.map(createdAtOfWebhookEventId)).toEqual([base + DAY - 1000, base + DAY + 1000])
    expect(await partitionsOf('webhook_events', 'id', events[0] ?? '')).toEqual([
      `webhook_events_p${stamp(base)}`,
    ])
    expect(await partitionsOf('webhook_events', 'id', events[1] ?? '')).toEqual([
      `webhook_events_p${stamp(base + DAY)}`,
    ])
    now = new Date(base + 2 * DAY)
    const replayed = await replay(base + DAY - 60_000, base + DAY + 60_000)
    expect(replayed.statusCode, replayed.body).toBe(202)
    expect(replayed.json().events).toBe(2)
    const retried = await app.inject({
      method: 'POST',
      url: `/api/third-party/webhook-endpoints/${endpointId}/events/${events[0]}/retry`,
      headers: { 'x-api-key': key.key },
    })
    expect(retried.statusCode, retried.body).toBe(202)
    await waitFor(
      () =>
        (receiver.deliveriesOf(events[0] ?? '').length >= 2 &&
          receiver.deliveriesOf(events[1] ?? '').length >= 1) ||
        undefined,
      { what: 'the replayed and retried events' },
    )
    await waitFor(
      async () => {
        const res = await app.inject({
          method: 'GET',
          url: `/api/third-party/webhook-endpoints/${endpointId}/attempts?take=100`,
          headers: { 'x-api-key': key.key },
        })
        const listed = res.json<{ data: { eventId: string; eventType: string }[] }>().data
        const ofFirst = listed.filter((a) => a.eventId === events[0])
        return (ofFirst.length >= 2 && listed.some((a) => a.eventId === events[1]) && ofFirst) || undefined
      },
      { what: 'the attempts listed' },
    ).then((ofFirst) => expect(ofFirst.every((a) => a.eventType === 'message.sent')).toBe(true))
  })

  it('webhook days past their own retention are dropped whole; replies follow the messages’', async () => {
    const first = await maintainPartitions(world.sql, days(base + 5 * DAY, { messages: 365, webhooks: 3 }))
    expect(first.dropped).toEqual(
      expect.arrayContaining([
        `webhook_events_p${stamp(base)}`,
        `webhook_events_p${stamp(base + DAY)}`,
        `webhook_attempts_p${stamp(base)}`,
        'webhook_events_legacy',
        'webhook_attempts_legacy',
      ]),
    )
    expect(first.dropped.filter((name) => !name.startsWith('webhook_'))).toEqual([])
    const kept = (await listPartitions(world.sql, 'webhook_events')).map((p) => p.name)
    expect(kept).toContain(`webhook_events_p${stamp(base + 5 * DAY)}`)
    expect(first.deleted).toBe(0)
    expect(await world.sql`select 1 from webhook_events where id = any(${events})`).toHaveLength(0)
    expect((await replay(base + DAY - 60_000, base + DAY + 60_000)).json().events).toBe(0)
    expect((await findRoutedInboundMessage(db.db, key.id, replyId))?.id).toBe(replyId)

    const second = await maintainPartitions(world.sql, days(base + 5 * DAY, { messages: 3, webhooks: 3 }))
    expect(second.dropped).toEqual(
      expect.arrayContaining([`inbound_messages_p${stamp(base)}`, 'inbound_messages_legacy']),
    )
    expect(await findRoutedInboundMessage(db.db, key.id, replyId)).toBeUndefined()
    const names = (await listPartitions(world.sql, 'inbound_messages')).map((p) => p.name)
    expect(names).not.toContain(`inbound_messages_p${stamp(base)}`)
    expect(names).toContain(`inbound_messages_p${stamp(base + 5 * DAY)}`)
  })
})

describe('a period missing when a reply or an attempt is written', () => {
  it('is made, and the row stored in it: replies and attempts keep no default partition, events keep theirs', async () => {
    const tables = await Promise.all(
      (['inbound_messages', 'webhook_attempts', 'webhook_events'] as const).map(async (t) =>
        (await listPartitions(world.sql, t)).some((p) => p.isDefault),
      ),
    )
    expect(tables).toEqual([false, false, true])
    const day = base + 9 * DAY
    now = new Date(day + 5000)
    const late = inboundMessage('text', { phone: '+5511900000099' }, { at: day + 1000 })
    await postWebhook(messageWebhook(NUMBER, late))
    expect(await partitionsOf('inbound_messages', 'platform_message_id', late.id)).toEqual([
      `inbound_messages_p${stamp(day)}`,
    ])
  })
})

describe("a message's events", () => {
  it('number on from the last one, in whichever period it was stored, for new and old message ids', async () => {
    // Events stored days ago in their own periods, as if written then: a message accepted three days
    // ago (a UUIDv7 id) and one from before UUIDv7 ids (random), twenty days ago.
    const young = messageIdAt(Date.now() - 3 * DAY)
    const old = randomUUID()
    await maintainPartitions(world.sql, days(Date.now() - 21 * DAY, { messages: 365, webhooks: 365 }, 22))
    for (const [id, ageDays] of [
      [young, 3],
      [old, 20],
    ] as const) {
      await world.sql`
        insert into webhook_events (id, api_key_id, type, message_id, sequence, payload, created_at)
        select 'msg_' || md5(${id} || n), ${key.id}, 'message.sent', ${id}, n, '{}', now() - ${`${ageDays} days`}::interval
        from generate_series(1, 2) n`
    }
    for (const id of [young, old]) {
      await world.sql`select dispatch_emit_webhook_event(${key.id}, 'message.read', ${id}, '{}'::jsonb, now())`
    }
    const numbered = await world.sql<{ message_id: string; sequence: number; part: string }[]>`
      select message_id, sequence, tableoid::regclass::text as part from webhook_events
      where message_id in (${young}, ${old}) order by message_id, sequence`
    for (const id of [young, old]) {
      const events = numbered.filter((e) => e.message_id === id)
      expect(events.map((e) => e.sequence)).toEqual([1, 2, 3])
      // Stored in two periods: the earlier events' and today's.
      expect(new Set(events.map((e) => e.part)).size).toBe(2)
    }
  })
})

describe("a message's events, read from the message's own time on", () => {
  // A recipient with a message accepted three days ago and a reply received two days ago (UUIDv7
  // ids), another with a message from before UUIDv7 ids (random), twenty days ago; each with events
  // in its own day, an hour before it (the database's clock behind the app's) and today (the
  // message's insert, as sent, and the reply's make one each now).
  const NEW_PHONE = '+5511900000071'
  const OLD_PHONE = '+5511900000072'
  const youngAt = Date.now() - 3 * DAY
  const replyAt = Date.now() - 2 * DAY
  const young = messageIdAt(youngAt)
  const reply = messageIdAt(replyAt)
  const old = randomUUID()
  /** A client that tells each statement it sends, whose plans the tests read. */
  let traced: ReturnType<typeof createDb>
  let statements: { query: string; parameters: unknown[] }[] = []

  /** The statements on webhook_events `run` sent naming `messageId`, with what `run` answered. */
  async function ran<T>(messageId: string, run: () => Promise<T>) {
    statements = []
    const answer = await run()
    const about = statements.filter(
      (s) => /webhook_events/.test(s.query) && JSON.stringify(s.parameters).includes(messageId),
    )
    expect(about.length).toBeGreaterThan(0)
    return { answer, about }
  }

  /** The partitions of `table` the plans of these statements read, their parameters known. */
  async function partitionsRead(
    about: { query: string; parameters: unknown[] }[],
    table: 'webhook_events' | 'webhook_attempts' = 'webhook_events',
  ) {
    const names = new Set<string>()
    const walk = (node: unknown): void => {
      if (Array.isArray(node)) node.forEach(walk)
      else if (node && typeof node === 'object') {
        for (const [field, value] of Object.entries(node)) {
          if (field === 'Relation Name' && typeof value === 'string') names.add(value)
          else walk(value)
        }
      }
    }
    for (const { query, parameters } of about) {
      const plan = await world.sql.unsafe(`explain (format json) ${query}`, parameters as never[])
      walk(plan)
    }
    return [...names].filter((name) => name.startsWith(`${table}_`)).sort()
  }

  /**
   * The statements read no partition of webhook_events ending before the earliest of `ids`' times
   * less a day, and there are some to leave out; they do read each partition holding one of their
   * events.
   */
  async function readFromTimeOn(about: { query: string; parameters: unknown[] }[], ids: string[]) {
    const since = Math.min(...ids.map((id) => acceptedAtOfMessageId(id) ?? 0)) - EVENT_BEFORE_MESSAGE_SLACK_MS
    const read = await readNoneBefore(about, 'webhook_events', since)
    expect(read).toEqual(expect.arrayContaining(await partitionsOfEvents(ids)))
  }

  /**
   * The partitions of `table` these statements read: none ending before `since`, and there are
   * some such to leave out.
   */
  async function readNoneBefore(
    about: { query: string; parameters: unknown[] }[],
    table: 'webhook_events' | 'webhook_attempts',
    since: number,
  ) {
    const partitions = await listPartitions(world.sql, table)
    const before = partitions.filter((p) => p.to && p.to.getTime() <= since).map((p) => p.name)
    expect(before.length).toBeGreaterThan(10)
    const read = await partitionsRead(about, table)
    expect(read.filter((name) => before.includes(name))).toEqual([])
    return read
  }

  /**
   * Every partition of webhook_events (any the workers make meanwhile too): what a lookup of an id
   * that carries no time reads.
   */
  async function readEverywhere(about: { query: string; parameters: unknown[] }[]) {
    const partitions = (await listPartitions(world.sql, 'webhook_events')).map((p) => p.name)
    expect(partitions.length).toBeGreaterThan(20)
    expect(await partitionsRead(about)).toEqual(expect.arrayContaining(partitions))
  }

  /** The events about these messages, by id alone (every partition). */
  const eventsAbout = async (ids: string[]) =>
    (
      await world.sql<{ id: string }[]>`
        select id from webhook_events where message_id = any(${ids}::uuid[]) order by message_id, sequence`
    ).map((e) => e.id)
  const partitionsOfEvents = async (ids: string[]) =>
    (
      await world.sql<{ name: string }[]>`
        select distinct tableoid::regclass::text as name from webhook_events where message_id = any(${ids}::uuid[])`
    ).map((r) => r.name)
  const payloadsAbout = async (ids: string[]) =>
    (
      await world.sql<{ payload: { data: Record<string, unknown> } }[]>`
        select payload from webhook_events where message_id = any(${ids}::uuid[])`
    ).map((e) => e.payload.data)

  async function insertEvent(messageId: string, phone: string, at: number, sequence: number) {
    const payload = {
      type: 'message.sent',
      timestamp: new Date(at).toISOString(),
      data: { messageId, phone, status: 'sent', sequence },
    }
    await world.sql`
      insert into webhook_events (id, api_key_id, type, message_id, sequence, payload, created_at)
      values (${`msg_${messageIdAt(at).replaceAll('-', '')}`}, ${key.id}, 'message.sent', ${messageId},
        ${sequence}, ${world.sql.json(payload)}, ${new Date(at)})`
  }

  /** A sent message, due for redaction `redactAfterMs` from now: its insert makes an event. */
  const insertMessage = (id: string, phone: string, at: number, redactAfterMs: number) => world.sql`
    insert into messages (id, api_key_id, type, phone, payload, sender_id, sender_phone_number_id, status,
      attempts, accepted_at, sent_at, updated_at, redact_after)
    values (${id}, ${key.id}, 'text', ${phone}, ${world.sql.json({ phone, text: 'hello' })}, 'default',
      ${NUMBER}, 'sent', 1, ${new Date(at)}, ${new Date(at + 1000)}, now(), ${new Date(Date.now() + redactAfterMs)})`

  beforeAll(async () => {
    traced = createDb(world.databaseUrl, {
      max: 1,
      onStatement: (query, parameters) => statements.push({ query, parameters }),
    })
    // Days from three weeks ago to tomorrow, past the migration's: its legacy partition (every event
    // up to tomorrow) goes, as retention drops it (the first tests of this file did already).
    await world.sql`drop table if exists webhook_events_legacy`
    await maintainPartitions(world.sql, days(Date.now() - 21 * DAY, { messages: 365, webhooks: 365 }, 22))
    await insertEvent(young, NEW_PHONE, youngAt - 3600_000, 1)
    await insertEvent(young, NEW_PHONE, youngAt + 60_000, 2)
    await insertMessage(young, NEW_PHONE, youngAt, DAY)
    await insertEvent(old, OLD_PHONE, Date.now() - 20 * DAY, 1)
    await insertMessage(old, OLD_PHONE, Date.now() - 20 * DAY, DAY + 3600_000)
    await world.sql`
      insert into inbound_messages (id, platform_message_id, phone_number_id, phone, type, content, api_key_id,
        received_at, redact_after)
      values (${reply}, ${`wamid.since-${reply}`}, ${NUMBER}, ${NEW_PHONE}, 'text',
        ${world.sql.json({ text: 'a reply' })}, ${key.id}, ${new Date(replyAt)}, ${new Date(Date.now() + DAY)})`
    // Three events of the young message in two or three days, two of the old one twenty days apart.
    expect(await eventsAbout([young])).toHaveLength(3)
    expect(await eventsAbout([old])).toHaveLength(2)
    expect(await eventsAbout([reply])).toHaveLength(1)
    expect(new Set(await partitionsOfEvents([young])).size).toBeGreaterThanOrEqual(2)
  })
  afterAll(async () => {
    await traced?.close()
  })

  it("the console's timeline lists them all, for new and old message ids", async () => {
    const { answer, about } = await ran(young, () => messageHistory(traced.db, young))
    expect(answer.events.map((e) => e.id)).toEqual(await eventsAbout([young]))
    await readFromTimeOn(about, [young])
    const timeline = await app.inject({
      method: 'GET',
      url: `/api/admin/messages/${young}/timeline`,
      headers: asAdmin(),
    })
    expect(timeline.statusCode, timeline.body).toBe(200)
    const shown = timeline
      .json<{ entries: { kind: string; eventId?: string }[] }>()
      .entries.filter((e) => e.kind === 'webhook_event')
    expect(shown.map((e) => e.eventId).sort()).toEqual((await eventsAbout([young])).sort())

    // Prepared (as every statement is), its lookup keeps a generic plan, pruned as above: Postgres
    // does not plan each run afresh, as it did when the bound was a parameter.
    for (let run = 0; run < 8; run++) await messageHistory(traced.db, young)
    const [prepared] = await traced.sql<{ generic_plans: number; custom_plans: number }[]>`
      select generic_plans::int, custom_plans::int from pg_prepared_statements
      where statement = ${about[0]?.query ?? ''}`
    expect(prepared?.generic_plans).toBeGreaterThan(0)

    const legacy = await ran(old, () => messageHistory(traced.db, old))
    expect(legacy.answer.events.map((e) => e.id)).toEqual(await eventsAbout([old]))
    await readEverywhere(legacy.about)
  })

  it("the console's timeline lists their delivery attempts, read from the earliest event's day on", async () => {
    // An endpoint of another key: this one's messages make no new events meanwhile.
    const [other] = await world.sql<{ id: string }[]>`
      insert into api_keys (client_name, email, scopes, key_hash, key_prefix, environment, status)
      values ('Other', 'other@acme.test', '{send:free-text}', ${`hash-${randomUUID()}`}, 'dk_test', 'development',
        'approved') returning id`
    const [endpoint] = await world.sql<{ id: string }[]>`
      insert into webhook_endpoints (api_key_id, url, events, secret)
      values (${other?.id ?? ''}, 'https://receiver.example/hook', '{message.sent}', 'whsec_test') returning id`
    await world.sql`drop table if exists webhook_attempts_legacy`
    const events = await eventsAbout([young])
    // An attempt a second after each event, in the event's own day.
    for (const eventId of events) {
      const at = new Date((createdAtOfWebhookEventId(eventId) ?? 0) + 1000)
      await world.sql`
        insert into webhook_attempts (endpoint_id, event_id, attempt, status_code, duration_ms, created_at)
        values (${endpoint?.id ?? ''}, ${eventId}, 1, 204, 5, ${at})`
    }
    statements = []
    const history = await messageHistory(traced.db, young)
    // Each event's attempt (and any the file's worker made delivering one to this key's endpoint).
    expect([...new Set(history.deliveries.map((d) => d.eventId))].sort()).toEqual([...events].sort())
    const about = statements.filter((s) => /from "webhook_attempts"/.test(s.query))
    expect(about).toHaveLength(1)
    const since =
      Math.min(...events.map((id) => createdAtOfWebhookEventId(id) ?? 0)) - EVENT_BEFORE_MESSAGE_SLACK_MS
    const read = await readNoneBefore(about, 'webhook_attempts', since)
    expect(read.length).toBeGreaterThan(0)
  })

  it("the recipient's export holds them all, a page of messages' events at a time", async () => {
    const exported = async (phone: string) => {
      const pages: ExportPage[] = []
      for await (const page of recipientExportPages(traced.db, {
        apiKeyId: key.id,
        senderIds: ['default'],
        owner: `key:${key.id}`,
        identities: { phones: [phone], userIds: [] },
        hashes: [],
        pageSize: 10,
      }))
        pages.push(page)
      return pages.flatMap((page) => (page.kind === 'event' ? page.rows.map((row) => row.id) : [])).sort()
    }
    const { answer, about } = await ran(young, () => exported(NEW_PHONE))
    expect(answer).toEqual((await eventsAbout([young, reply])).sort())
    await readFromTimeOn(about, [young])
    const ofReply = statements.filter(
      (s) => /webhook_events/.test(s.query) && JSON.stringify(s.parameters).includes(reply),
    )
    await readFromTimeOn(ofReply, [reply])

    const legacy = await ran(old, () => exported(OLD_PHONE))
    expect(legacy.answer).toEqual(await eventsAbout([old]))
    await readEverywhere(legacy.about)
  })

  it('the redaction of messages and replies marks them all', async () => {
    const later = new Date(Date.now() + 2 * DAY)
    // One message a pass: the young one is due first.
    const { answer, about } = await ran(young, () => redactExpiredMessages(traced.db, later, 1))
    expect(answer).toBe(1)
    expect((await payloadsAbout([young])).map((data) => data.redacted)).toEqual([true, true, true])
    expect((await payloadsAbout([old])).map((data) => data.redacted ?? false)).toEqual([false, false])
    await readFromTimeOn(about, [young])

    const replies = await ran(reply, () => redactExpiredReplies(traced.db, later, 10))
    expect(replies.answer).toBe(1)
    expect(await payloadsAbout([reply])).toEqual([expect.objectContaining({ redacted: true })])
    expect((await payloadsAbout([reply]))[0]).not.toHaveProperty('text')
    await readFromTimeOn(replies.about, [reply])

    const legacy = await ran(old, () => redactExpiredMessages(traced.db, later, 1))
    expect(legacy.answer).toBe(1)
    expect((await payloadsAbout([old])).map((data) => data.redacted)).toEqual([true, true])
    await readEverywhere(legacy.about)
  })

  it("the recipient's erasure strips them all", async () => {
    const erase = (phone: string) =>
      eraseRecipientRows(traced.db, {
        identities: { phones: [phone], userIds: [] },
        apiKeyId: key.id,
        senderIds: ['default'],
        hash: recipientHasher({}),
        at: new Date(),
      })
    const { answer, about } = await ran(young, () => erase(NEW_PHONE))
    expect(answer.counts).toMatchObject({ messages: 1, inboundMessages: 1, webhookEvents: 4 })
    expect(answer.eventIds.sort()).toEqual((await eventsAbout([young, reply])).sort())
    const stripped = await payloadsAbout([young, reply])
    expect(stripped).toHaveLength(4)
    expect(stripped.every((data) => data.redacted === true && !('phone' in data))).toBe(true)
    await readFromTimeOn(about, [young, reply])

    const legacy = await ran(old, () => erase(OLD_PHONE))
    expect(legacy.answer.counts).toMatchObject({ messages: 1, webhookEvents: 2 })
    expect((await payloadsAbout([old])).some((data) => 'phone' in data)).toBe(false)
    await readEverywhere(legacy.about)
  })
})

describe('the migration to partitioned replies and events', () => {
  it('keeps every reply, event and attempt of a database in the old layout, once, and finds them', async () => {
    const name = `events_migration_${randomUUID().slice(0, 8)}`
    const admin = postgres(world.databaseUrl, { max: 1, onnotice: () => {} })
    await admin.unsafe(`create database "${name}"`)
    const url = new URL(world.databaseUrl)
    url.pathname = `/${name}`
    const old = createDb(url.toString(), { max: 2 })
    const sql = old.sql
    try {
      await migrateDatabase(url.toString(), { until: '0023_partitioned_messages' })
      const [apiKey] = await sql<{ id: string }[]>`
        insert into api_keys (client_name, email, scopes, key_hash, key_prefix, environment, status)
        values ('Old', 'old@acme.test', '{send:free-text}', 'hash', 'dk_test', 'development', 'approved') returning id`
      const keyId = apiKey?.id ?? ''
      const [endpoint] = await sql<{ id: string }[]>`
        insert into webhook_endpoints (api_key_id, url, events, secret)
        values (${keyId}, 'https://receiver.example/hook', '{message.received}', 'whsec_test') returning id`
      // 600 replies over 75 days up to now (the platform's whole seconds), each routed: the trigger
      // writes its event; consent events about no message beside them; an attempt per event.
      await sql`
        insert into inbound_messages (platform_message_id, phone_number_id, phone, type, content, api_key_id, received_at)
        select 'wamid.old' || n, ${NUMBER}, '+55119' || lpad(n::text, 8, '0'), 'text',
          jsonb_build_object('text', 'old ' || n), ${keyId}, date_trunc('second', now()) - n * interval '3 hours'
        from generate_series(1, 600) n`
      await sql`
        insert into webhook_events (id, api_key_id, type, payload, created_at)
        select 'msg_' || replace(gen_random_uuid()::text, '-', ''), ${keyId}, 'consent.opted_out',
          jsonb_build_object('type', 'consent.opted_out', 'data', jsonb_build_object('phone', '+55118' || n)),
          now() - n * interval '5 hours'
        from generate_series(1, 100) n`
      await sql`
        insert into webhook_attempts (endpoint_id, event_id, attempt, status_code, duration_ms, created_at)
        select ${endpoint?.id ?? ''}, id, 1, 204, 12, created_at from webhook_events`
      const snapshot = async () => ({
        replies: (await sql<{ id: string }[]>`select id from inbound_messages order by id`).map((r) => r.id),
        events: (await sql<{ id: string }[]>`select id from webhook_events order by id`).map((r) => r.id),
        attempts: (await sql<{ id: string }[]>`select id::text from webhook_attempts order by id`).map(
          (r) => r.id,
        ),
      })
      const before = await snapshot()
      expect([before.replies.length, before.events.length, before.attempts.length]).toEqual([600, 700, 700])

      await migrateDatabase(url.toString())

      expect(await snapshot()).toEqual(before)
      const [legacy] = await sql<{ replies: number; events: number; attempts: number }[]>`
        select (select count(*)::int from inbound_messages_legacy) as replies,
               (select count(*)::int from webhook_events_legacy) as events,
               (select count(*)::int from webhook_attempts_legacy) as attempts`
      expect(legacy).toEqual({ replies: 600, events: 700, attempts: 700 })

      // Lookups by the old ids (no time in them), by wamid, and the lists, still find them.
      const [reply] = await sql<{ id: string; ms: number }[]>`
        select id, (extract(epoch from received_at) * 1000)::float8 as ms from inbound_messages where platform_message_id = 'wamid.old7'`
      expect((await findRoutedInboundMessage(old.db, keyId, reply?.id ?? ''))?.platformMessageId).toBe(
        'wamid.old7',
      )
      expect((await findRoutedInboundMessage(old.db, keyId, 'wamid.old7'))?.id).toBe(reply?.id)
      const oldEvent = before.events[0] ?? ''
      expect((await findWebhookEvent(old.db, keyId, oldEvent))?.id).toBe(oldEvent)
      const listed = await webhookEventsBetween(old.db, {
        apiKeyId: keyId,
        types: ['message.received', 'consent.opted_out'],
        since: new Date(Date.now() - 100 * DAY),
        until: new Date(Date.now() + DAY),
        limit: 10_000,
      })
      expect(listed.map((e) => e.id).sort()).toEqual([...before.events].sort())

      // The platform redelivers an old reply: still stored once.
      const redelivered = await recordInboundMessage(old.db, {
        platformMessageId: 'wamid.old7',
        phoneNumberId: NUMBER,
        phone: '+5511900000007',
        userId: null,
        username: null,
        type: 'text',
        content: { text: 'old 7' },
        contextId: null,
        receivedAt: new Date(reply?.ms ?? 0),
      })
      expect(redelivered.outcome).toBe('duplicate')

      // A reply days later goes into its own day once the workers made it; its event (the trigger on
      // the partitioned table) gets an id carrying its time, found by id, and its outbox row.
      // Two days on: past the legacy partitions, which may reach the end of tomorrow.
      const tomorrow = Math.floor(Date.now() / DAY) * DAY + 2 * DAY + 3600_000
      await maintainPartitions(sql, { now: new Date(tomorrow), aheadDays: 1, retentionDays: 90 })
      const fresh = await recordInboundMessage(old.db, {
        platformMessageId: 'wamid.new',
        phoneNumberId: NUMBER,
        phone: '+5511900000007',
        userId: null,
        username: null,
        type: 'text',
        content: { text: 'new' },
        contextId: null,
        receivedAt: new Date(tomorrow),
      })
      expect(fresh.outcome).toBe('stored')
      if (fresh.outcome !== 'stored') return
      expect(
        await sql`select tableoid::regclass::text as part from inbound_messages where id = ${fresh.id}`,
      ).toEqual([{ part: `inbound_messages_p${stamp(tomorrow)}` }])
      await sql`
        insert into inbound_messages (platform_message_id, phone_number_id, phone, type, content, api_key_id, received_at)
        values ('wamid.routed', ${NUMBER}, '+5511900000008', 'text', '{}', ${keyId}, now())`
      const [routed] = await sql<
        { id: string }[]
      >`select id from inbound_messages where platform_message_id = 'wamid.routed'`
      const [event] = await sql<{ id: string; ms: number }[]>`
        select id, (extract(epoch from created_at) * 1000)::float8 as ms from webhook_events where message_id = ${routed?.id ?? ''}`
      expect(Math.abs((createdAtOfWebhookEventId(event?.id ?? '') ?? 0) - (event?.ms ?? 0))).toBeLessThan(1)
      expect((await findWebhookEvent(old.db, keyId, event?.id ?? ''))?.id).toBe(event?.id)
      expect(await sql`select 1 from outbox where payload->>'eventId' = ${event?.id ?? ''}`).toHaveLength(1)

      // The attempts' id sequence outlives the legacy partition.
      await sql`drop table webhook_attempts_legacy`
      await sql`insert into webhook_attempts (endpoint_id, event_id, attempt, duration_ms, created_at)
               values (${endpoint?.id ?? ''}, ${event?.id ?? ''}, 1, 10, ${new Date(tomorrow).toISOString()})`
    } finally {
      await old.close()
      await admin.unsafe(`drop database if exists "${name}" with (force)`)
      await admin.end({ timeout: 5 })
    }
  })
})
