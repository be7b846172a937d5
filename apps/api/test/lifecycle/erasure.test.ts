import { randomBytes, randomUUID } from 'node:crypto'
import { type ErasureView, type MessageJob, senderQueueName } from '@dispatch/contracts'
import { createSenderPool, senders, suppressions } from '@dispatch/db'
import { isRecipientHash, legacyRecipientKeys, messageIdAt, poolStickyKey } from '@dispatch/runtime'
import {
  fairKeys,
  MESSAGE_BUNDLE_JOB_NAME,
  MESSAGE_JOB_OPTIONS,
  messageBundleJobId,
} from '@dispatch/runtime/message-handoff'
import { captureLogs, inboundMessage, messageWebhook, waitFor } from '@dispatch/testing'
import type { RunningWorker } from '@dispatch/worker'
import { Queue } from 'bullmq'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  activeKey,
  addWebhookEndpoint,
  asAdmin,
  bindKeyToPool,
  buildTestApp,
  createWorld,
  expectError,
  messageView,
  postPlatformWebhook,
  startTestWorker,
  type TestApp,
  type TestWorld,
  untilMessageStatus,
} from '../helpers.ts'
import { findInPostgres, findInRedis } from './search.ts'

const APP_SECRET = 'app-secret-0123456789'
const SANDBOX_NUMBER = '100000000000001'

let world: TestWorld
let app: TestApp
let worker: RunningWorker
let redis: Redis
const workerLogs = captureLogs()
let acme: { id: string; key: string }
let beta: { id: string; key: string }
let phones = 0
const newPhone = () => `+55119${String(Date.now()).slice(-6)}${phones++}`.slice(0, 14)
const secret = (what: string) => `${what}-${randomBytes(6).toString('hex')}`

const sendText = (phone: string, text: string, key = acme.key, extra: object = {}, headers = {}) =>
  app.inject({
    method: 'POST',
    url: '/api/third-party/messages/send-text',
    headers: { 'x-api-key': key, ...headers },
    payload: { phone, text, ...extra },
  })

async function sent(phone: string, text: string, key = acme.key, headers = {}) {
  const res = await sendText(phone, text, key, {}, headers)
  expect(res.statusCode, res.body).toBe(202)
  const { messageId } = res.json<{ messageId: string }>()
  await untilMessageStatus(app, key, messageId, 'sent')
  return messageId
}

const customerSays = (phone: string, text: string) =>
  postPlatformWebhook(
    app,
    messageWebhook(SANDBOX_NUMBER, inboundMessage('text', { phone }, { text })),
    APP_SECRET,
  )

/** Requests an erasure and waits for its worker to end it; answers the 202's body and the ended one. */
async function erase(path: string, headers: Record<string, string>, body: object) {
  const res = await app.inject({ method: 'POST', url: `${path}/erasures`, headers, payload: body })
  expect(res.statusCode, res.body).toBe(202)
  const accepted = res.json<ErasureView>()
  const done = await waitFor(
    async () => {
      const view = (await app.inject({ url: `${path}/erasures/${accepted.id}`, headers })).json<ErasureView>()
      return view.status === 'completed' || view.status === 'failed' ? view : undefined
    },
    { what: 'the erasure to end', timeoutMs: 20_000, intervalMs: 100 },
  )
  return { accepted, res, done }
}

beforeAll(async () => {
  world = await createWorld()
  app = await buildTestApp(world, { WHATSAPP_APP_SECRET: APP_SECRET, SCHEDULE_MIN_AHEAD_SECONDS: '1' })
  worker = await startTestWorker(world, { LOG_LEVEL: 'info', WORKER_SENDERS: 'default' }, workerLogs.stream)
  redis = new Redis(world.redisUrl)
  const scopes = ['send:free-text', 'read:messages', 'manage:webhooks', 'manage:data']
  acme = await activeKey(app, { scopes })
  beta = await activeKey(app, { scopes, clientName: 'Beta' })
  // An endpoint, so the messages' and replies' events exist (and their delivery jobs).
  await addWebhookEndpoint(app, acme.key, {
    url: 'http://127.0.0.1:9/hooks',
    events: ['message.sent', 'message.received', 'recipient.opted_out'],
  })
})

