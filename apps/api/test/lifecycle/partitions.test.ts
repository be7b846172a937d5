import { randomUUID } from 'node:crypto'
import type { MessageListQuery, MessageView } from '@dispatch/contracts'
import { createDb, listMessages, listPartitions, maintainPartitions } from '@dispatch/db'
import { migrateDatabase } from '@dispatch/db/migrate'
import {
  type FakeWhatsApp,
  signWebhook,
  startFakeWhatsApp,
  startWebhookReceiver,
  statusWebhook,
  type WebhookReceiver,
  waitFor,
} from '@dispatch/testing'
import type { RunningWorker } from '@dispatch/worker'
import { sql as drizzleSql } from 'drizzle-orm'
import postgres from 'postgres'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  activeKey,
  addWebhookEndpoint,
  buildTestApp,
  createWorld,
  messageView,
  SEND_SCOPES,
  send,
  startTestWorker,
  type TestApp,
  type TestWorld,
  untilMessageStatus,
} from '../helpers.ts'

const APP_SECRET = 'whatsapp-app-secret-for-tests'
const DAY = 86_400_000

let world: TestWorld
let app: TestApp
let fake: FakeWhatsApp
let worker: RunningWorker
let receiver: WebhookReceiver
let key: { id: string; key: string }
/** The app's clock: the tests move it across days no partition of the migration covers. */
let now = new Date()
/**
 * The UTC day the file was loaded, before the worker started: the days the worker makes ahead are
 * counted from its start, so a run that crosses midnight after it must not expect the next day's.
 */
const loadedDay = Math.floor(Date.now() / DAY) * DAY
/** A UTC midnight three weeks ahead: past the days the migration creates, so each day here is new. */
const base = loadedDay + 21 * DAY

beforeAll(async () => {
  world = await createWorld()
  app = await buildTestApp(world, { WHATSAPP_APP_SECRET: APP_SECRET }, undefined, { clock: () => now })
  fake = await startFakeWhatsApp()
  worker = await startTestWorker(world, {
    WORKER_QUEUES: 'messages,outbox,webhooks',
    // Days, a week ahead: the days this file makes (three weeks ahead and later) are new to it.
    MESSAGE_PARTITION_DAYS: '1',
    MESSAGE_PARTITIONS_AHEAD_DAYS: '7',
    WHATSAPP_API_URL: fake.url,
    WHATSAPP_ACCESS_TOKEN: 'EAAG-e2e-token',
    WHATSAPP_PHONE_NUMBER_ID: '106540352242922',
  })
  key = await activeKey(app, { scopes: [...SEND_SCOPES, 'manage:webhooks'] })
  receiver = await startWebhookReceiver()
  await addWebhookEndpoint(app, key.key, { url: receiver.url, events: ['message.sent', 'message.delivered'] })
})
afterAll(async () => {
  await worker?.close()
  await app?.close()
  await fake?.close()
  await receiver?.stop()
  await world?.close()
})

const sendAt = async (at: number, text: string) => {
  now = new Date(at)
  const res = await send(app, 'send-text', key.key, { phone: '+5511987654321', text })
  expect(res.statusCode, res.body).toBe(202)
  return res.json<{ messageId: string }>().messageId
}

/** The partition a message's row is in. */
const partitionOf = async (id: string) =>
  (
    await world.sql<
      { name: string }[]
    >`select tableoid::regclass::text as name from messages where id = ${id}`
  ).map((r) => r.name)

/** A `delivered` status, with our id in its callback data as the platform echoes it, or without. */
const deliveredWebhook = (view: MessageView, at: number, echoed = true) =>
  statusWebhook({
    id: view.platformMessageId,
    status: 'delivered',
    timestamp: String(Math.floor(at / 1000)),
    recipient_id: '5511987654321',
    ...(echoed ? { biz_opaque_callback_data: view.messageId } : {}),
  })

