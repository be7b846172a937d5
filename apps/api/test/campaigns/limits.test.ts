import { randomBytes } from 'node:crypto'
import type { ApiKeySelf, Campaign, CampaignRecipient, MessageView } from '@dispatch/contracts'
import { nextUtcMidnight } from '@dispatch/contracts'
import { MESSAGING_LIMIT_WINDOW_MS, portfolioReachKey, serviceWindowsLoadedKey } from '@dispatch/runtime'
import { type FakeWhatsApp, startFakeWhatsApp, waitFor } from '@dispatch/testing'
import type { RunningWorker } from '@dispatch/worker'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  asAdmin,
  buildTestApp,
  createWorld,
  expectError,
  send,
  startTestWorker,
  type TestApp,
  type TestWorld,
  validSends,
} from '../helpers.ts'
import { keyOf, syncedSender } from '../templates/setup.ts'

/**
 * What a campaign's messages spend and wait for beside their own send: a message the worker holds
 * for the portfolio's messaging limit counts `held` (recorded `scheduled` in Postgres), and every
 * message fed spends its key's daily quota, the campaign waiting for midnight UTC once it is spent.
 */

const SECRETS_KEY = randomBytes(32).toString('base64')
const SCOPES = ['send:template', 'manage:campaigns', 'read:messages', 'manage:suppressions']
const TEMPLATE = {
  templateId: 'order_shipped',
  language: 'pt_BR',
  headerVariables: [{ type: 'image', value: null, originalMediaId: 'media-123' }],
  buttonVariables: [{ buttonIndex: 0, text: 'track/BR-1042', type: 'URL' }],
}

let world: TestWorld
let app: TestApp
let fake: FakeWhatsApp
let worker: RunningWorker
let redis: Redis
/** How far ahead of the real clock the API's clock runs (to reach the next UTC day). */
let clockAhead = 0

let phones = 0
const newPhone = () =>
  `+55319${String(Date.now()).slice(-6)}${String(phones++).padStart(3, '0')}`.slice(0, 15)
const sentTo = (phone: string) => fake.requests.filter((r) => r.body.to === phone.slice(1))
const headers = (apiKey: string) => ({ 'x-api-key': apiKey })
let businesses = 0
const newBusiness = () => `7${String(Date.now()).slice(-9)}${businesses++}`

async function create(apiKey: string) {
  const res = await app.inject({
    method: 'POST',
    url: '/api/third-party/campaigns',
    headers: headers(apiKey),
    payload: { name: 'December promotion', template: TEMPLATE },
  })
  expect(res.statusCode, res.body).toBe(201)
  return res.json<Campaign>()
}

/** The campaign's audience, as an upload leaves it (campaigns.test.ts says more). */
async function loadAudience(campaignId: string, audience: string[]) {
  await world.sql`
    insert into campaign_recipients ${world.sql(
      audience.map((phone, i) => ({
        campaign_id: campaignId,
        line: i + 2,
        phone,
        variables: JSON.stringify({ '1': `Cliente ${i + 2}`, '2': `BR-${i + 2}` }),
        state: 'pending',
      })),
    )}`
  const summary = {
    rows: audience.length,
    taken: audience.length,
    skipped: 0,
    skippedByReason: {},
    format: 'csv',
    uploadedAt: new Date().toISOString(),
  }
  await world.sql`update campaigns set status = 'ready', audience = ${world.sql.json(summary)} where id = ${campaignId}`
}

async function get(id: string, apiKey: string) {
  const res = await app.inject({
    method: 'GET',
    url: `/api/third-party/campaigns/${id}`,
    headers: headers(apiKey),
  })
  expect(res.statusCode, res.body).toBe(200)
  return res.json<Campaign>()
}
const start = async (id: string, apiKey: string) => {
  const res = await app.inject({
    method: 'POST',
    url: `/api/third-party/campaigns/${id}/start`,
    headers: headers(apiKey),
  })
  expect(res.statusCode, res.body).toBe(200)
}
const until = (id: string, apiKey: string, done: (c: Campaign) => boolean, what: string) =>
  waitFor(
    async () => {
      const campaign = await get(id, apiKey)
      return done(campaign) ? campaign : undefined
    },
    { what, timeoutMs: 30_000 },
  )

beforeAll(async () => {
  world = await createWorld()
  fake = await startFakeWhatsApp()
  const env = { SECRETS_KEY, WHATSAPP_API_URL: fake.url }
  app = await buildTestApp(
    world,
    { ...env, CAMPAIGN_WINDOW: '20', CAMPAIGN_FEED_INTERVAL_MS: '50', CAMPAIGN_PROGRESS_SECONDS: '1' },
    undefined,
    { clock: () => new Date(Date.now() + clockAhead) },
  )
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
})