afterAll(async () => {
  redis?.disconnect()
  await worker?.close()
  await app?.close()
  await world?.close()
})

describe("an admin's erasure", () => {
  it('leaves the phone and the texts nowhere in Postgres or Redis, keeps the opt-out, and touches no one else', async () => {
    const phone = newPhone()
    const other = newPhone()
    const texts = [secret('welcome'), secret('reminder'), secret('later'), secret('reply')]
    await sent(phone, texts[1] as string, beta.key)
    // acme writes last: the replies are routed to it (and make events for its endpoint).
    await sent(phone, texts[0] as string, acme.key, { 'idempotency-key': secret('idem') })
    const otherText = secret('untouched')
    const otherId = await sent(other, otherText)
    // Scheduled for an hour on: still queued in Redis when the erasure runs.
    const later = await sendText(phone, texts[2] as string, acme.key, {
      sendAt: new Date(Date.now() + 3600_000).toISOString(),
    })
    expect(later.statusCode, later.body).toBe(202)
    expect((await customerSays(phone, texts[3] as string)).statusCode).toBe(200)
    expect((await customerSays(phone, 'STOP')).statusCode).toBe(200)
    expectError(await sendText(phone, 'again'), 422, 'RECIPIENT_OPTED_OUT')
    // The reply's event and delivery job exist before the erasure runs.
    await waitFor(
      async () => {
        const [row] = await world.sql<
          { n: number }[]
        >`select count(*)::int as n from webhook_events where type = 'message.received'`
        return (row?.n ?? 0) > 0 || undefined
      },
      { what: "the reply's event" },
    )

    const { accepted, res, done } = await erase('/api/admin', asAdmin(), { phone })
    expect(res.body).not.toContain(phone)
    expect(accepted).toMatchObject({
      status: 'pending',
      scope: 'all',
      requestedBy: 'admin:ana',
      report: null,
    })
    expect(accepted.subject.hash).toMatch(/^hmac:[A-Za-z0-9_-]{43}$/)
    expect(done.status, JSON.stringify(done)).toBe('completed')
    expect(done.report).toMatchObject({
      messages: 3,
      messagesCanceled: 1,
      inboundMessages: 2,
      suppressions: 1,
      conversationWindows: 1,
      idempotencyAnswers: 1,
      inFlight: 0,
    })
    expect(done.report?.webhookEvents).toBeGreaterThanOrEqual(2)
    // The two sent messages' finished jobs, and the events' delivery jobs.
    expect(done.report?.redisJobs).toBeGreaterThanOrEqual(2)
    // The 24-hour window the replies opened.
    expect(done.report?.redisKeys).toBeGreaterThanOrEqual(1)

    // Searched, not assumed: the number (with and without its +) and every text, everywhere.
    const needles = [phone, phone.slice(1), ...texts]
    expect(await findInPostgres(world.sql, needles)).toEqual([])
    expect(await findInRedis(redis, world.queuePrefix, needles)).toEqual([])
    // The same searches find what was not erased: the other recipient's number and text.
    expect(await findInPostgres(world.sql, [other, otherText])).not.toEqual([])
    expect((await findInRedis(redis, world.queuePrefix, [other, otherText])).length).toBeGreaterThan(0)

    // The opt-out holds, by hash; the scheduled message never goes.
    expectError(await sendText(phone, 'after the erasure'), 422, 'RECIPIENT_OPTED_OUT')
    expectError(await sendText(phone, 'after the erasure', beta.key), 422, 'RECIPIENT_OPTED_OUT')
    const canceled = await untilMessageStatus(
      app,
      acme.key,
      later.json<{ messageId: string }>().messageId,
      'canceled',
    )
    expect(canceled).toMatchObject({ phone: null, lastError: { code: 'RECIPIENT_ERASED' } })

    // Someone else's message is as it was.
    const [kept] = await world.sql<{ phone: string; payload: { text: string }; redacted_at: Date | null }[]>`
      select phone, payload, redacted_at from messages where id = ${otherId}`
    expect(kept).toMatchObject({ phone: other, payload: { text: otherText }, redacted_at: null })

    // The audit names the admin and the hash, never the number.
    const audit = await world.sql<{ actor: string; details: object }[]>`
      select actor, details from admin_audit_log where action = 'erasure.request' and target_id = ${accepted.id}`
    expect(audit).toEqual([
      { actor: 'admin:ana', details: { subjectHash: accepted.subject.hash, scope: 'all' } },
    ])
    // No log line of the API or the worker printed it.
    expect(app.logs.lines.filter((l) => l.includes(phone.slice(1)))).toEqual([])
    expect(workerLogs.lines.filter((l) => l.includes(phone.slice(1)))).toEqual([])

    // Their own START still lifts the opt-out kept by hash; a new STOP holds again.
    expect((await customerSays(phone, 'START')).statusCode).toBe(200)
    expect((await sendText(phone, 'welcome back')).statusCode).toBe(202)
    expect((await customerSays(phone, 'STOP')).statusCode).toBe(200)
    expectError(await sendText(phone, 'and gone again'), 422, 'RECIPIENT_OPTED_OUT')
  })
})

