import { setTimeout as sleep } from 'node:timers/promises'
import {
  startSmtpServer,
  startTcpProxy,
  type TcpProxy,
  type TestSmtpServer,
  testRedisUrl,
  waitFor,
} from '@dispatch/testing'
import type { RunningWorker } from '@dispatch/worker'
import { afterAll, beforeAll, expect, it } from 'vitest'
import {
  buildTestApp,
  createWorld,
  decide,
  requestKey,
  startTestWorker,
  type TestApp,
  type TestWorld,
} from './helpers.ts'

let world: TestWorld
let proxy: TcpProxy
let app: TestApp
let smtp: TestSmtpServer
let worker: RunningWorker
beforeAll(async () => {
  world = await createWorld()
  const redis = new URL(testRedisUrl())
  proxy = await startTcpProxy({ host: redis.hostname, port: Number(redis.port || 6379) })
  app = await buildTestApp(world, { REDIS_URL: proxy.url('redis') })
  smtp = await startSmtpServer()
  worker = await startTestWorker(world, {
    REDIS_URL: proxy.url('redis'),
    SMTP_URL: smtp.url,
  })
})
afterAll(async () => {
  // Redis back first, so nothing is left waiting on it while closing.
  await proxy?.restore().catch(() => {})
  await worker?.close()
  await app?.close()
  await smtp?.close()
  await proxy?.close()
  await world?.close()
})

const mailsTo = (address: string) => smtp.messagesTo(address)
const me = (key: string) =>
  app.inject({ method: 'GET', url: '/api/api-keys/me', headers: { 'x-api-key': key } })

it('With Redis unreachable, a decision still commits and its e-mail goes out once Redis is back', async () => {
  const email = 'outage@acme.test'
  const key = await requestKey(app, { email, clientName: 'Acme Outage' })
  expect((await me(key.key)).statusCode).toBe(403)

  await proxy.cut()
  try {
    const res = await decide(app, key.id, 'approve')
    expect(res.statusCode, res.body).toBe(200)
    expect(res.json().status).toBe('approved')

    const [row] = await world.sql`select status from api_keys where id = ${key.id}`
    expect(row?.status).toBe('approved')
    const [audit] = await world.sql`select to_status from api_key_audit_log where api_key_id = ${key.id}`
    expect(audit?.to_status).toBe('approved')
    // The key works at once: checking it needs Postgres only.
    expect((await me(key.key)).statusCode).toBe(200)

    // The relay keeps trying during the outage; the row stays pending and nothing is sent.
    await sleep(1000)
    const outbox = await world.sql`
      select dispatched_at from outbox where payload->'data'->>'keyId' = ${key.id}`
    expect(outbox).toHaveLength(1)
    expect(outbox[0]?.dispatched_at).toBeNull()
    expect(mailsTo(email)).toHaveLength(0)
  } finally {
    await proxy.restore()
  }

  // ioredis reconnects with a growing backoff: allow it a few seconds.
  const mail = await waitFor(() => mailsTo(email)[0], { timeoutMs: 20_000, what: 'the approval e-mail' })
  expect(mail.subject).toMatch(/approved/i)
  expect(mail.subject).toContain('Acme Outage')
  const [outboxRow] = await world.sql`
    select dispatched_at from outbox where payload->'data'->>'keyId' = ${key.id}`
  expect(outboxRow?.dispatched_at).toBeInstanceOf(Date)
  const delivery = await waitFor(async () => {
    const [d] = await world.sql`
      select d.status, d.attempts from email_deliveries d join outbox o on o.id = d.outbox_id
      where o.payload->'data'->>'keyId' = ${key.id}`
    return d?.status === 'sent' && d
  })
  expect(delivery.attempts).toBe(1)
  expect(mailsTo(email)).toHaveLength(1)

  const res = await me(key.key)
  expect(res.statusCode).toBe(200)
  expect(res.json()).toMatchObject({ id: key.id, status: 'approved' })
}, 45_000)
