import { randomBytes } from 'node:crypto'
import { SENDER_CHANGES_CHANNEL, type SenderPoolView, type SenderView } from '@dispatch/contracts'
import { type FakeWhatsApp, startFakeWhatsApp, waitFor } from '@dispatch/testing'
import type { RunningWorker } from '@dispatch/worker'
import { afterAll, beforeAll, expect, it } from 'vitest'
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
 * One number of a three-number pool turned RED mid-run (docs/benchmarks-failover.md, "A pool's
 * number falling mid-run"): the pool's other numbers keep delivering at 0.9x their pace before or
 * better, and no message waits on the fallen number longer than the configured time. Number B is
 * slow (1 message/s) so a backlog waits on it when it falls; A and C are fast. Steady traffic to new
 * recipients throughout.
 */
const NUMBERS = { a: '406540352240011', b: '406540352240022', c: '406540352240033' }
const TOLERANCE_S = 2
/** Sends per second offered, and for how long before and after the fall. */
const RATE = 30
const PHASE_MS = 3000

let world: TestWorld
let app: TestApp
let fake: FakeWhatsApp
let worker: RunningWorker
const members = {} as Record<'a' | 'b' | 'c', SenderView>

beforeAll(async () => {
  world = await createWorld()
  fake = await startFakeWhatsApp()
  app = await buildTestApp(world, {
    MESSAGE_RATE_PER_SECOND: '10000',
    POOL_RATE_LIMIT_TOLERANCE_SECONDS: String(TOLERANCE_S),
  })
  worker = await startTestWorker(world, {
    WORKER_QUEUES: 'messages',
    WHATSAPP_API_URL: fake.url,
    WHATSAPP_ACCESS_TOKEN: 'EAAG-red-default-token',
    WHATSAPP_PHONE_NUMBER_ID: '106540352249901',
    ADMISSION_INTERVAL_MS: '20',
    POOL_RATE_LIMIT_TOLERANCE_SECONDS: String(TOLERANCE_S),
  })
  for (const name of ['a', 'b', 'c'] as const) {
    const token = `EAAG${randomBytes(18).toString('base64url')}`
    fake.number(NUMBERS[name], { token })
    const res = await app.inject({
      method: 'POST',
      url: '/api/admin/senders',
      headers: asAdmin(),
      payload: {
        phoneNumberId: NUMBERS[name],
        displayName: `Red run ${name}`,
        accessToken: token,
        businessId: '7101',
        wabaId: '97101',
        ratePerSecond: name === 'b' ? 1 : 200,
      },
    })
    expect(res.statusCode, res.body).toBe(201)
    members[name] = res.json<SenderView>()
  }
})
afterAll(async () => {
  await worker?.close()
  await app?.close()
  await fake?.close()
  await world?.close()
})

it('keeps the other numbers at 0.9x their pace or better, and nothing waits on the fallen one past the configured time', async () => {
  const created = await app.inject({
    method: 'POST',
    url: '/api/admin/sender-pools',
    headers: asAdmin(),
    payload: {
      name: 'Red run',
      members: (['a', 'b', 'c'] as const).map((n) => ({ senderId: members[n].id })),
    },
  })
  expect(created.statusCode, created.body).toBe(201)
  const pool = created.json<SenderPoolView>()
  const key = await activeKey(app, { scopes: [...SEND_SCOPES, 'manage:webhooks'] })
  await addWebhookEndpoint(app, key.key, {
    url: 'http://127.0.0.1:9/red-run',
    events: ['message.sender_changed'],
  })
  await bindKeyToPool(app, key.id, pool.id)

  let n = 0
  const ids: string[] = []
  const offer = async (ms: number) => {
    const until = Date.now() + ms
    while (Date.now() < until) {
      const batch = await Promise.all(
        Array.from({ length: RATE / 10 }, () =>
          send(app, 'send-text', key.key, { phone: `+55119123${String(n++).padStart(5, '0')}`, text: 'hi' }),
        ),
      )
      for (const res of batch) {
        expect(res.statusCode, res.body).toBe(202)
        ids.push(res.json<{ messageId: string }>().messageId)
      }
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }
  const start = Date.now()
  await offer(PHASE_MS)
  const fellAt = Date.now()
  // As a health change is announced (senders:changed): every API instance and worker hears it.
  await world.sql`update senders set quality_rating = 'RED' where id = ${members.b.id}`
  await app.deps.redis.publish(`${world.queuePrefix}:${SENDER_CHANGES_CHANNEL}`, members.b.id)
  await offer(PHASE_MS)
  const end = Date.now()
  await waitFor(
    () => {
      const sent = new Set(
        Object.values(NUMBERS).flatMap((number) => fake.sentFrom(number).map((r) => r.messageId)),
      )
      return ids.every((id) => sent.has(id)) || undefined
    },
    { what: 'every message sent', timeoutMs: 60_000 },
  )

  const others = [...fake.sentFrom(NUMBERS.a), ...fake.sentFrom(NUMBERS.c)]
  const pace = (from: number, to: number) =>
    others.filter((r) => r.receivedAt >= from && r.receivedAt < to).length / ((to - from) / 1000)
  const before = pace(start, fellAt)
  const after = pace(fellAt, end)
  // Reported for the docs: the other numbers' pace before and after, and the fallen one's last send.
  const lastOnB = Math.max(...fake.sentFrom(NUMBERS.b).map((r) => r.receivedAt))
  console.log(
    `pool RED mid-run: A+C ${before.toFixed(1)}/s before, ${after.toFixed(1)}/s after (ratio ${(after / before).toFixed(2)}); ` +
      `B's last send ${lastOnB - fellAt} ms after it fell (tolerance ${TOLERANCE_S * 1000} ms); ` +
      `B sent ${fake.sentFrom(NUMBERS.b).length} of ${ids.length}`,
  )
  expect(after / before).toBeGreaterThanOrEqual(0.9)
  expect(lastOnB - fellAt).toBeLessThanOrEqual(TOLERANCE_S * 1000)
  // Something did wait on B when it fell (else the bound above proves nothing), and moved.
  const moved = await world.sql`select count(*)::int as n, max((payload->>'timestamp')::timestamptz) as last
    from webhook_events where api_key_id = ${key.id} and type = 'message.sender_changed'`
  const lastMove = new Date(moved[0]?.last as Date).getTime() - fellAt
  console.log(`pool RED mid-run: ${moved[0]?.n} messages moved off B, the last ${lastMove} ms after it fell`)
  expect(moved[0]?.n).toBeGreaterThan(0)
  expect(lastMove).toBeLessThanOrEqual(TOLERANCE_S * 1000)
}, 120_000)
