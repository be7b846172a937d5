import { randomBytes } from 'node:crypto'
import type { Campaign } from '@dispatch/contracts'
import { campaignCounts, findCampaign, recountCampaign } from '@dispatch/db'
import { serviceWindowsLoadedKey } from '@dispatch/runtime'
import { type FakeWhatsApp, startFakeWhatsApp, waitFor } from '@dispatch/testing'
import type { RunningWorker } from '@dispatch/worker'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, expect, it, vi } from 'vitest'
import { type CampaignFeeder, startCampaignFeeder } from '../../src/campaigns/feeder.ts'
import { buildTestApp, createWorld, startTestWorker, type TestApp, type TestWorld } from '../helpers.ts'
import { keyOf, syncedSender } from '../templates/setup.ts'

/**
 * Two feeders (as two API instances run them) on one campaign, the first's turn outliving its
 * lease: its window's confirmation held back (slow Postgres) until its lease has expired and the
 * second feeder has taken the campaign, stored the window again and confirmed it.
 */
const stall = vi.hoisted(() => {
  let release: () => void = () => {}
  const state = {
    armed: false,
    /** Resolves once the held-back confirmation is waiting. */
    reached: undefined as Promise<void> | undefined,
    release: () => release(),
    gate: undefined as Promise<void> | undefined,
  }
  let reach: () => void = () => {}
  state.reached = new Promise<void>((resolve) => {
    reach = resolve
  })
  state.gate = new Promise<void>((resolve) => {
    release = resolve
  })
  return Object.assign(state, { reach: () => reach() })
})

vi.mock('@dispatch/db', async (importOriginal) => {
  const original = await importOriginal<typeof import('@dispatch/db')>()
  return {
    ...original,
    confirmWindow: async (...args: Parameters<typeof original.confirmWindow>) => {
      if (stall.armed) {
        stall.armed = false
        stall.reach()
        await stall.gate
      }
      return original.confirmWindow(...args)
    },
  }
})

const SECRETS_KEY = randomBytes(32).toString('base64')
const AUDIENCE = 60
const WINDOW = 20
const LEASE_MS = 1000

let world: TestWorld
let app: TestApp
let fake: FakeWhatsApp
let worker: RunningWorker
let redis: Redis
let first: CampaignFeeder
let second: CampaignFeeder

beforeAll(async () => {
  world = await createWorld()
  fake = await startFakeWhatsApp()
  const env = { SECRETS_KEY, WHATSAPP_API_URL: fake.url }
  // The app's own feeder is off: the test's two feeders are the only ones, each turned by hand.
  app = await buildTestApp(world, { ...env, CAMPAIGN_FEED: 'false' })
  redis = new Redis(world.redisUrl)
  worker = await startTestWorker(world, {
    ...env,
    WHATSAPP_ACCESS_TOKEN: 'default-token',
    WHATSAPP_PHONE_NUMBER_ID: '106540352242923',
    ADMISSION_INTERVAL_MS: '20',
    TEMPLATE_SYNC_INTERVAL_MS: '0',
  })
  await waitFor(
    async () => (await redis.exists(serviceWindowsLoadedKey(world.queuePrefix))) === 1 || undefined,
    { what: 'the windows marked complete' },
  )
  const feeding = { window: WINDOW, intervalMs: 600_000, progressSeconds: 1, leaseMs: LEASE_MS }
  first = startCampaignFeeder(app.sending, app.deps.redis, feeding)
  second = startCampaignFeeder(app.sending, app.deps.redis, feeding)
})

afterAll(async () => {
  await first?.stop()
  await second?.stop()
  redis?.disconnect()
  await worker?.close()
  await app?.close()
  await fake?.close()
  await world?.close()
})