describe("a message's channel fallback", () => {
  it('leaves neither the number nor the SMS text: its sent record and the error its fallback record kept', async () => {
    const fallbackKey = await activeKey(app, {
      scopes: ['send:free-text', 'read:messages', 'send:sms-fallback'],
      clientName: 'Fallback',
    })
    const phone = newPhone()
    const smsText = secret('sms-text')
    // WhatsApp took it: its sent record keeps the number and the SMS text (docs/fallback.md).
    const res = await sendText(phone, secret('wa-text'), fallbackKey.key, {
      fallback: { sms: { text: smsText } },
    })
    expect(res.statusCode, res.body).toBe(202)
    const { messageId } = res.json<{ messageId: string }>()
    await untilMessageStatus(app, fallbackKey.key, messageId, 'sent')
    await waitFor(async () => (await findInPostgres(world.sql, [smsText])).length > 0, {
      what: 'the record keeping the SMS',
    })
    // Its fallback's record with the provider's error quoting the number, as Twilio's 21211 does.
    await world.sql`
      insert into message_fallbacks (message_id, accepted_at, api_key_id, reason, state, decided_at, settled_at,
        error_code, error_message, updated_at)
      select id, accepted_at, api_key_id, 'whatsapp_undeliverable', 'failed', now(), now(), '21211',
        ${`The 'To' number ${phone} is not a valid phone number.`}, now()
      from messages where id = ${messageId}`

    const { done } = await erase('/api/admin', asAdmin(), { phone })
    expect(done.status, JSON.stringify(done)).toBe('completed')
    const needles = [phone, phone.slice(1), smsText]
    expect(await findInPostgres(world.sql, needles)).toEqual([])
    expect(await findInRedis(redis, world.queuePrefix, needles)).toEqual([])
    const [fallback] =
      await world.sql`select state, error_code, error_message from message_fallbacks where message_id = ${messageId}`
    expect(fallback).toEqual({ state: 'failed', error_code: '21211', error_message: null })
  })
})

