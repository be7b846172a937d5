import { senderQueueName } from '@dispatch/contracts'
import { queuePrefix } from '@dispatch/runtime'
import { fairKeys } from '@dispatch/runtime/message-handoff'
import { createRedisClient } from '@dispatch/runtime/redis'
import {
  captureLogs,
  type FakeWhatsApp,
  type LocalRedisCluster,
  parseExposition,
  redisClusterMissing,
  sampleValue,
  startFakeWhatsApp,
  startRedisCluster,
  startWebhookReceiver,
  testQueuePrefix,
  waitFor,
} from '@dispatch/testing'
import type { RunningWorker } from '@dispatch/worker'
import { Queue } from 'bullmq'
import { Cluster, Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  activeKey,
  addWebhookEndpoint,
  asAdmin,
  buildTestApp,
  createWorld,
  decide,
  expectError,
  messageView,
  SEND_SCOPES,
  send,
  startTestWorker,
  type TestApp,
  type TestWorld,
  untilMessageStatus,
  validSends,
} from './helpers.ts'

/**
 * The service on a real Redis Cluster: three masters started here from the machine's
 * `redis-server`, two API instances and a worker connected with REDIS_CLUSTER=true, every queue on
 * its own hash tag (QUEUE_PREFIX without one). A key used across slots in one script, transaction or
 * pipeline would fail here with CROSSSLOT, which a single Redis never shows.
 */
const NUMBER = '100000000000555'
const TOKEN = 'EAAG-cluster-sender-token-0001'

let cluster: LocalRedisCluster
let world: TestWorld
let fake: FakeWhatsApp
let app: TestApp
let second: TestApp
let worker: RunningWorker
const extra: { close(): Promise<unknown> }[] = []
const workerLogs = captureLogs()

const clusterEnv = () => ({ REDIS_URL: cluster.url, REDIS_CLUSTER: 'true' })
const workerEnv = () => ({
  ...clusterEnv(),
  WHATSAPP_API_URL: fake.url,
  WHATSAPP_ACCESS_TOKEN: TOKEN,
  WHATSAPP_PHONE_NUMBER_ID: NUMBER,
  MESSAGES_BACKOFF_MS: '20',
  ADMISSION_INTERVAL_MS: '20',
})

const missing = redisClusterMissing()
if (missing) console.warn(`Redis Cluster tests skipped: ${missing}`)