const postStatus = (body: object) => {
  const bytes = JSON.stringify(body)
  return app.inject({
    method: 'POST',
    url: '/api/webhooks/whatsapp',
    headers: { 'content-type': 'application/json', 'x-hub-signature-256': signWebhook(bytes, APP_SECRET) },
    payload: bytes,
  })
}

const stamp = (ms: number) => new Date(ms).toISOString().slice(0, 10).replaceAll('-', '')

describe('messages stored by day', () => {
  it('days are created ahead; a message on each side of midnight is listed, read, updated and reported across them', async () => {
    // The worker made the coming week's days when it started.
    const coming = [1, 4, 7].map((d) => `messages_p${stamp(loadedDay + d * DAY)}`)
    await waitFor(
      async () => {
        const names = new Set((await listPartitions(world.sql, 'messages')).map((p) => p.name))
        return coming.every((name) => names.has(name)) || undefined
      },
      { what: "the worker's days ahead" },
    )
    const made = await maintainPartitions(world.sql, {
      now: new Date(base - DAY),
      aheadDays: 2,
      retentionDays: 30,
    })
    expect(made?.created).toEqual(
      expect.arrayContaining([
        `messages_p${stamp(base - DAY)}`,
        `messages_p${stamp(base)}`,
        `messages_p${stamp(base + DAY)}`,
      ]),
    )
    const before = await sendAt(base - 1000, 'just before midnight')
    const after = await sendAt(base + 1000, 'just after midnight')
    const [sentBefore, sentAfter] = [
      await untilMessageStatus(app, key.key, before, 'sent'),
      await untilMessageStatus(app, key.key, after, 'sent'),
    ]
    expect(await partitionOf(before)).toEqual([`messages_p${stamp(base - DAY)}`])
    expect(await partitionOf(after)).toEqual([`messages_p${stamp(base)}`])

    // The platform's statuses find each in its day, with our id in the callback data or without it.
    now = new Date(base + 60_000)
    expect((await postStatus(deliveredWebhook(sentBefore, base + 30_000))).statusCode).toBe(200)
    expect((await postStatus(deliveredWebhook(sentAfter, base + 30_000, false))).statusCode).toBe(200)
    expect((await messageView(app, key.key, before)).status).toBe('delivered')
    expect((await messageView(app, key.key, after)).status).toBe('delivered')

    // The list spans both days, newest first, and filters by a window ending between them.
    const list = await app.inject({
      method: 'GET',
      url: '/api/third-party/messages?take=10',
      headers: { 'x-api-key': key.key },
    })
    expect(list.json().data.map((m: MessageView) => m.messageId)).toEqual([after, before])
    const untilMidnight = await app.inject({
      method: 'GET',
      url: `/api/third-party/messages?take=10&endDate=${encodeURIComponent(new Date(base - 1).toISOString())}`,
      headers: { 'x-api-key': key.key },
    })
    expect(untilMidnight.json().data.map((m: MessageView) => m.messageId)).toEqual([before])

    // Each status reached the receiver once, whichever day its message is in.
    await waitFor(() => receiver.received.length >= 4 || undefined, { what: 'four events' })
    const events = receiver.received.map(
      (r) => JSON.parse(r.body) as { type: string; data: { messageId: string } },
    )
    for (const id of [before, after]) {
      expect(
        events
          .filter((e) => e.data.messageId === id)
          .map((e) => e.type)
          .sort(),
      ).toEqual(['message.delivered', 'message.sent'])
    }
  })

  it('a day past retention is dropped whole: its messages and their fallbacks are gone, the next day is untouched', async () => {
    await maintainPartitions(world.sql, { now: new Date(base + 2 * DAY), aheadDays: 1, retentionDays: 30 })
    const old = await sendAt(base + 2 * DAY + 1000, 'kept three days')
    const young = await sendAt(base + 3 * DAY + 1000, 'one day younger')
    await untilMessageStatus(app, key.key, young, 'sent')
    await untilMessageStatus(app, key.key, old, 'sent')
    // Each with a channel fallback's record (docs/fallback.md), as the worker's steps leave one.
    const fallbackOf = (id: string) => world.sql`select 1 from message_fallbacks where message_id = ${id}`
    for (const id of [old, young]) {
      await waitFor(async () => (await world.sql`select 1 from messages where id = ${id}`).length > 0, {
        what: 'the record',
      })
      await world.sql`
        insert into message_fallbacks (message_id, accepted_at, api_key_id, reason, state, decided_at, updated_at)
        select id, accepted_at, api_key_id, 'not_delivered_in_time', 'sent', now(), now() from messages where id = ${id}`
      expect(await fallbackOf(id)).toHaveLength(1)
    }
    // Three days of retention, seen from the start of base + 5 days: every day ending by base + 2 days
    // goes, base + 2 days' (ending at base + 3 days) too late by a day… until the clock moves on.
    const first = await maintainPartitions(world.sql, {
      now: new Date(base + 5 * DAY),
      aheadDays: 0,
      retentionDays: 3,
    })
    expect(first?.dropped).toEqual(
      expect.arrayContaining([
        `messages_p${stamp(base - DAY)}`,
        `messages_p${stamp(base)}`,
        'messages_legacy',
      ]),
    )
    expect(first?.dropped).not.toContain(`messages_p${stamp(base + 2 * DAY)}`)
    expect((await messageView(app, key.key, old)).status).toBe('sent')
    expect(await fallbackOf(old)).toHaveLength(1)
    const second = await maintainPartitions(world.sql, {
      now: new Date(base + 6 * DAY),
      aheadDays: 0,
      retentionDays: 3,
    })
    expect(second?.dropped).toContain(`messages_p${stamp(base + 2 * DAY)}`)
    expect(second?.deleted).toBe(0)
    // Gone from Postgres and from the list (the queue's finished job, which the lookup also reads, is
    // removed after a day: BullMQ's own retention, well within any MESSAGE_RETENTION_DAYS).
    expect(await world.sql`select 1 from messages where id = ${old}`).toHaveLength(0)
    // Its fallback's record with it, in the same transaction; the younger day's stays.
    expect(await fallbackOf(old)).toHaveLength(0)
    expect(await fallbackOf(young)).toHaveLength(1)
    const list = await app.inject({
      method: 'GET',
      url: '/api/third-party/messages?take=100',
      headers: { 'x-api-key': key.key },
    })
    const listed = list.json().data.map((m: MessageView) => m.messageId)
    expect(listed).toContain(young)
    expect(listed).not.toContain(old)
    expect((await messageView(app, key.key, young)).status).toBe('sent')
    const names = (await listPartitions(world.sql, 'messages')).map((p) => p.name)
    expect(names).not.toContain(`messages_p${stamp(base + 2 * DAY)}`)
    expect(names).toContain(`messages_p${stamp(base + 3 * DAY)}`)
  })

  it('a message whose day was not made yet (a clock far ahead) makes its day when it is written', async () => {
    // The worker's first round emptied and dropped the default partition the migration made.
    expect((await listPartitions(world.sql, 'messages')).some((p) => p.isDefault)).toBe(false)
    const far = base + 40 * DAY + 5000
    const id = await sendAt(far, 'a clock far ahead')
    await untilMessageStatus(app, key.key, id, 'sent')
    expect(await partitionOf(id)).toEqual([`messages_p${stamp(far)}`])
    expect((await messageView(app, key.key, id)).status).toBe('sent')
    const list = await app.inject({
      method: 'GET',
      url: '/api/third-party/messages?take=1',
      headers: { 'x-api-key': key.key },
    })
    expect(list.json().data.map((m: MessageView) => m.messageId)).toEqual([id])
  })

  it('two workers maintaining at once create each day once and neither fails', async () => {
    const at = new Date(base + 60 * DAY)
    const rounds = await Promise.all([
      maintainPartitions(world.sql, { now: at, aheadDays: 3, retentionDays: 365 }),
      maintainPartitions(world.sql, { now: at, aheadDays: 3, retentionDays: 365 }),
    ])
    const created = rounds.flatMap((r) => r?.created ?? []).filter((name) => name.startsWith('messages_p'))
    expect(created.sort()).toEqual([0, 1, 2, 3].map((d) => `messages_p${stamp(base + (60 + d) * DAY)}`))
  })

  it('every day leaves a tenth of its pages free, however it was made, so a pricing update is HOT', async () => {
    // The migration's days, the worker's days ahead, and the days made above (by a write, by two
    // maintainers at once): Postgres keeps no fillfactor on the parent, each day carries its own.
    const days = await world.sql<{ name: string; options: string[] | null }[]>`
      select c.relname as name, c.reloptions as options
      from pg_partition_tree('messages') t join pg_class c on c.oid = t.relid where t.isleaf`
    expect(days.length).toBeGreaterThan(4)
    for (const day of days) expect(day.options, day.name).toContain('fillfactor=90')
  })
})

