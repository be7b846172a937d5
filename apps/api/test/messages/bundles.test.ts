import type { MessageView } from '@dispatch/contracts'
import { type FakeWhatsApp, startFakeWhatsApp, waitFor } from '@dispatch/testing'
import type { RunningWorker } from '@dispatch/worker'
import { afterAll, beforeAll, expect, it } from 'vitest'
import {
  activeKey,
  buildTestApp,
  createWorld,
  messageView,
  SEND_SCOPES,
  send,
  startTestWorker,
  type TestApp,
  type TestWorld,
} from '../helpers.ts'

let world: TestWorld
let app: TestApp
let fake: FakeWhatsApp
let worker: RunningWorker | undefined
let key: string
beforeAll(async () => {
  world = await createWorld()
  app = await buildTestApp(world, { MESSAGE_RATE_PER_SECOND: '100000' })
  fake = await startFakeWhatsApp()
  key = (await activeKey(app, { scopes: SEND_SCOPES })).key
})
afterAll(async () => {
  await worker?.close()
  await app?.close()
  await fake?.close()
  await world?.close()
})

const cancel = (id: string) =>
  app.inject({ method: 'POST', url: `/api/third-party/messages/${id}/cancel`, headers: { 'x-api-key': key } })

it('a message waiting in a bundle is found by its id, can be canceled there and is never sent; the bundle sends the rest', async () => {
  const ids: string[] = []
  for (let i = 0; i < 6; i++) {
    const res = await send(app, 'send-text', key, { phone: '+5511987654321', text: `bundled ${i}` })
    expect(res.statusCode, res.body).toBe(202)
    ids.push(res.json<{ messageId: string }>().messageId)
  }
  // One platform call at a time, each slow: the bundle of six is taken, and sends one by one.
  fake.latencyMs = 800
  worker = await startTestWorker(world, {
    WORKER_QUEUES: 'messages',
    WHATSAPP_API_URL: fake.url,
    WHATSAPP_ACCESS_TOKEN: 'EAAG-bundle-tests',
    WHATSAPP_PHONE_NUMBER_ID: '106540352242922',
    MESSAGES_BUNDLE_SIZE: '20',
    MESSAGES_CONCURRENCY: '1',
  })
  const [first, , , , , last] = ids as [string, string, string, string, string, string]
  await waitFor(() => fake.requests.some((r) => r.messageId === first) || undefined, {
    what: 'the first send',
  })
  // Neither has a job of its own, nor a record yet: the API finds them in their bundle.
  expect(await world.sql`select id from messages where id = ${last}`).toHaveLength(0)
  expect((await messageView(app, key, last)).status).toBe('sending')

  const canceled = await cancel(last)
  expect(canceled.statusCode, canceled.body).toBe(200)
  expect(canceled.json<MessageView>().status).toBe('canceled')
  // The one on its way cannot be canceled.
  const refused = await cancel(first)
  expect(refused.statusCode, refused.body).toBe(409)

  fake.latencyMs = 0
  await waitFor(
    async () => {
      const rows = await world.sql<
        { status: string }[]
      >`select status from messages where id in ${world.sql(ids)}`
      return rows.length === 6 && rows.every((r) => r.status !== 'queued') ? rows : undefined
    },
    { what: 'all six recorded', timeoutMs: 20_000 },
  )
  expect((await messageView(app, key, last)).status).toBe('canceled')
  expect(fake.sendsOf(last)).toBe(0)
  for (const id of ids.slice(0, 5)) {
    expect(fake.sendsOf(id), id).toBe(1)
    expect((await messageView(app, key, id)).status).toBe('sent')
  }
}, 40_000)
