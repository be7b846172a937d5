import { setTimeout as sleep } from 'node:timers/promises'
import { startTcpProxy, type TcpProxy } from '@dispatch/testing'
import { afterAll, beforeAll, expect, it } from 'vitest'
import {
  activeKey,
  asAdmin,
  buildTestApp,
  createWorld,
  decide,
  expectError,
  keyRequest,
  requestKey,
  SEND_SCOPES,
  send,
  storedMessages,
  type TestApp,
  type TestWorld,
} from './helpers.ts'

const CACHE_TTL_MS = 200

let world: TestWorld
let proxy: TcpProxy
let app: TestApp
beforeAll(async () => {
  world = await createWorld()
  const url = new URL(world.databaseUrl)
  proxy = await startTcpProxy({ host: url.hostname, port: Number(url.port || 5432) })
  url.host = new URL(proxy.url('postgres')).host
  app = await buildTestApp(world, {
    DATABASE_URL: url.toString(),
    API_KEY_CACHE_TTL_MS: String(CACHE_TTL_MS),
    API_KEY_STALE_IF_ERROR_MS: '60000',
  })
})
afterAll(async () => {
  await proxy?.restore().catch(() => {})
  await app?.close()
  await proxy?.close()
  await world?.close()
})

const expectUnavailable = (res: Awaited<ReturnType<TestApp['inject']>>) => {
  expectError(res, 503, 'SERVICE_UNAVAILABLE')
  expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1)
}

it('With Postgres unreachable: 503 with Retry-After where Postgres is needed, known keys keep sending, a revoked key stays refused', async () => {
  const sender = await activeKey(app, { scopes: SEND_SCOPES })
  const revoked = await activeKey(app, { scopes: SEND_SCOPES })
  expect((await decide(app, revoked.id, 'revoke')).statusCode).toBe(200)
  const pending = await requestKey(app)
  // Both keys are looked up (and cached) once while Postgres is there.
  const before = await send(app, 'send-text', sender.key)
  expect(before.statusCode, before.body).toBe(202)
  expectError(await send(app, 'send-text', revoked.key), 403, 'API_KEY_NOT_ACTIVE', /revoked/)
  const { messageId } = before.json<{ messageId: string }>()

  await proxy.cut()
  try {
    // Past the cache's TTL: every lookup now fails, and the last known state answers.
    await sleep(CACHE_TTL_MS * 2)

    expectUnavailable(await decide(app, pending.id, 'approve'))
    expectUnavailable(await decide(app, sender.id, 'revoke', { reason: 'during the outage' }))
    expectUnavailable(
      await app.inject({ method: 'POST', url: '/api/api-keys/request', payload: keyRequest() }),
    )
    expectUnavailable(await app.inject({ method: 'GET', url: '/api/admin/api-keys', headers: asAdmin() }))
    expectUnavailable(
      await app.inject({
        method: 'GET',
        url: `/api/third-party/messages/${messageId}`,
        headers: { 'x-api-key': sender.key },
      }),
    )

    const accepted: string[] = []
    for (let i = 0; i < 5; i++) {
      const res = await send(app, 'send-text', sender.key, { phone: '+5511987654321', text: `outage ${i}` })
      expect(res.statusCode, res.body).toBe(202)
      accepted.push(res.json<{ messageId: string }>().messageId)
      await sleep(CACHE_TTL_MS / 2)
    }
    // A key known to be revoked is never let back in by the outage.
    expectError(await send(app, 'send-text', revoked.key), 403, 'API_KEY_NOT_ACTIVE', /revoked/)

    // What was accepted is stored: every job is in Redis.
    const queue = storedMessages(world)
    try {
      for (const id of accepted) expect(await queue.getJob(id), id).toBeDefined()
    } finally {
      await queue.close()
    }
  } finally {
    await proxy.restore()
  }

  // Back: the refused decision now goes through at once (not after the driver's reconnect backoff,
  // which had grown to 10–20 s over the outage's failed attempts), and no line of the outage was
  // logged as a 500.
  const back = performance.now()
  expect((await decide(app, pending.id, 'approve')).statusCode).toBe(200)
  expect(performance.now() - back).toBeLessThan(5_000)
  const logged = app.logs.lines.map((line) => JSON.parse(line))
  expect(logged.filter((line) => line.level >= 50 || line.res?.statusCode === 500)).toEqual([])
  expect(logged.some((line) => line.res?.statusCode === 503)).toBe(true)
})