afterAll(async () => {
  redis?.disconnect()
  await worker?.close()
  await app?.close()
  await fake?.close()
  await world?.close()
})

describe('a message held at delivery for the messaging limit', () => {
  it('counts held, not pending; its record says scheduled for the limit until it goes, then sent', async () => {
    const businessId = newBusiness()
    const sender = await syncedSender(app, fake, {
      body: { businessId, messagingLimitOverride: 3, messagingLimitPolicy: 'hold' },
    })
    const key = await keyOf(app, sender.id, SCOPES)
    // Someone reached almost 24 hours ago (the clock, driven through the data): leaves in 15 s.
    const leavesAt = Date.now() + 15_000
    await redis.zadd(
      portfolioReachKey(world.queuePrefix, `business:${businessId}`),
      leavesAt - MESSAGING_LIMIT_WINDOW_MS,
      'hmac:earlier',
    )
    const campaign = await create(key.key)
    // 30 rows, fed 20 at a time: the first window reaches the limit of 3, the feeder stops there.
    const audience = Array.from({ length: 30 }, newPhone)
    await loadAudience(campaign.id, audience)
    await start(campaign.id, key.key)

    const counted = await until(
      campaign.id,
      key.key,
      (c) => c.counts.held === 18 && c.counts.sent === 2,
      'two sent, eighteen held',
    )
    expect(counted).toMatchObject({
      status: 'running',
      counts: { sent: 2, held: 18, pending: 10, failed: 0, skipped: 0, canceled: 0 },
    })
    // The list is read from Postgres alone: the held messages are there, scheduled for the limit.
    const heldList = async () => {
      const res = await app.inject({
        method: 'GET',
        url: `/api/third-party/messages?batchId=${campaign.id}&status=scheduled&take=50`,
        headers: headers(key.key),
      })
      expect(res.statusCode, res.body).toBe(200)
      return res.json<{ data: MessageView[] }>().data
    }
    const held = await heldList()
    expect(held).toHaveLength(18)
    for (const message of held) {
      expect(message).toMatchObject({ status: 'scheduled', scheduledReason: 'messaging_limit', attempts: 0 })
      expect(Math.abs(Date.parse(message.sendAt as string) - leavesAt)).toBeLessThan(1000)
    }
    expect(audience.filter((p) => sentTo(p).length > 0)).toHaveLength(2)
    // Its rows say why they wait.
    const rows = await app.inject({
      method: 'GET',
      url: `/api/third-party/campaigns/${campaign.id}/recipients?state=held&take=50`,
      headers: headers(key.key),
    })
    expect(rows.statusCode, rows.body).toBe(200)
    const heldRows = rows.json<{ data: CampaignRecipient[] }>().data
    expect(heldRows).toHaveLength(18)
    expect(heldRows.every((r) => r.state === 'held' && r.reason === 'messaging_limit')).toBe(true)

    // Paused, the feeder feeds no more (what it fed goes on): else, as room frees, its second
    // window and a held message race for that room, and a message of the window may take it.
    const paused = await app.inject({
      method: 'POST',
      url: `/api/third-party/campaigns/${campaign.id}/pause`,
      headers: headers(key.key),
    })
    expect(paused.statusCode, paused.body).toBe(200)

    // Room frees: one held message goes, the others are held again (in Redis alone) for the next.
    // The counts and the list are two reads: taken again until they agree.
    const { still } = await waitFor(
      async () => {
        const after = await get(campaign.id, key.key)
        const { sent, held, pending } = after.counts
        if (sent !== 3 || held !== 17 || pending !== 10) return undefined
        const still = await heldList()
        return still.length === held ? { still } : undefined
      },
      { what: 'the third sent, the rest held or not fed, the list as the counts say', timeoutMs: 30_000 },
    )
    expect(audience.filter((p) => sentTo(p).length > 0)).toHaveLength(3)
    const went = held.find((m) => !still.some((s) => s.messageId === m.messageId)) as MessageView
    const view = async (id: string) => {
      const res = await app.inject({
        method: 'GET',
        url: `/api/third-party/messages/${id}`,
        headers: headers(key.key),
      })
      expect(res.statusCode, res.body).toBe(200)
      return res.json<MessageView>()
    }
    // The hold's outcome moved it on: sent, and why it waited is kept.
    expect(await view(went.messageId)).toMatchObject({ status: 'sent', scheduledReason: 'messaging_limit' })
    // One held again: its view says when room frees now (24 h after the first two went).
    const again = await view(still[0]?.messageId as string)
    expect(again).toMatchObject({ status: 'scheduled', scheduledReason: 'messaging_limit' })
    expect(Date.parse(again.sendAt as string)).toBeGreaterThan(
      Date.now() + MESSAGING_LIMIT_WINDOW_MS - 120_000,
    )
  }, 90_000)
})