it('a feeder whose turn outlived its lease confirms nothing once another took the campaign: each recipient gets one message, the counts add up', async () => {
  const sender = await syncedSender(app, fake)
  const key = await keyOf(app, sender.id, ['send:template', 'manage:campaigns'])
  const created = await app.inject({
    method: 'POST',
    url: '/api/third-party/campaigns',
    headers: { 'x-api-key': key.key },
    payload: {
      name: 'Two feeders',
      template: {
        templateId: 'order_shipped',
        language: 'pt_BR',
        headerVariables: [{ type: 'image', value: null, originalMediaId: 'media-123' }],
        buttonVariables: [{ buttonIndex: 0, text: 'track/BR-1042', type: 'URL' }],
      },
    },
  })
  expect(created.statusCode, created.body).toBe(201)
  const { id } = created.json<Campaign>()
  const phones = Array.from(
    { length: AUDIENCE },
    (_, i) => `+5521977${String(Date.now()).slice(-4)}${String(i).padStart(3, '0')}`,
  )
  await world.sql`
    insert into campaign_recipients ${world.sql(
      phones.map((phone, i) => ({
        campaign_id: id,
        line: i + 2,
        phone,
        variables: JSON.stringify({ '1': `Cliente ${i}`, '2': `BR-${i}` }),
        state: 'pending',
      })),
    )}`
  const audience = {
    rows: AUDIENCE,
    taken: AUDIENCE,
    skipped: 0,
    skippedByReason: {},
    format: 'csv',
    uploadedAt: new Date().toISOString(),
  }
  await world.sql`update campaigns set status = 'ready', audience = ${world.sql.json(audience)} where id = ${id}`
  const started = await app.inject({
    method: 'POST',
    url: `/api/third-party/campaigns/${id}/start`,
    headers: { 'x-api-key': key.key },
  })
  expect(started.statusCode, started.body).toBe(200)

  // The first feeder takes the campaign, assigns and stores its first window, and stalls before
  // confirming it, until its lease has run out.
  stall.armed = true
  const stalled = first.turn()
  await stall.reached
  const lease = `${world.queuePrefix}:campaign-lease:${id}`
  await waitFor(async () => (await redis.exists(lease)) === 0 || undefined, {
    what: "the first feeder's lease expired",
    timeoutMs: 10_000,
  })
  // The second takes it, stores the window again under its ids and confirms it.
  await second.turn()
  const taken = await findCampaign(app.deps.db, id)
  expect(taken?.confirmedThrough).toBeGreaterThanOrEqual(WINDOW + 1)
  expect(taken?.fedThrough).toBe(taken?.confirmedThrough)
  // The first's confirmation goes through now: fenced, it changes nothing, and its turn ends.
  stall.release()
  await stalled
  expect(app.logs.lines.some((l) => l.includes('campaign window not confirmed: its lease was taken'))).toBe(
    true,
  )
  // Its next turns leave the campaign to the second.
  await first.turn()
  expect(await findCampaign(app.deps.db, id)).toMatchObject({ fedThrough: taken?.fedThrough })

  const done = await waitFor(
    async () => {
      await second.turn()
      const row = await findCampaign(app.deps.db, id)
      return row?.status === 'completed' ? row : undefined
    },
    { what: 'the campaign completed', timeoutMs: 60_000 },
  )
  const counted = await campaignCounts(app.deps.db, done)
  expect(counted.counts).toMatchObject({ sent: AUDIENCE, pending: 0, held: 0, skipped: 0, failed: 0 })
  expect(Object.values(counted.counts).reduce((a, b) => a + b, 0)).toBe(AUDIENCE)
  expect(counted).toEqual(await recountCampaign(app.deps.db, done))
  for (const phone of phones)
    expect(
      fake.requests.filter((r) => r.body.to === phone.slice(1)),
      phone,
    ).toHaveLength(1)
  const ids = await world.sql<{ n: number; distinct: number }[]>`
    select count(message_id)::int as n, count(distinct message_id)::int as distinct from campaign_recipients where campaign_id = ${id}`
  expect(ids[0]).toEqual({ n: AUDIENCE, distinct: AUDIENCE })
}, 120_000)
