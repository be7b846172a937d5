import { startTcpProxy, type TcpProxy, testRedisUrl } from '@dispatch/testing'
import { afterAll, beforeAll, expect, it } from 'vitest'
import {
  activeKey,
  buildTestApp,
  createWorld,
  expectError,
  SEND_SCOPES,
  send,
  storedMessages,
  type TestApp,
  type TestWorld,
} from '../helpers.ts'

let world: TestWorld
let proxy: TcpProxy
let app: TestApp
beforeAll(async () => {
  world = await createWorld()
  const redis = new URL(testRedisUrl())
  proxy = await startTcpProxy({ host: redis.hostname, port: Number(redis.port || 6379) })
  app = await buildTestApp(world, { REDIS_URL: proxy.url('redis') })
})
afterAll(async () => {
  await proxy?.restore().catch(() => {})
  await app?.close()
  await proxy?.close()
  await world?.close()
})

it('With Redis down, a send is 503 SERVICE_UNAVAILABLE within a second and nothing is queued', async () => {
  const key = (await activeKey(app, { scopes: SEND_SCOPES })).key
  expect((await send(app, 'send-text', key)).statusCode).toBe(202)
  const queue = storedMessages(world)
  const before = await queue.count()

  await proxy.cut()
  try {
    for (const path of ['send-text', 'send-template', 'send-image'] as const) {
      const started = performance.now()
      const res = await send(app, path, key, undefined, { 'idempotency-key': `down-${path}` })
      expect(performance.now() - started).toBeLessThan(1000)
      expectError(res, 503, 'SERVICE_UNAVAILABLE')
      expect(res.headers['retry-after']).toBe('1')
    }
  } finally {
    await proxy.restore()
  }
  expect(await queue.count()).toBe(before)
  await queue.close()
})