describe('an erasure by phone', () => {
  it('reaches the same user known by their BSUID, and forgets the pair', async () => {
    const phone = newPhone()
    const userId = `BR.${randomBytes(8).toString('hex')}`
    const text = secret('by-bsuid')
    // The user writes with both identities (the platform pairs them), then gets a message by BSUID.
    await sent(phone, secret('first'))
    const pair = messageWebhook(
      SANDBOX_NUMBER,
      inboundMessage('text', { phone, userId, username: 'ana.s' }, { text: secret('hi') }),
    )
    expect((await postPlatformWebhook(app, pair, APP_SECRET)).statusCode).toBe(200)
    const res = await app.inject({
      method: 'POST',
      url: '/api/third-party/messages/send-text',
      headers: { 'x-api-key': acme.key },
      payload: { userId, text },
    })
    expect(res.statusCode, res.body).toBe(202)
    await untilMessageStatus(app, acme.key, res.json<{ messageId: string }>().messageId, 'sent')

    const { done } = await erase('/api/admin', asAdmin(), { phone })
    expect(done.report).toMatchObject({ messages: 2, inboundMessages: 1, recipientIdentities: 1 })
    expect(await findInPostgres(world.sql, [phone, phone.slice(1), userId, 'ana.s', text])).toEqual([])
    expect(await findInRedis(redis, world.queuePrefix, [phone, phone.slice(1), userId, text])).toEqual([])
  })
})

describe('messages no worker has taken yet', () => {
  it('are canceled wherever they wait: for admission, or admitted in their sender’s queue', async () => {
    // A sender no worker of this test serves (WORKER_SENDERS=default): its messages stay put.
    await world.sql`insert into senders (id, phone_number_id, display_name) values ('idle', '100000000000009', 'Idle')`
    const phone = newPhone()
    const texts = [secret('waiting'), secret('admitted')]
    const jobOf = (text: string) => ({
      messageId: crypto.randomUUID(),
      apiKeyId: acme.id,
      acceptedAt: new Date().toISOString(),
      senderId: 'idle',
      message: { type: 'text' as const, body: { phone, text } },
    })
    const waiting = jobOf(texts[0] as string)
    const admitted = jobOf(texts[1] as string)
    const keys = fairKeys(world.queuePrefix, 'idle')
    await redis.hset(keys.jobs, waiting.messageId, JSON.stringify(waiting))
    await redis.rpush(keys.list('normal', acme.id), waiting.messageId)
    const queue = new Queue<MessageJob>(senderQueueName('idle'), {
      connection: redis,
      prefix: world.queuePrefix,
    })
    await queue.add('text', admitted, { ...MESSAGE_JOB_OPTIONS, jobId: admitted.messageId })
    await queue.close()

    const { done } = await erase('/api/third-party', { 'x-api-key': acme.key }, { phone })
    expect(done.report).toMatchObject({ messages: 2, messagesCanceled: 2, inFlight: 0 })
    for (const id of [waiting.messageId, admitted.messageId]) {
      expect(await messageView(app, acme.key, id)).toMatchObject({
        status: 'canceled',
        phone: null,
        lastError: { code: 'RECIPIENT_ERASED' },
      })
    }
    const needles = [phone, phone.slice(1), ...texts]
    expect(await findInPostgres(world.sql, needles)).toEqual([])
    expect(await findInRedis(redis, world.queuePrefix, needles)).toEqual([])
  })
})

describe('a message in a bundle (MESSAGES_BUNDLE_SIZE)', () => {
  it('is canceled and taken out of the bundle, which keeps the other recipients’ messages', async () => {
    await world.sql`insert into senders (id, phone_number_id, display_name) values ('idle-bundles', '100000000000010', 'Idle') on conflict do nothing`
    const phone = newPhone()
    const other = newPhone()
    const text = secret('bundled')
    const jobOf = (to: string, body: string) => ({
      messageId: crypto.randomUUID(),
      apiKeyId: acme.id,
      acceptedAt: new Date().toISOString(),
      senderId: 'idle-bundles',
      message: { type: 'text' as const, body: { phone: to, text: body } },
    })
    const erased = jobOf(phone, text)
    const kept = jobOf(other, 'for someone else')
    const queue = new Queue(senderQueueName('idle-bundles'), { connection: redis, prefix: world.queuePrefix })
    const bundleId = messageBundleJobId('erasure-test')
    await queue.add(
      MESSAGE_BUNDLE_JOB_NAME,
      { messages: [kept, erased] },
      { ...MESSAGE_JOB_OPTIONS, jobId: bundleId },
    )
    await redis.hset(
      fairKeys(world.queuePrefix, 'idle-bundles').bundled,
      erased.messageId,
      bundleId,
      kept.messageId,
      bundleId,
    )

    const { done } = await erase('/api/third-party', { 'x-api-key': acme.key }, { phone })
    expect(done.report).toMatchObject({ messagesCanceled: 1, inFlight: 0 })
    expect(await messageView(app, acme.key, erased.messageId)).toMatchObject({
      status: 'canceled',
      phone: null,
      lastError: { code: 'RECIPIENT_ERASED' },
    })
    // The other message still waits in its bundle.
    expect(
      (await queue.getJob(bundleId))?.data.messages.map((m: { messageId: string }) => m.messageId),
    ).toEqual([kept.messageId])
    await queue.close()
    const needles = [phone, phone.slice(1), text]
    expect(await findInPostgres(world.sql, needles)).toEqual([])
    expect(await findInRedis(redis, world.queuePrefix, needles)).toEqual([])
  })
})