describe('message lists', () => {
  it('are planned once per statement, not over every day partition on each call', async () => {
    // The API lists messages on connections that keep one plan per statement (and never JIT-compile
    // one: a plan that does not know its page's size could cost enough to be) …
    const [settings] = await app.deps.lists.execute(
      drizzleSql`select current_setting('plan_cache_mode') as plans, current_setting('jit') as jit`,
    )
    expect(settings).toEqual({ plans: 'force_generic_plan', jit: 'off' })
    // … so a list named by no period is planned once, its partitions pruned as it runs; Postgres'
    // own choice would plan all of them on each of the first calls, and keep doing so after them.
    const lists = createDb(world.databaseUrl, { max: 1, genericPlans: true })
    try {
      const failedPage = { page: 1, take: 10, order: 'DESC', orderField: 'createdAt', status: ['failed'] }
      for (let call = 0; call < 3; call++)
        await listMessages(lists.db, key.id, failedPage as MessageListQuery)
      const plans = await lists.sql<{ generic: number; custom: number }[]>`
        select generic_plans::int as generic, custom_plans::int as custom from pg_prepared_statements
        where statement like 'select %from "messages"%'`
      expect(plans.length).toBeGreaterThan(0)
      for (const plan of plans) expect(plan).toEqual({ generic: 3, custom: 0 })
    } finally {
      await lists.close()
    }
  })
})