describe("a campaign spends its key's daily quota", () => {
  it('feeds what the quota leaves, waits for midnight UTC with the rest pending, then goes on', async () => {
    const sender = await syncedSender(app, fake, { body: { businessId: newBusiness() } })
    const key = await keyOf(app, sender.id, SCOPES)
    const limits = await app.inject({
      method: 'PATCH',
      url: `/api/admin/api-keys/${key.id}`,
      headers: asAdmin(),
      payload: { dailyQuota: 5 },
    })
    expect(limits.statusCode, limits.body).toBe(200)
    const campaign = await create(key.key)
    const audience = Array.from({ length: 8 }, newPhone)
    await loadAudience(campaign.id, audience)
    await start(campaign.id, key.key)

    const waiting = await until(
      campaign.id,
      key.key,
      (c) => c.counts.sent === 5 && c.waitingFor !== null,
      'five sent, the rest waiting',
    )
    const midnight = nextUtcMidnight(new Date(Date.now() + clockAhead))
    expect(waiting).toMatchObject({
      status: 'running',
      counts: { sent: 5, pending: 3, held: 0, skipped: 0 },
      waitingFor: { reason: 'daily_quota', until: midnight.toISOString() },
    })
    expect(audience.filter((p) => sentTo(p).length > 0)).toHaveLength(5)
    // Nothing more is fed while it waits.
    await new Promise((resolve) => setTimeout(resolve, 500))
    expect((await get(campaign.id, key.key)).counts).toMatchObject({ sent: 5, pending: 3 })

    const me = await app.inject({ method: 'GET', url: '/api/api-keys/me', headers: headers(key.key) })
    expect(me.statusCode, me.body).toBe(200)
    expect(me.json<ApiKeySelf>().usage).toMatchObject({ today: 5, remainingToday: 0 })
    // The key's own transactional send finds the quota spent, as any request would.
    const refused = await send(app, 'send-template', key.key, {
      ...validSends['send-template'],
      phone: newPhone(),
    })
    expectError(refused, 429, 'QUOTA_EXCEEDED', /daily quota of 5 messages is spent/)

    // The next UTC day: the quota is whole again, and the rest is fed and sent.
    clockAhead = midnight.getTime() - Date.now() + 1000
    const done = await until(campaign.id, key.key, (c) => c.status === 'completed', 'the campaign completed')
    expect(done).toMatchObject({ counts: { sent: 8, pending: 0 }, waitingFor: null })
    for (const phone of audience) expect(sentTo(phone), phone).toHaveLength(1)
    const tomorrow = await app.inject({ method: 'GET', url: '/api/api-keys/me', headers: headers(key.key) })
    expect(tomorrow.json<ApiKeySelf>().usage).toMatchObject({ today: 3, remainingToday: 2 })
  }, 60_000)

  it('spends nothing for a row its send refuses, as a refused send spends none', async () => {
    const sender = await syncedSender(app, fake, { body: { businessId: newBusiness() } })
    const key = await keyOf(app, sender.id, SCOPES)
    const [out, ...rest] = Array.from({ length: 4 }, newPhone)
    const optOut = await app.inject({
      method: 'POST',
      url: '/api/third-party/suppressions',
      headers: headers(key.key),
      payload: { phone: out, reason: 'asked by phone' },
    })
    expect(optOut.statusCode, optOut.body).toBe(201)
    const campaign = await create(key.key)
    await loadAudience(campaign.id, [out as string, ...rest])
    await start(campaign.id, key.key)
    const done = await until(campaign.id, key.key, (c) => c.status === 'completed', 'the campaign completed')
    expect(done.counts).toMatchObject({ sent: 3, skipped: 1 })
    const me = await app.inject({ method: 'GET', url: '/api/api-keys/me', headers: headers(key.key) })
    // No quota on this key: its messages are counted all the same (the day it runs on).
    expect(me.json<ApiKeySelf>().usage).toMatchObject({ today: 3, remainingToday: null })
  })
})