describe.skipIf(missing !== undefined)(
  `on a local Redis Cluster${missing ? ` (skipped: ${missing})` : ''}`,
  () => {
    beforeAll(async () => {
      cluster = await startRedisCluster({ masters: 3 })
      world = { ...(await createWorld()), redisUrl: cluster.url }
      fake = await startFakeWhatsApp()
      fake.number(NUMBER, { token: TOKEN })
      app = await buildTestApp(world, { ...clusterEnv(), MESSAGE_RATE_PER_SECOND: '10000' })
      second = await buildTestApp(world, { ...clusterEnv(), MESSAGE_RATE_PER_SECOND: '10000' })
      worker = await startTestWorker(
        world,
        { ...workerEnv(), LOG_LEVEL: 'warn', METRICS_PORT: '0' },
        workerLogs.stream,
      )
    }, 120_000)

    afterAll(async () => {
      for (const part of extra.reverse()) await part.close().catch(() => {})
      await worker?.close()
      await second?.close()
      await app?.close()
      await fake?.close()
      await world?.close()
      await cluster?.stop()
    }, 60_000)

    const SENT = new Set(['sent', 'delivered', 'read'])

    /** Each master's own connection: where the cluster really put the keys. */
    async function keysPerMaster(match: string): Promise<number[]> {
      return Promise.all(
        cluster.ports.map(async (port) => {
          const node = new Redis({ host: '127.0.0.1', port })
          try {
            let count = 0
            const pages = node.scanStream({ match, count: 1000 }) as AsyncIterable<string[]>
            for await (const keys of pages) count += keys.length
            return count
          } finally {
            node.disconnect()
          }
        }),
      )
    }

    describe('on a 3-master Redis Cluster, a queue per hash tag', () => {
      it('accepts on both instances and delivers every message, single and batched', async () => {
        const key = await activeKey(app, { scopes: SEND_SCOPES })
        const single = await send(app, 'send-text', key.key)
        expect(single.statusCode, single.body).toBe(202)
        const batch = await second.inject({
          method: 'POST',
          url: '/api/third-party/messages/batch',
          headers: { 'x-api-key': key.key },
          payload: {
            messages: Array.from({ length: 20 }, (_, i) => ({
              type: 'text',
              phone: '+5511987654321',
              text: `n${i}`,
            })),
          },
        })
        expect(batch.statusCode, batch.body).toBe(202)
        const ids = [
          single.json<{ messageId: string }>().messageId,
          ...batch.json<{ results: { messageId: string }[] }>().results.map((m) => m.messageId),
        ]
        expect(ids).toHaveLength(21)
        await waitFor(
          async () => {
            const views = await Promise.all(ids.map((id) => messageView(second, key.key, id)))
            return views.every((view) => SENT.has(view.status))
          },
          { what: 'all 21 messages sent through the cluster', timeoutMs: 30_000, intervalMs: 100 },
        )
        for (const id of ids) expect(fake.sendsOf(id), id).toBe(1)
        // The statuses in Postgres are what the platform saw.
        const rows = await world.sql<{ id: string; platform_message_id: string }[]>`
      select id, platform_message_id from messages where id in ${world.sql(ids)}`
        for (const row of rows) {
          const given = fake.requests.filter((r) => r.messageId === row.id).map((r) => r.platformMessageId)
          expect(given).toContain(row.platform_message_id)
        }
      })

      it('spreads the queues over the shards: each sender queue sits on its fair-admission slot', async () => {
        const perMaster = await keysPerMaster(`${world.queuePrefix}*`)
        expect(perMaster.filter((n) => n > 0).length, `keys per master: ${perMaster}`).toBeGreaterThanOrEqual(
          2,
        )
        const layout = { QUEUE_PREFIX: world.queuePrefix, REDIS_CLUSTER: true }
        const client = new Cluster([{ host: '127.0.0.1', port: cluster.ports[0] as number }])
        try {
          const name = senderQueueName('default')
          const queueSlot = await client.cluster('KEYSLOT', `${queuePrefix(layout, name)}:${name}:wait`)
          const fairSlot = await client.cluster('KEYSLOT', fairKeys(world.queuePrefix, 'default').jobs)
          expect(queueSlot).toBe(fairSlot)
          const emailSlot = await client.cluster('KEYSLOT', `${queuePrefix(layout, 'email')}:email:wait`)
          expect(await client.cluster('KEYSLOT', `${queuePrefix(layout, 'email')}:email:meta`)).toBe(
            emailSlot,
          )
        } finally {
          client.disconnect()
        }
      })

      it("enforces a key's rate across both instances: 429 RATE_LIMITED with Retry-After", async () => {
        const key = await activeKey(app, { scopes: SEND_SCOPES })
        const patched = await app.inject({
          method: 'PATCH',
          url: `/api/admin/api-keys/${key.id}`,
          headers: asAdmin(),
          payload: { ratePerSecond: 3 },
        })
        expect(patched.statusCode, patched.body).toBe(200)
        const answers = []
        for (let i = 0; i < 8; i++) answers.push(await send(i % 2 ? second : app, 'send-text', key.key))
        const codes = answers.map((res) => res.statusCode)
        expect(codes.filter((code) => code === 202).length, String(codes)).toBeGreaterThanOrEqual(3)
        const refused = answers.find((res) => res.statusCode === 429)
        expect(refused, String(codes)).toBeDefined()
        expectError(refused as NonNullable<typeof refused>, 429, 'RATE_LIMITED')
        expect(Number(refused?.headers['retry-after'])).toBeGreaterThanOrEqual(1)
      })

      it('enforces a daily quota across both instances: the N+1th is 429 QUOTA_EXCEEDED', async () => {
        const key = await activeKey(app, { scopes: SEND_SCOPES })
        const patched = await app.inject({
          method: 'PATCH',
          url: `/api/admin/api-keys/${key.id}`,
          headers: asAdmin(),
          payload: { dailyQuota: 4 },
        })
        expect(patched.statusCode, patched.body).toBe(200)
        for (let i = 0; i < 4; i++) {
          const res = await send(i % 2 ? second : app, 'send-text', key.key)
          expect(res.statusCode, res.body).toBe(202)
        }
        expectError(await send(second, 'send-text', key.key), 429, 'QUOTA_EXCEEDED')
        expectError(await send(app, 'send-text', key.key), 429, 'QUOTA_EXCEEDED')
      })

      it("checks a marketing template's opt-out and the sender's cap in one slot, across both instances", async () => {
        const key = await activeKey(app, { scopes: SEND_SCOPES })
        const setCap = (marketingCap: object | null) =>
          app.inject({
            method: 'PATCH',
            url: '/api/admin/senders/default',
            headers: asAdmin(),
            payload: { marketingCap },
          })
        expect((await setCap({ count: 1, hours: 1 })).statusCode).toBe(200)
        try {
          const promo = (phone: string) => ({
            phone,
            templateId: 'spring_sale',
            language: 'en_US',
            variables: { '1': 'Ana' },
            category: 'MARKETING',
          })
          const sendTemplate = (on: TestApp, payload: object) =>
            on.inject({
              method: 'POST',
              url: '/api/third-party/messages/send-template',
              headers: { 'x-api-key': key.key },
              payload,
            })
          // Each instance reloads the sender when the change is announced.
          await waitFor(async () => {
            const probe = `+55319${String(Date.now()).slice(-7)}`
            await sendTemplate(second, promo(probe))
            return (await sendTemplate(second, promo(probe))).statusCode === 422 || undefined
          })
          const opted = '+5531977770001'
          const added = await app.inject({
            method: 'POST',
            url: '/api/admin/suppressions',
            headers: asAdmin(),
            payload: { senderId: 'default', phone: opted, scope: 'marketing', reason: 'cluster test' },
          })
          expect(added.statusCode, added.body).toBe(201)
          expectError(await sendTemplate(second, promo(opted)), 422, 'RECIPIENT_OPTED_OUT')

          const phone = '+5531977770002'
          expect((await sendTemplate(app, promo(phone))).statusCode).toBe(202)
          expectError(await sendTemplate(second, promo(phone)), 422, 'FREQUENCY_CAP_EXCEEDED')
          const batch = await second.inject({
            method: 'POST',
            url: '/api/third-party/messages/batch',
            headers: { 'x-api-key': key.key },
            payload: {
              messages: ['+5531977770003', '+5531977770003', opted, phone].map((p) => ({
                type: 'template',
                ...promo(p),
              })),
            },
          })
          expect(batch.statusCode, batch.body).toBe(202)
          expect(
            batch
              .json()
              .results.map(
                (r: { status?: string; error?: { errorCode: string } }) => r.status ?? r.error?.errorCode,
              ),
          ).toEqual(['queued', 'FREQUENCY_CAP_EXCEEDED', 'RECIPIENT_OPTED_OUT', 'FREQUENCY_CAP_EXCEEDED'])
        } finally {
          await setCap(null)
        }
      })

      it('a key revoked on one instance is refused by the other at once (pub/sub over the cluster)', async () => {
        const key = await activeKey(app, { scopes: SEND_SCOPES })
        // The second instance knows the key (cached) before the revocation.
        expect((await send(second, 'send-text', key.key)).statusCode).toBe(202)
        expect((await decide(app, key.id, 'revoke')).statusCode).toBe(200)
        await waitFor(async () => (await send(second, 'send-text', key.key)).statusCode === 403, {
          what: 'the second instance to refuse the revoked key',
          timeoutMs: 5_000,
        })
        expectError(await send(second, 'send-text', key.key), 403, 'API_KEY_NOT_ACTIVE', /revoked/)
      })

      it('replays an idempotent request on either instance, storing one message', async () => {
        const key = await activeKey(app, { scopes: SEND_SCOPES })
        const headers = { 'idempotency-key': `cluster-${Date.now()}` }
        const first = await send(app, 'send-text', key.key, validSends['send-text'], headers)
        expect(first.statusCode, first.body).toBe(202)
        const again = await send(second, 'send-text', key.key, validSends['send-text'], headers)
        expect(again.statusCode).toBe(202)
        expect(again.headers['idempotent-replayed']).toBe('true')
        expect(again.json()).toEqual(first.json())
        // The row is written by the worker: once the message is out, exactly one row exists.
        await untilMessageStatus(app, key.key, first.json().messageId, ['sent', 'delivered', 'read'], 20_000)
        const rows = await world.sql`select id from messages where api_key_id = ${key.id}`
        expect(rows.map((row) => row.id)).toEqual([first.json().messageId])
      })

      it("delivers a webhook event through the outbox, the webhooks queue and the endpoint's gate", async () => {
        const receiver = await startWebhookReceiver()
        extra.push(receiver)
        const key = await activeKey(app, { scopes: [...SEND_SCOPES, 'manage:webhooks'] })
        await addWebhookEndpoint(app, key.key, { url: receiver.url, events: ['message.sent'] })
        const res = await send(second, 'send-text', key.key)
        expect(res.statusCode, res.body).toBe(202)
        const id = res.json<{ messageId: string }>().messageId
        const event = await waitFor(
          () =>
            receiver.received.find((r) => r.json.type === 'message.sent' && r.json.data?.messageId === id),
          { what: 'the message.sent event at the endpoint', timeoutMs: 20_000 },
        )
        expect(event.headers['webhook-signature']).toMatch(/^v1,/)
      })

      it("the worker's /metrics reads the queues and admission lists on the cluster", async () => {
        expect(worker.metricsUrl).toBeDefined()
        const res = await fetch(`${worker.metricsUrl}/metrics`)
        expect(res.status).toBe(200)
        const samples = parseExposition(await res.text())
        expect(
          sampleValue(samples, 'dispatch_messages_sent_total', { sender_id: 'default' }),
        ).toBeGreaterThanOrEqual(21)
        // The queue and admission gauges come from Redis: present only when their reads succeeded.
        expect(samples.some((s) => s.name === 'bullmq_job_count' && s.labels.queue === 'messages')).toBe(true)
        expect(
          sampleValue(samples, 'dispatch_sender_waiting_messages', { sender_id: 'default' }),
        ).toBeGreaterThanOrEqual(0)
      })

      it("counts the messaging limit after the gates (the window's and the reach's keys sit on other slots)", async () => {
        const key = await activeKey(app, { scopes: SEND_SCOPES })
        const setLimit = (payload: object) =>
          app.inject({ method: 'PATCH', url: '/api/admin/senders/default', headers: asAdmin(), payload })
        expect((await setLimit({ messagingLimitOverride: 1, messagingLimitPolicy: 'hold' })).statusCode).toBe(
          200,
        )
        try {
          let n = 0
          const template = async () => {
            const phone = `+5531966${String(Date.now()).slice(-5)}${n++}`
            const res = await send(second, 'send-template', key.key, {
              ...validSends['send-template'],
              phone,
            })
            expect(res.statusCode, res.body).toBe(202)
            return untilMessageStatus(app, key.key, res.json().messageId, ['sent', 'scheduled'])
          }
          // The worker reloads the sender when the change is announced: until then nothing is counted.
          await waitFor(async () => (await template()).status === 'scheduled' || undefined, {
            what: 'a template held past the limit of 1',
            timeoutMs: 20_000,
          })
          expect(await template()).toMatchObject({ status: 'scheduled', scheduledReason: 'messaging_limit' })
          const view = await app.inject({
            method: 'GET',
            url: '/api/admin/senders/default',
            headers: asAdmin(),
          })
          expect(view.json().messagingLimit).toMatchObject({ limit: 1, reach: 1 })
        } finally {
          await setLimit({ messagingLimitOverride: null, messagingLimitPolicy: 'off' })
        }
      })

      it('a queue built on a fail-fast client before the cluster is ready works once it is', async () => {
        // BullMQ takes a `connect`ed cluster client for ready and sends INFO at once: a client that
        // refused it would leave the queue broken for good (a worker that never delivered).
        const client = createRedisClient(
          { REDIS_URL: cluster.url, REDIS_CLUSTER: true },
          { enableOfflineQueue: false, maxRetriesPerRequest: 1, commandTimeout: 2000 },
        )
        client.on('error', () => {})
        await new Promise((resolve) => client.once('connect', resolve))
        const queue = new Queue('early', { connection: client, prefix: `${world.queuePrefix}:{early}` })
        queue.on('error', () => {})
        try {
          expect(await queue.getJobCounts('waiting')).toEqual({ waiting: 0 })
          // Once ready, it fails fast again: nothing waits in an offline queue.
          expect((client as Cluster).options.enableOfflineQueue).toBe(false)
        } finally {
          await queue.close()
          client.disconnect()
        }
      })

      it('no process logged a Redis Cluster error (a script, transaction or pipeline across slots)', () => {
        const lines = [...app.logs.lines, ...second.logs.lines, ...workerLogs.lines]
        expect(lines.length).toBeGreaterThan(0)
        const slotErrors = lines.filter((line) =>
          /CROSSSLOT|same slot|slots allocation|CLUSTERDOWN/i.test(line),
        )
        // Joined, so a failure shows the lines themselves.
        expect(slotErrors.join('\n')).toBe('')
        // A command that timed out is the machine's load (the suite shares two cores), not the cluster.
        const redisErrors = lines.filter(
          (line) =>
            /"level":(40|50|60)/.test(line) &&
            /redis/i.test(line) &&
            !/"message":"Command timed out"/.test(line),
        )
        expect(redisErrors.join('\n')).toBe('')
      })
    })

    describe('on a Redis Cluster with one hash tag in QUEUE_PREFIX', () => {
      it('keeps every key of the service on one shard, and delivers', async () => {
        const tagged = `{${testQueuePrefix()}}`
        const taggedWorld = { ...world, queuePrefix: tagged }
        const api = await buildTestApp(taggedWorld, { ...clusterEnv(), MESSAGE_RATE_PER_SECOND: '10000' })
        extra.push(api)
        const taggedWorker = await startTestWorker(taggedWorld, workerEnv())
        extra.push(taggedWorker)
        const key = await activeKey(api, { scopes: SEND_SCOPES })
        const res = await send(api, 'send-text', key.key)
        expect(res.statusCode, res.body).toBe(202)
        const id = res.json<{ messageId: string }>().messageId
        await untilMessageStatus(api, key.key, id, ['sent', 'delivered', 'read'], 20_000)
        expect(fake.sendsOf(id)).toBe(1)
        const perMaster = await keysPerMaster(`${tagged}*`)
        expect(
          perMaster.filter((n) => n > 0),
          `keys per master: ${perMaster}`,
        ).toHaveLength(1)
      })
    })
  },
)