describe('the migration to partitions', () => {
  it('keeps every message of a database in the old layout, once, and its events fire once', async () => {
    const name = `partition_migration_${randomUUID().slice(0, 8)}`
    const adminUrl = new URL(world.databaseUrl)
    const admin = postgres(adminUrl.toString(), { max: 1, onnotice: () => {} })
    await admin.unsafe(`create database "${name}"`)
    const url = new URL(world.databaseUrl)
    url.pathname = `/${name}`
    const db = postgres(url.toString(), { max: 2, onnotice: () => {} })
    try {
      await migrateDatabase(url.toString(), { until: '0022_erasures' })
      const [apiKey] = await db<{ id: string }[]>`
        insert into api_keys (client_name, email, scopes, key_hash, key_prefix, environment, status)
        values ('Old', 'old@acme.test', '{send:free-text}', 'hash', 'dk_test', 'development', 'approved') returning id`
      // 3,000 messages over 200 days up to now, some with failed attempts; one endpoint to get events.
      await db`
        insert into messages (id, api_key_id, type, phone, payload, status, attempts, accepted_at, updated_at)
        select gen_random_uuid(), ${apiKey?.id ?? ''}, 'text', '+55119' || lpad(n::text, 8, '0'),
          jsonb_build_object('text', 'old ' || n), 'sent', 1,
          now() - (n * interval '96 minutes'), now()
        from generate_series(1, 3000) n`
      await db`
        insert into message_attempts (message_id, attempt, outcome, error_code, created_at)
        select id, 1, 'sending', '131000', accepted_at from messages limit 500`
      const before = await db<{ id: string }[]>`select id from messages order by id`
      await db`
        insert into webhook_endpoints (api_key_id, url, events, secret)
        values (${apiKey?.id ?? ''}, 'https://receiver.example/hook', '{message.delivered}', 'whsec_test')`

      await migrateDatabase(url.toString())

      const after = await db<{ id: string }[]>`select id from messages order by id`
      expect(after.map((r) => r.id)).toEqual(before.map((r) => r.id))
      const [counts] = await db<{ legacy: number; attempts: number }[]>`
        select (select count(*)::int from messages_legacy) as legacy,
               (select count(*)::int from message_attempts) as attempts`
      expect(counts).toEqual({ legacy: 3000, attempts: 500 })
      // A status change on an old message reports once (the trigger moved to the partitioned table).
      const [old] = await db<{ id: string }[]>`select id from messages limit 1`
      await db`update messages set status = 'delivered', delivered_at = now() where id = ${old?.id ?? ''}`
      const events = await db`select type from webhook_events where message_id = ${old?.id ?? ''}`
      expect(events.map((e) => e.type)).toEqual(['message.delivered'])
      // A row written before the workers' first round waits in the default partition; that round
      // moves it into its period and drops the default partition, once empty.
      const tomorrow = new Date(Math.floor(Date.now() / DAY) * DAY + DAY + 3600_000)
      const early = new Date(tomorrow.getTime() + 9 * DAY)
      const [waiting] = await db<{ id: string; part: string }[]>`
        insert into messages (id, api_key_id, type, phone, payload, accepted_at)
        values (gen_random_uuid(), ${apiKey?.id ?? ''}, 'text', '+5511900000001', '{}', ${early})
        returning id, tableoid::regclass::text as part`
      expect(waiting?.part).toBe('messages_default')
      const round = await maintainPartitions(db, { now: tomorrow, aheadDays: 1, retentionDays: 90 })
      expect(round.moved).toBe(1)
      expect(round.dropped).toEqual(expect.arrayContaining(['messages_default', 'message_attempts_default']))
      const [moved] = await db<{ part: string }[]>`
        select tableoid::regclass::text as part from messages where id = ${waiting?.id ?? ''}`
      expect(moved?.part).toBe(`messages_p${stamp(early.getTime())}`)
      expect(await db`select 1 from messages`).toHaveLength(3001)
      // A new day's message goes into its own partition, and the key still refuses a duplicate.
      const [fresh] = await db<{ part: string }[]>`
        insert into messages (id, api_key_id, type, phone, payload, accepted_at)
        values (${old?.id ?? ''}, ${apiKey?.id ?? ''}, 'text', '+5511900000000', '{}', ${tomorrow})
        returning tableoid::regclass::text as part`
      expect(fresh?.part).toBe(`messages_p${stamp(tomorrow.getTime())}`)
      await expect(
        db`insert into messages (id, api_key_id, type, phone, payload, accepted_at)
           values (${old?.id ?? ''}, ${apiKey?.id ?? ''}, 'text', '+5511900000000', '{}', ${tomorrow})`,
      ).rejects.toThrow(/duplicate key/)
      // The attempts' id sequence outlives the legacy partition.
      await db`drop table message_attempts_legacy`
      await db`insert into message_attempts (message_id, attempt, outcome, error_code, created_at)
               values (${old?.id ?? ''}, 2, 'failed', '131000', ${tomorrow})`
    } finally {
      await db.end({ timeout: 5 })
      await admin.unsafe(`drop database if exists "${name}" with (force)`)
      await admin.end({ timeout: 5 })
    }
  })
})