describe('a sent outcome not yet written to Postgres', () => {
  it("is written and erased, not left in its sender's sent log to bring the recipient back", async () => {
    // A sender no worker of this test serves: no recorder or sweep writes its log, as when the
    // process that logged the outcome died and Postgres has no row for the erasure to clear.
    await world.sql`insert into senders (id, phone_number_id, display_name) values ('orphan', '100000000000008', 'Orphan')`
    const phone = newPhone()
    const text = secret('logged')
    const acceptedAt = new Date()
    const id = messageIdAt(acceptedAt.getTime())
    const outcome = {
      id,
      apiKeyId: acme.id,
      type: 'text',
      phone,
      userId: null,
      payload: { phone, text },
      clientReference: null,
      senderPhoneNumberId: '100000000000008',
      senderId: 'orphan',
      batchId: null,
      acceptedAt,
      sendAt: null,
      expiresAt: null,
      status: 'sent',
      attempts: 1,
      platformMessageId: `wamid.${secret('orphan')}`,
      lastErrorCode: null,
      lastErrorMessage: null,
      at: new Date(),
    }
    const stream = fairKeys(world.queuePrefix, 'orphan').sentLog
    await redis.xadd(stream, '*', 'o', JSON.stringify(outcome))
    // Another key's outcome to the same phone: a key's erasure leaves it where it is.
    await redis.xadd(
      stream,
      '*',
      'o',
      JSON.stringify({ ...outcome, id: messageIdAt(Date.now()), apiKeyId: beta.id }),
    )

    const { done } = await erase('/api/third-party', { 'x-api-key': acme.key }, { phone })
    expect(done.report).toMatchObject({ messages: 1 })
    expect(await messageView(app, acme.key, id)).toMatchObject({ status: 'sent', phone: null })
    const needles = [phone, phone.slice(1), text]
    expect(await findInPostgres(world.sql, needles)).toEqual([])
    const left = await redis.xrange(stream, '-', '+')
    expect(left.map(([, fields]) => JSON.parse(fields[1] ?? '{}').apiKeyId)).toEqual([beta.id])
    await redis.del(stream)
  })
})

describe('an erasure that fails', () => {
  it('is marked failed, and leaves the recipient neither in its outbox row nor in its job', async () => {
    const phone = newPhone()
    const { accepted, done } = await erase('/api/admin', asAdmin(), { phone })
    expect(done.status).toBe('completed')
    // The same erasure's job again, for an erasure that is gone: it cannot run, and fails for good.
    await world.sql`delete from admin_audit_log where target_id = ${accepted.id}`
    await world.sql`delete from erasures where id = ${accepted.id}`
    const [row] = await world.sql<{ id: number }[]>`
      insert into outbox (topic, payload) values ('erasures', ${world.sql.json({ erasureId: accepted.id, phone })})
      returning id`
    await waitFor(
      async () => {
        const [outbox] = await world.sql<
          { payload: object }[]
        >`select payload from outbox where id = ${row?.id ?? 0}`
        return JSON.stringify(outbox?.payload) === JSON.stringify({ erasureId: accepted.id }) || undefined
      },
      { what: "the failed erasure's outbox row stripped" },
    )
    expect(await findInRedis(redis, world.queuePrefix, [phone, phone.slice(1)])).toEqual([])
    expect(workerLogs.text()).toContain('erasure failed')
  })
})

