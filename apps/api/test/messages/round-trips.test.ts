import { startTcpProxy, type TcpProxy, testRedisUrl } from '@dispatch/testing'
import type { LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, expect, it } from 'vitest'
import {
  activeKey,
  buildTestApp,
  createWorld,
  expectError,
  type TestApp,
  type TestWorld,
} from '../helpers.ts'

// Redis's answers are held at a proxy and let through one wave at a time: the waves a request
// needs before it is answered are the round trips it waits on one after another, whatever the
// machine's speed.
let world: TestWorld
let proxy: TcpProxy
let app: TestApp
let key: string
beforeAll(async () => {
  world = await createWorld()
  const redis = new URL(testRedisUrl())
  proxy = await startTcpProxy({ host: redis.hostname, port: Number(redis.port || 6379) })
  app = await buildTestApp(world, { REDIS_URL: proxy.url('redis') })
  key = (await activeKey(app, { scopes: ['send:free-text', 'manage:suppressions'] })).key
})
afterAll(async () => {
  proxy?.flowAnswers()
  await app?.close()
  await proxy?.close()
  await world?.close()
})

const sendText = (phone: string, headers: Record<string, string> = {}) =>
  app.inject({
    method: 'POST',
    url: '/api/third-party/messages/send-text',
    headers: { 'x-api-key': key, ...headers },
    payload: { phone, text: 'Your code is 123456' },
  })

/** `request`'s answer and the waves of Redis answers it waited for. */
async function waves(request: () => Promise<LightMyRequestResponse>) {
  proxy.holdAnswers()
  try {
    let answered: LightMyRequestResponse | undefined
    const pending = request().then((res) => {
      answered = res
    })
    let count = 0
    // Each pause lets the API send all it can before it needs an answer; a wave is then let through.
    while (!answered) {
      await new Promise((resolve) => setTimeout(resolve, 100))
      if (!answered && proxy.releaseAnswers()) count++
    }
    await pending
    return { res: answered, waves: count }
  } finally {
    proxy.flowAnswers()
  }
}

it('a send-text waits on Redis twice: the suppression read goes out with the rate limit, then the store', async () => {
  // Warmed: the key is cached and Redis has the scripts, as for every send but a process's first.
  expect((await sendText('+5511987650001')).statusCode).toBe(202)

  const sent = await waves(() => sendText('+5511987650002'))
  expect(sent.res.statusCode, sent.res.body).toBe(202)
  expect(sent.waves).toBe(2)

  // The early read is the one that decides: a recipient who opted out is refused, before any store.
  const added = await app.inject({
    method: 'POST',
    url: '/api/third-party/suppressions',
    headers: { 'x-api-key': key },
    payload: { phone: '+5511987650003', reason: 'Asked by phone call' },
  })
  expect(added.statusCode, added.body).toBe(201)
  const refused = await waves(() => sendText('+5511987650003'))
  expectError(refused.res, 422, 'RECIPIENT_OPTED_OUT')
  expect(refused.waves).toBe(1)
})
