import { type AdminMessageView, DEFAULT_SENDER_ID } from '@dispatch/contracts'
import { cancelCampaign, createDb, type Db } from '@dispatch/db'
import type { RunningWorker } from '@dispatch/worker'
import { afterAll, beforeAll, expect, it } from 'vitest'
import {
  activeKey,
  asAdmin,
  buildTestApp,
  createWorld,
  SEND_SCOPES,
  startTestWorker,
  type TestApp,
  type TestWorld,
  untilMessageStatus,
} from '../helpers.ts'

// A canceled campaign's messages as their key and an admin read them (issue 43): its scheduled
// messages, stored through the API's own path, end `canceled` with `cancelReason:
// "campaign_canceled"` once the worker's sweep has run. The campaign here is a batch's: a
// campaign's messages are ordinary messages whose batchId is the campaign's id.
let world: TestWorld
let app: TestApp
let worker: RunningWorker
let db: Db
let closeDb: () => Promise<void>

beforeAll(async () => {
  world = await createWorld()
  app = await buildTestApp(world, { SCHEDULE_MIN_AHEAD_SECONDS: '1' })
  worker = await startTestWorker(world)
  ;({ db, close: closeDb } = createDb(world.databaseUrl, { max: 1 }))
})
afterAll(async () => {
  await worker?.close()
  await app?.close()
  await closeDb?.()
  await world?.close()
})

it('a canceled campaign’s scheduled messages read canceled, cancelReason campaign_canceled', async () => {
  const key = await activeKey(app, { scopes: SEND_SCOPES })
  const sendAt = new Date(Date.now() + 60_000).toISOString()
  const res = await app.inject({
    method: 'POST',
    url: '/api/third-party/messages/batch',
    headers: { 'x-api-key': key.key },
    payload: {
      messages: [1, 2].map((i) => ({
        type: 'text',
        phone: `+551191111300${i}`,
        text: 'December: 20% off',
        sendAt,
      })),
    },
  })
  expect(res.statusCode, res.body).toBe(202)
  const { batchId, results } = res.json<{
    batchId: string
    results: { messageId: string; status: string }[]
  }>()
  expect(results.map((r) => r.status)).toEqual(['scheduled', 'scheduled'])
  // The batch becomes a running campaign that fed both (the feeder's rows are not needed here).
  await world.sql`
    insert into campaigns (id, api_key_id, sender_id, name, template, status, fed_through, confirmed_through, started_at)
    values (${batchId}, ${key.id}, ${DEFAULT_SENDER_ID}, 'December promotion',
            ${world.sql.json({ templateId: 'december_promo', language: 'en' })}, 'running', 2, 2, now())`
  expect(await cancelCampaign(db, batchId, new Date(), key.id)).toMatchObject({ status: 'canceled' })

  for (const { messageId } of results) {
    const view = await untilMessageStatus(app, key.key, messageId, 'canceled')
    expect(view).toMatchObject({
      batchId,
      cancelReason: 'campaign_canceled',
      lastError: { code: 'CAMPAIGN_CANCELED', message: expect.stringMatching(/campaign was canceled/) },
      platformMessageId: null,
      sendAt,
    })
  }
  const listed = await app.inject({
    method: 'GET',
    url: `/api/admin/messages?apiKeyId=${key.id}&take=10`,
    headers: asAdmin(),
  })
  expect(listed.statusCode, listed.body).toBe(200)
  const views = listed.json<{ data: AdminMessageView[] }>().data
  expect(views.map((v) => v.cancelReason)).toEqual(['campaign_canceled', 'campaign_canceled'])
})