describe("a key's erasure", () => {
  it("erases the key's own data only, and another key neither reads it nor is touched", async () => {
    const phone = newPhone()
    const own = [secret('own'), secret('own')]
    const ownIds = [await sent(phone, own[0] as string), await sent(phone, own[1] as string)]
    const betaText = secret('beta')
    const betaId = await sent(phone, betaText, beta.key)

    const { accepted, done } = await erase('/api/third-party', { 'x-api-key': acme.key }, { phone })
    expect(accepted).toMatchObject({ scope: 'key', requestedBy: `key:${acme.id}` })
    expect(done.status).toBe('completed')
    expect(done.report).toMatchObject({
      messages: 2,
      messagesCanceled: 0,
      conversationWindows: 0,
      inFlight: 0,
    })

    const rows = await world.sql<
      { id: string; phone: string | null; payload: object; redacted_at: Date | null }[]
    >`
      select id, phone, payload, redacted_at from messages where id::text = any(${world.sql.array([...ownIds, betaId])})`
    for (const row of rows.filter((r) => ownIds.includes(r.id))) {
      expect(row.phone).toBeNull()
      expect(row.payload).toEqual({})
      expect(row.redacted_at).toBeInstanceOf(Date)
    }
    expect(rows.find((r) => r.id === betaId)).toMatchObject({
      phone,
      payload: { text: betaText },
      redacted_at: null,
    })
    expect(await findInPostgres(world.sql, own)).toEqual([])
    expect(await findInRedis(redis, world.queuePrefix, own)).toEqual([])
    // The views say so: no recipient any more, status and times kept.
    const view = (
      await app.inject({ url: `/api/third-party/messages/${ownIds[0]}`, headers: { 'x-api-key': acme.key } })
    ).json()
    expect(view).toMatchObject({ status: 'sent', phone: null })

    // Another key's erasure is not there for beta; an admin sees it.
    expectError(
      await app.inject({
        url: `/api/third-party/erasures/${accepted.id}`,
        headers: { 'x-api-key': beta.key },
      }),
      404,
      'NOT_FOUND',
    )
    const seen = await app.inject({ url: `/api/admin/erasures/${accepted.id}`, headers: asAdmin() })
    expect(seen.json()).toMatchObject({ id: accepted.id, status: 'completed' })
  })

  it('is refused without manage:data, with both or neither recipient, and a bad phone', async () => {
    const reader = await activeKey(app, { scopes: ['send:free-text', 'read:messages'] })
    const post = (payload: object, key = acme.key) =>
      app.inject({ method: 'POST', url: '/api/third-party/erasures', headers: { 'x-api-key': key }, payload })
    expectError(await post({ phone: newPhone() }, reader.key), 403, 'INSUFFICIENT_SCOPE')
    expectError(await post({}), 400, 'VALIDATION_ERROR', /phone is required/)
    expectError(await post({ phone: newPhone(), userId: 'US.123' }), 400, 'VALIDATION_ERROR', /not both/)
    expectError(await post({ phone: '5511987654321' }), 400, 'VALIDATION_ERROR')
    expectError(
      await app.inject({ method: 'POST', url: '/api/admin/erasures', payload: { phone: newPhone() } }),
      401,
      'ADMIN_AUTH_REQUIRED',
    )
    expectError(
      await app.inject({ url: `/api/admin/erasures/${crypto.randomUUID()}`, headers: asAdmin() }),
      404,
      'NOT_FOUND',
    )
  })
})

describe("a pooled key's recipient", () => {
  it("keeps no sticky record naming them (a key's erasure its pool's, an admin's every pool's) and its tenant's opt-outs on the pool by hash", async () => {
    // Two numbers of one business in a pool, written as an admin's routes would (no platform here).
    const tag = String(Date.now()).slice(-9)
    const senderIds = [randomUUID(), randomUUID()]
    const { db } = app.deps
    await db.insert(senders).values(
      senderIds.map((id, n) => ({
        id,
        phoneNumberId: `8${tag}${n}`,
        displayName: `Pool number ${n}`,
        businessId: `7${tag}`,
        wabaId: `6${tag}`,
      })),
    )
    const created = await createSenderPool(db, {
      name: 'Erasure pool',
      members: senderIds.map((senderId) => ({ senderId, weight: 1 })),
      actor: 'test',
      now: new Date(),
    })
    if (!('outcome' in created) || created.outcome !== 'written') throw new Error('pool not created')
    const poolId = created.detail.pool.id
    const pooled = await activeKey(app, {
      scopes: ['send:free-text', 'read:messages', 'manage:data'],
      tenantId: `pool-${tag}`,
    })
    // Written straight to Postgres, so announced to no API: loaded now.
    await app.sending.pools.refresh()
    await bindKeyToPool(app, pooled.id, poolId)
    const [byKey, byAdmin] = [newPhone(), newPhone()]
    for (const phone of [byKey, byAdmin]) {
      // Queued on a number no worker here serves: its sticky record is written at accept.
      expect((await sendText(phone, secret('pooled'), pooled.key)).statusCode).toBe(202)
      await waitFor(
        async () => (await redis.exists(poolStickyKey(world.queuePrefix, poolId, phone))) || undefined,
        {
          what: 'the sticky record',
        },
      )
      // Another pool's record of them (a pool deleted since, or another tenant's).
      await redis.set(poolStickyKey(world.queuePrefix, randomUUID(), phone), 'other 0 1', 'PX', 60_000)
    }

    // Its tenant's opt-outs of them on the pool's other number (which the pooled key lists and
    // lifts), and on a number outside the pool (which it does not).
    const entryOn = (senderId: string, phoneNumberId: string) => ({
      senderId,
      phoneNumberId,
      recipient: byKey,
      scope: 'all' as const,
      source: 'api' as const,
      reason: `asked on ${senderId}`,
      // Its owner (generated) is the tenant's: `tenant:pool-…`.
      tenantId: `pool-${tag}`,
      apiKeyId: pooled.id,
      createdBy: `key:${pooled.id}`,
    })
    const [onMember, outside] = await db
      .insert(suppressions)
      .values([entryOn(senderIds[1] as string, `8${tag}1`), entryOn('default', SANDBOX_NUMBER)])
      .returning({ id: suppressions.id })

    // What an older release kept under the recipient's phone on the pool's other number.
    for (const key of legacyRecipientKeys(world.queuePrefix, `8${tag}1`, byKey))
      await redis.set(key, 'all', 'PX', 60_000)

    // The key's erasure: its pool's record goes, another pool's stays; its tenant's opt-out on the
    // pool's member stays, kept by hash; the one outside the pool is not the key's to erase.
    const own = await erase('/api/third-party', { 'x-api-key': pooled.key }, { phone: byKey })
    expect(own.done.status).toBe('completed')
    expect(await redis.exists(poolStickyKey(world.queuePrefix, poolId, byKey))).toBe(0)
    expect(await findInRedis(redis, world.queuePrefix, [byKey])).toHaveLength(1)
    const recipientOf = async (id: string | undefined) =>
      (
        await world.sql<
          { recipient: string }[]
        >`select recipient from suppressions where id = ${id as string}`
      )[0]?.recipient
    expect(isRecipientHash((await recipientOf(onMember?.id)) as string)).toBe(true)
    expect(await recipientOf(outside?.id)).toBe(byKey)

    // An admin's: every pool's, and nothing in Redis names them.
    const all = await erase('/api/admin', asAdmin(), { phone: byAdmin })
    expect(all.done.status).toBe('completed')
    expect(await findInRedis(redis, world.queuePrefix, [byAdmin, byAdmin.slice(1)])).toEqual([])
  })
})
