import { randomBytes } from 'node:crypto'
import type { Campaign, CampaignRecipient } from '@dispatch/contracts'
import { assignWindow, campaignCounts, findCampaign, recountCampaign } from '@dispatch/db'
import { serviceWindowsLoadedKey } from '@dispatch/runtime'
import {
  type FakeWhatsApp,
  inboundMessage,
  messageWebhook,
  startFakeWhatsApp,
  startWebhookReceiver,
  waitFor,
} from '@dispatch/testing'
import type { RunningWorker } from '@dispatch/worker'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  activeKey,
  asAdmin,
  buildTestApp,
  createWorld,
  expectError,
  postPlatformWebhook,
  startTestWorker,
  type TestApp,
  type TestWorld,
} from '../helpers.ts'
import { keyOf, replyFrom, syncedSender } from '../templates/setup.ts'

const SECRETS_KEY = randomBytes(32).toString('base64')
const APP_SECRET = 'app-secret-0123456789'
const SCOPES = [
  'send:template',
  'manage:campaigns',
  'manage:webhooks',
  'manage:suppressions',
  'manage:data',
  'read:messages',
]
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
let receiver: Awaited<ReturnType<typeof startWebhookReceiver>>
let senderId: string
let senderNumber: string
let key: { id: string; key: string }

let phones = 0
const newPhone = () =>
  `+55219${String(Date.now()).slice(-6)}${String(phones++).padStart(3, '0')}`.slice(0, 15)
const sentTo = (phone: string) => fake.requests.filter((r) => r.body.to === phone.slice(1))
const headers = (apiKey = key.key) => ({ 'x-api-key': apiKey })

async function create(apiKey = key.key, body: object = {}) {
  const res = await app.inject({
    method: 'POST',
    url: '/api/third-party/campaigns',
    headers: headers(apiKey),
    payload: { name: 'December promotion', template: TEMPLATE, ...body },
  })
  expect(res.statusCode, res.body).toBe(201)
  return res.json<Campaign>()
}

/**
 * The campaign's audience, written as an upload leaves it: every row with its line (a CSV's header
 * is line 1), those taken `pending` with their variables in blocks of 7 lines (a CSV's plain lines
 * as they came: `phone,1,2`; a window of 20 ends inside a block), the campaign `ready`.
 */
async function loadAudience(
  campaignId: string,
  phonesOf: string[],
  skipped: { line: number; reason: string }[] = [],
) {
  const rows = phonesOf.map((phone, i) => ({ line: i + 2, phone }))
  const blocks = []
  for (let at = 0; at < rows.length; at += 7) {
    const lines = rows.slice(at, at + 7)
    blocks.push({
      campaign_id: campaignId,
      line: (lines[0] as { line: number }).line,
      state: 'pending',
      lines: lines.length,
      block: lines.map((r) => `${r.phone},Cliente ${r.line},BR-${r.line}`).join(at % 2 ? '\r\n' : '\n'),
      block_fields: ['phone', '1', '2'],
    })
  }
  await world.sql`insert into campaign_recipients ${world.sql(blocks)}`
  for (const s of skipped) {
    await world.sql`insert into campaign_recipients (campaign_id, line, state, reason, detail, raw)
      values (${campaignId}, ${s.line}, 'skipped', ${s.reason}, 'phone is not E.164', 'not-a-phone,Ana,BR-1')`
  }
  const audience = {
    rows: rows.length + skipped.length,
    taken: rows.length,
    skipped: skipped.length,
    skippedByReason: Object.fromEntries(skipped.map((s) => [s.reason, 1])),
    format: 'csv',
    uploadedAt: new Date().toISOString(),
  }
  await world.sql`update campaigns set status = 'ready', audience = ${world.sql.json(audience)} where id = ${campaignId}`
}

const get = async (id: string, apiKey = key.key) => {
  const res = await app.inject({
    method: 'GET',
    url: `/api/third-party/campaigns/${id}`,
    headers: headers(apiKey),
  })
  expect(res.statusCode, res.body).toBe(200)
  return res.json<Campaign>()
}
const control = (id: string, action: string, apiKey = key.key) =>
  app.inject({ method: 'POST', url: `/api/third-party/campaigns/${id}/${action}`, headers: headers(apiKey) })

const untilStatus = (id: string, status: Campaign['status']) =>
  waitFor(
    async () => {
      const campaign = await get(id)
      return campaign.status === status ? campaign : undefined
    },
    { what: `campaign ${status}`, timeoutMs: 30_000 },
  )

const total = (counts: Campaign['counts']) => Object.values(counts).reduce((a, b) => a + b, 0)

/** The counts as kept (row counters, the messages' tally) equal a count of every row and message. */
async function expectCountsExact(id: string) {
  const { db } = app.deps
  const row = await findCampaign(db, id)
  if (!row) throw new Error(`campaign ${id} not found`)
  expect(await campaignCounts(db, row)).toEqual(await recountCampaign(db, row))
}

beforeAll(async () => {
  world = await createWorld()
  fake = await startFakeWhatsApp()
  receiver = await startWebhookReceiver()
  const env = { SECRETS_KEY, WHATSAPP_API_URL: fake.url }
  app = await buildTestApp(world, {
    ...env,
    WHATSAPP_APP_SECRET: APP_SECRET,
    CAMPAIGN_WINDOW: '20',
    CAMPAIGN_FEED_INTERVAL_MS: '50',
    CAMPAIGN_PROGRESS_SECONDS: '1',
  })
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
    {
      what: 'the windows marked complete',
    },
  )
  const sender = await syncedSender(app, fake)
  senderId = sender.id
  senderNumber = sender.phoneNumberId
  key = await keyOf(app, senderId, SCOPES)
  const endpoint = await app.inject({
    method: 'POST',
    url: '/api/third-party/webhook-endpoints',
    headers: headers(),
    payload: { url: receiver.url, events: ['campaign.started', 'campaign.progress', 'campaign.completed'] },
  })
  expect(endpoint.statusCode, endpoint.body).toBe(201)
})

afterAll(async () => {
  redis?.disconnect()
  await worker?.close()
  await app?.close()
  await receiver?.close()
  await fake?.close()
  await world?.close()
})

describe('a campaign, from creation to completion', () => {
  it('sends each taken row once, counts every row, and tells the endpoint', async () => {
    const campaign = await create()
    expect(campaign).toMatchObject({ status: 'draft', senderId, audience: null })
    expect(total(campaign.counts)).toBe(0)
    const audience = Array.from({ length: 45 }, newPhone)
    await loadAudience(campaign.id, audience, [{ line: 47, reason: 'invalid_recipient' }])

    const started = await control(campaign.id, 'start')
    expect(started.statusCode, started.body).toBe(200)
    expect(started.json<Campaign>().status).toBe('running')

    const done = await untilStatus(campaign.id, 'completed')
    expect(done.counts).toMatchObject({ sent: 45, skipped: 1, pending: 0, held: 0, canceled: 0 })
    expect(total(done.counts)).toBe(46)
    expect(done.completedAt).not.toBeNull()
    await expectCountsExact(campaign.id)
    // A recipient who writes back is counted as having replied, once.
    expect(done.engagement).toEqual({ replied: 0, optedOut: 0 })
    for (let i = 0; i < 2; i++) {
      const reply = await replyFrom(app, APP_SECRET, senderNumber, audience[0] as string)
      expect(reply.statusCode, reply.body).toBe(200)
    }
    await waitFor(async () => ((await get(campaign.id)).engagement.replied === 1 ? true : undefined), {
      what: 'the reply counted',
    })
    for (const phone of audience) expect(sentTo(phone), phone).toHaveLength(1)
    const first = sentTo(audience[0] as string)[0]?.body as { template: { name: string } }
    expect(first.template.name).toBe('order_shipped')

    const events = await waitFor(
      () => {
        const mine = receiver.received.filter((r) => r.json.data?.campaignId === campaign.id)
        return mine.some((r) => r.json.type === 'campaign.completed') ? mine : undefined
      },
      { what: 'the campaign events' },
    )
    const types = events.map((r) => r.json.type)
    expect(types[0]).toBe('campaign.started')
    expect(types.filter((t) => t === 'campaign.started')).toHaveLength(1)
    expect(types.filter((t) => t === 'campaign.completed')).toHaveLength(1)
    const completed = events.find((r) => r.json.type === 'campaign.completed')
    expect(completed?.json.data.counts).toMatchObject({ sent: 45, skipped: 1 })

    // The messages are ordinary messages of the key, at low priority, the campaign's id as batch.
    const page = await app.inject({
      method: 'GET',
      url: `/api/third-party/campaigns/${campaign.id}/recipients?take=10`,
      headers: headers(),
    })
    expect(page.statusCode, page.body).toBe(200)
    const { data, next } = page.json<{ data: CampaignRecipient[]; next: number | null }>()
    expect(data.map((r) => r.line)).toEqual([2, 3, 4, 5, 6, 7, 8, 9, 10, 11])
    expect(data.every((r) => r.state === 'sent' && r.messageId)).toBe(true)
    expect(data[0]?.variables).toEqual({ '1': 'Cliente 2', '2': 'BR-2' })
    expect(next).toBe(11)
    const message = await app.inject({
      method: 'GET',
      url: `/api/third-party/messages/${data[0]?.messageId}`,
      headers: headers(),
    })
    expect(message.statusCode, message.body).toBe(200)
    expect(message.json()).toMatchObject({ status: 'sent', phone: audience[0] })

    const skipped = await app.inject({
      method: 'GET',
      url: `/api/third-party/campaigns/${campaign.id}/recipients?state=skipped`,
      headers: headers(),
    })
    expect(skipped.json().data).toEqual([
      expect.objectContaining({ line: 47, state: 'skipped', reason: 'invalid_recipient', messageId: null }),
    ])

    const csv = await app.inject({
      method: 'GET',
      url: `/api/third-party/campaigns/${campaign.id}/export?format=csv`,
      headers: headers(),
    })
    expect(csv.statusCode).toBe(200)
    expect(csv.headers['content-type']).toMatch(/text\/csv/)
    const lines = csv.body.trim().split('\n')
    expect(lines[0]).toBe('line,phone,userId,state,reason,detail,messageId,errorCode')
    expect(lines).toHaveLength(47)
    expect(lines[1]).toMatch(new RegExp(`^2,\\${audience[0]},,sent,`))
    const ndjson = await app.inject({
      method: 'GET',
      url: `/api/third-party/campaigns/${campaign.id}/export?format=ndjson&state=sent`,
      headers: headers(),
    })
    const rows = ndjson.body
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
    expect(rows).toHaveLength(45)
  })

  it('counts each recipient who replied or opted out of its sender once, in the lists too, and in full again when it completes', async () => {
    const campaign = await create()
    await loadAudience(campaign.id, Array.from({ length: 200 }, newPhone))
    const started = await control(campaign.id, 'start')
    expect(started.statusCode).toBe(200)
    await waitFor(async () => ((await get(campaign.id)).counts.sent >= 20 ? true : undefined), {
      what: 'some sent',
    })
    expect((await control(campaign.id, 'pause')).statusCode).toBe(200)
    // The platform stamps a reply in whole seconds: these come a second after the start at least.
    const at = Math.max(Date.now(), Date.parse(started.json<Campaign>().startedAt as string) + 1000)
    const sent = await app.inject({
      method: 'GET',
      url: `/api/third-party/campaigns/${campaign.id}/recipients?state=sent&take=3`,
      headers: headers(),
    })
    const [replier, stopper, keyListed] = sent
      .json<{ data: CampaignRecipient[] }>()
      .data.map((r) => r.phone as string)
    // Two replies from one recipient, one from a stranger; a STOP from another (who wrote back too);
    // the key's own suppression of a third (no opt-out of theirs): two replied, one opted out.
    for (const phone of [replier, replier, newPhone()]) {
      const reply = await replyFrom(app, APP_SECRET, senderNumber, phone as string, at)
      expect(reply.statusCode, reply.body).toBe(200)
    }
    const stop = messageWebhook(
      senderNumber,
      inboundMessage('text', { phone: stopper as string }, { text: 'STOP', at }),
    )
    expect((await postPlatformWebhook(app, stop, APP_SECRET)).statusCode).toBe(200)
    const listed = await app.inject({
      method: 'POST',
      url: '/api/third-party/suppressions',
      headers: headers(),
      payload: { phone: keyListed, reason: 'asked by phone' },
    })
    expect(listed.statusCode, listed.body).toBe(201)
    const engaged = { replied: 2, optedOut: 1 }
    await waitFor(
      async () =>
        JSON.stringify((await get(campaign.id)).engagement) === JSON.stringify(engaged) ? true : undefined,
      { what: 'the reply and the opt-out counted', timeoutMs: 20_000 },
    )
    const list = await app.inject({
      method: 'GET',
      url: '/api/third-party/campaigns?take=50',
      headers: headers(),
    })
    expect(list.json<{ data: Campaign[] }>().data.find((c) => c.id === campaign.id)?.engagement).toEqual(
      engaged,
    )
    await expectCountsExact(campaign.id)

    // A reply whose row was not written as it was stored (stored before its message's record, as a
    // Postgres outage's catch-up may): not counted while it runs, counted when it completes.
    await world.sql`delete from campaign_engagement where campaign_id = ${campaign.id} and kind = 'replied'`
    expect((await get(campaign.id)).engagement).toEqual({ replied: 0, optedOut: 1 })
    expect((await control(campaign.id, 'resume')).statusCode).toBe(200)
    const done = await untilStatus(campaign.id, 'completed')
    expect(done.engagement).toEqual(engaged)
    const completed = await waitFor(
      () =>
        receiver.received.find(
          (r) => r.json.data?.campaignId === campaign.id && r.json.type === 'campaign.completed',
        ),
      { what: 'campaign.completed' },
    )
    expect(completed.json.data.engagement).toEqual(engaged)

    // Erasing the recipient who replied leaves the count: it names no one.
    const erasure = await app.inject({
      method: 'POST',
      url: '/api/third-party/erasures',
      headers: headers(),
      payload: { phone: replier },
    })
    expect(erasure.statusCode, erasure.body).toBe(202)
    await waitFor(
      async () => {
        const res = await app.inject({
          method: 'GET',
          url: `/api/third-party/erasures/${erasure.json().id}`,
          headers: headers(),
        })
        return res.json<{ status: string }>().status === 'completed' ? true : undefined
      },
      { what: 'the erasure completed' },
    )
    expect((await get(campaign.id)).engagement).toEqual(engaged)
  })

  it('refuses a row its send would refuse: an opted-out recipient is skipped with the reason, the rest go', async () => {
    const campaign = await create()
    const [out, ...rest] = Array.from({ length: 5 }, newPhone)
    const optOut = await app.inject({
      method: 'POST',
      url: '/api/third-party/suppressions',
      headers: headers(),
      payload: { phone: out, reason: 'asked by phone' },
    })
    expect(optOut.statusCode, optOut.body).toBe(201)
    await loadAudience(campaign.id, [out as string, ...rest])
    expect((await control(campaign.id, 'start')).statusCode).toBe(200)
    const done = await untilStatus(campaign.id, 'completed')
    expect(done.counts).toMatchObject({ sent: 4, skipped: 1 })
    await expectCountsExact(campaign.id)
    expect(sentTo(out as string)).toHaveLength(0)
    const skipped = await app.inject({
      method: 'GET',
      url: `/api/third-party/campaigns/${campaign.id}/recipients?state=skipped`,
      headers: headers(),
    })
    expect(skipped.json().data[0]).toMatchObject({
      line: 2,
      reason: 'opted_out',
      errorCode: 'RECIPIENT_OPTED_OUT',
    })
  })
})

describe('controls', () => {
  it('pause stops the feeding, resume finishes it; nothing goes twice', async () => {
    const campaign = await create()
    const audience = Array.from({ length: 200 }, newPhone)
    await loadAudience(campaign.id, audience)
    expect((await control(campaign.id, 'start')).statusCode).toBe(200)
    await waitFor(async () => ((await get(campaign.id)).counts.sent >= 20 ? true : undefined), {
      what: 'some sent',
    })
    const paused = await control(campaign.id, 'pause')
    expect(paused.statusCode, paused.body).toBe(200)
    expect(paused.json().status).toBe('paused')
    // What was fed drains; then nothing more goes out while paused.
    const settled = await waitFor(
      async () => {
        const { counts } = await get(campaign.id)
        const before = counts.sent
        await new Promise((r) => setTimeout(r, 400))
        const after = (await get(campaign.id)).counts.sent
        return before === after ? after : undefined
      },
      { what: 'the fed messages drained' },
    )
    expect(settled).toBeLessThan(200)
    expect((await control(campaign.id, 'pause')).statusCode).toBe(409)
    const resumed = await control(campaign.id, 'resume')
    expect(resumed.statusCode, resumed.body).toBe(200)
    const done = await untilStatus(campaign.id, 'completed')
    expect(done.counts.sent).toBe(200)
    for (const phone of audience) expect(sentTo(phone), phone).toHaveLength(1)
  })

  it('cancel ends the rows not fed, and the fed messages not sent, as canceled; the counts still add up', async () => {
    // A slow sender (5 a second): a window of fed messages still waits in its queue at the cancel.
    const slow = await syncedSender(app, fake, { body: { ratePerSecond: 5 } })
    const own = await keyOf(app, slow.id, SCOPES)
    const campaign = await create(own.key)
    const audience = Array.from({ length: 300 }, newPhone)
    await loadAudience(campaign.id, audience)
    expect((await control(campaign.id, 'start', own.key)).statusCode).toBe(200)
    await waitFor(async () => ((await get(campaign.id, own.key)).counts.sent >= 3 ? true : undefined), {
      what: 'some sent',
    })
    const canceled = await control(campaign.id, 'cancel', own.key)
    expect(canceled.statusCode, canceled.body).toBe(200)
    expect(canceled.json<Campaign>()).toMatchObject({ status: 'canceled' })
    const after = await waitFor(
      async () => {
        const campaignNow = await get(campaign.id, own.key)
        return campaignNow.counts.pending === 0 && campaignNow.counts.held === 0 ? campaignNow : undefined
      },
      { what: 'nothing of the campaign pending', timeoutMs: 20_000 },
    )
    expect(total(after.counts)).toBe(300)
    expect(after.counts.canceled).toBeGreaterThan(0)
    await expectCountsExact(campaign.id)
    // Each canceled line is listed once with its recipient (a block canceled whole reads as its lines).
    const listed: CampaignRecipient[] = []
    let next: number | null = 0
    while (next !== null) {
      const res: Awaited<ReturnType<typeof app.inject>> = await app.inject({
        method: 'GET',
        url: `/api/third-party/campaigns/${campaign.id}/recipients?state=canceled&take=50&after=${next}`,
        headers: headers(own.key),
      })
      const body: { data: CampaignRecipient[]; next: number | null } = res.json()
      listed.push(...body.data)
      next = body.next
    }
    expect(listed).toHaveLength(after.counts.canceled)
    for (const r of listed) expect(r.phone).toBe(audience[r.line - 2])
    // Fed messages canceled in the queue are listed too, with their message.
    expect(listed.some((r) => r.messageId !== null)).toBe(true)
    const sent = audience.filter((p) => sentTo(p).length > 0)
    expect(sent.length).toBe(after.counts.sent)
    for (const phone of sent) expect(sentTo(phone)).toHaveLength(1)
    expect((await control(campaign.id, 'cancel', own.key)).statusCode).toBe(409)
    expect((await control(campaign.id, 'start', own.key)).statusCode).toBe(409)
  })

  it('a window given ids but never stored (its feeder died) is stored again under the same ids, each sent once', async () => {
    const campaign = await create()
    const audience = Array.from({ length: 30 }, newPhone)
    await loadAudience(campaign.id, audience)
    // Running, but fed by "another feeder" that assigned the first window and died before storing it.
    await world.sql`update campaigns set status = 'running', started_at = now() where id = ${campaign.id}`
    const { db } = app.deps
    const orphaned = await assignWindow(db, campaign.id, 10, new Date())
    expect(orphaned).toHaveLength(10)
    const done = await untilStatus(campaign.id, 'completed')
    expect(done.counts.sent).toBe(30)
    for (const phone of audience) expect(sentTo(phone), phone).toHaveLength(1)
    const page = await app.inject({
      method: 'GET',
      url: `/api/third-party/campaigns/${campaign.id}/recipients?take=10`,
      headers: headers(),
    })
    expect(page.json().data.map((r: CampaignRecipient) => r.messageId)).toEqual(
      orphaned.map((r) => r.messageId),
    )
  })
})

describe('fairness', () => {
  it("a key's own transactional send, and another key's, go before its campaign's waiting messages", async () => {
    // A slow sender (5 a second): the campaign's 60 recipients take ~12 s.
    const slow = await syncedSender(app, fake, { body: { ratePerSecond: 5 } })
    const a = await keyOf(app, slow.id, SCOPES)
    const b = await keyOf(app, slow.id, SCOPES)
    const campaign = await create(a.key)
    await loadAudience(campaign.id, Array.from({ length: 60 }, newPhone))
    expect((await control(campaign.id, 'start', a.key)).statusCode).toBe(200)
    await waitFor(async () => ((await get(campaign.id, a.key)).counts.sent >= 5 ? true : undefined), {
      what: 'the campaign under way',
    })
    const sendNow = async (apiKey: string) => {
      const phone = newPhone()
      const res = await app.inject({
        method: 'POST',
        url: '/api/third-party/messages/send-template',
        headers: headers(apiKey),
        payload: { phone, ...TEMPLATE, variables: { '1': 'Ana', '2': 'BR-1' } },
      })
      expect(res.statusCode, res.body).toBe(202)
      return phone
    }
    const before = fake.requests.length
    const own = await sendNow(a.key)
    const other = await sendNow(b.key)
    await waitFor(() => (sentTo(own).length > 0 && sentTo(other).length > 0 ? true : undefined), {
      what: 'both transactional sends out',
    })
    // Only what was already admitted to the sender's queue (a second's worth at its rate) went
    // between: not the window of the campaign's messages waiting in the key's turn (20).
    const between = (phone: string) =>
      fake.requests.slice(before).findIndex((r) => r.body.to === phone.slice(1))
    expect(between(own)).toBeLessThan(10)
    expect(between(other)).toBeLessThan(10)
    const left = await get(campaign.id, a.key)
    expect(left.counts.pending).toBeGreaterThan(30)
  })
})

describe('the messaging limit', () => {
  it("holds what would pass the portfolio's limit, even under a sender's `refuse`, and feeds no more", async () => {
    const sender = await syncedSender(app, fake, {
      body: {
        businessId: `8${String(Date.now()).slice(-9)}`,
        messagingLimitOverride: 3,
        messagingLimitPolicy: 'refuse',
      },
    })
    const limited = await keyOf(app, sender.id, SCOPES)
    const campaign = await create(limited.key)
    // 60 rows, fed 20 at a time (CAMPAIGN_WINDOW): the first window reaches the limit. The worker
    // counts the reach as it claims, so one more window may be fed before the first is claimed (a
    // loaded machine); never a third.
    const audience = Array.from({ length: 60 }, newPhone)
    await loadAudience(campaign.id, audience)
    expect((await control(campaign.id, 'start', limited.key)).statusCode).toBe(200)
    await waitFor(async () => ((await get(campaign.id, limited.key)).counts.sent === 3 ? true : undefined), {
      what: 'three sent',
      timeoutMs: 20_000,
    })
    const page = async () => {
      const res = await app.inject({
        method: 'GET',
        url: `/api/third-party/campaigns/${campaign.id}/recipients?take=60`,
        headers: headers(limited.key),
      })
      return res.json<{ data: CampaignRecipient[] }>().data
    }
    // What was fed past the limit is held by the worker (scheduled until room frees), never refused.
    const fed = (await page()).filter((r) => r.messageId !== null)
    expect([20, 40]).toContain(fed.length)
    const heldOne = fed.find((r) => r.state !== 'sent') as CampaignRecipient
    const message = await waitFor(
      async () => {
        const res = await app.inject({
          method: 'GET',
          url: `/api/third-party/messages/${heldOne.messageId}`,
          headers: headers(limited.key),
        })
        return res.json().status === 'scheduled' ? res.json() : undefined
      },
      { what: 'a held message' },
    )
    expect(message).toMatchObject({ scheduledReason: 'messaging_limit' })
    // At the limit, nothing more is fed: the rest waits for room.
    await new Promise((resolve) => setTimeout(resolve, 500))
    expect((await page()).filter((r) => r.messageId !== null)).toHaveLength(fed.length)
    const now = await get(campaign.id, limited.key)
    expect(now).toMatchObject({ status: 'running', counts: { sent: 3, skipped: 0 } })
    expect(audience.filter((p) => sentTo(p).length > 0)).toHaveLength(3)
  })
})

describe('boundaries', () => {
  it("another key's campaign is not found, for every route; a key without the scope is refused", async () => {
    const campaign = await create()
    const other = await keyOf(app, senderId, SCOPES)
    for (const [method, path] of [
      ['GET', ''],
      ['GET', '/recipients'],
      ['GET', '/export'],
      ['POST', '/start'],
      ['POST', '/pause'],
      ['POST', '/resume'],
      ['POST', '/cancel'],
    ] as const) {
      const res = await app.inject({
        method,
        url: `/api/third-party/campaigns/${campaign.id}${path}`,
        headers: headers(other.key),
      })
      expectError(res, 404, 'NOT_FOUND')
    }
    const list = await app.inject({
      method: 'GET',
      url: '/api/third-party/campaigns',
      headers: headers(other.key),
    })
    expect(list.json().data).toEqual([])
    const unscoped = await activeKey(app, { scopes: ['send:template'] })
    expectError(
      await app.inject({ method: 'GET', url: '/api/third-party/campaigns', headers: headers(unscoped.key) }),
      403,
      'INSUFFICIENT_SCOPE',
    )
    expect((await get(campaign.id)).status).toBe('draft')
  })

  it("an admin reads every key's campaigns and pauses, resumes and cancels them, audited; a key's credential is refused", async () => {
    const campaign = await create()
    await loadAudience(campaign.id, Array.from({ length: 3 }, newPhone))
    const admin = (method: 'GET' | 'POST', path: string) =>
      app.inject({ method, url: `/api/admin/campaigns${path}`, headers: asAdmin() })
    const listed = await admin('GET', `?apiKeyId=${key.id}&status=ready`)
    expect(listed.statusCode, listed.body).toBe(200)
    expect(listed.json().data.map((c: Campaign) => c.id)).toContain(campaign.id)
    // The admin's view names the key's client, as the admin's messages do; the key's own does not.
    expect(listed.json().data.find((c: Campaign) => c.id === campaign.id).clientName).toBe(
      'Acme Notifications',
    )
    expect((await admin('GET', `/${campaign.id}`)).json()).toMatchObject({
      id: campaign.id,
      apiKeyId: key.id,
      clientName: 'Acme Notifications',
    })
    expect(await get(campaign.id)).not.toHaveProperty('clientName')
    expectError(await admin('POST', `/${campaign.id}/pause`), 409, 'INVALID_STATE_TRANSITION')
    expect((await admin('POST', `/${campaign.id}/cancel`)).json()).toMatchObject({ status: 'canceled' })
    expect((await get(campaign.id)).counts.canceled).toBe(3)
    const audited =
      await world.sql`select actor, action from admin_audit_log where target_id = ${campaign.id}`
    expect(audited).toEqual([{ actor: 'ana', action: 'campaign.cancel' }])
    const csv = await admin('GET', `/${campaign.id}/export`)
    expect(csv.body.trim().split('\n')).toHaveLength(4)
    expectError(
      await app.inject({ method: 'GET', url: '/api/admin/campaigns', headers: headers() }),
      401,
      'ADMIN_AUTH_REQUIRED',
    )
  })

  it("a key's erasure removes the recipient from its campaigns' rows, and from no other key's", async () => {
    const phone = newPhone()
    const mine = await create()
    await loadAudience(mine.id, [phone, newPhone()])
    const other = await keyOf(app, senderId, SCOPES)
    const theirs = await create(other.key)
    await loadAudience(theirs.id, [phone])
    const erasure = await app.inject({
      method: 'POST',
      url: '/api/third-party/erasures',
      headers: headers(),
      payload: { phone },
    })
    expect(erasure.statusCode, erasure.body).toBe(202)
    const report = await waitFor(
      async () => {
        const res = await app.inject({
          method: 'GET',
          url: `/api/third-party/erasures/${erasure.json().id}`,
          headers: headers(),
        })
        const body = res.json<{ status: string; report: { campaignRecipients: number } }>()
        return body.status === 'completed' ? body : undefined
      },
      { what: 'the erasure completed' },
    )
    expect(report.report.campaignRecipients).toBe(1)
    const rows = async (id: string, apiKey: string) =>
      (
        await app.inject({
          method: 'GET',
          url: `/api/third-party/campaigns/${id}/export?format=csv`,
          headers: headers(apiKey),
        })
      ).body
    const mineNow = await rows(mine.id, key.key)
    expect(mineNow).not.toContain(phone)
    expect(mineNow.trim().split('\n')).toHaveLength(3)
    expect(await rows(theirs.id, other.key)).toContain(phone)
  })

  it('checks the template as a send would: unknown, and header variables that do not fit', async () => {
    const unknown = await app.inject({
      method: 'POST',
      url: '/api/third-party/campaigns',
      headers: headers(),
      payload: { name: 'x', template: { templateId: 'no_such_template', language: 'pt_BR' } },
    })
    expectError(unknown, 422, 'TEMPLATE_NOT_FOUND')
    const noHeader = await app.inject({
      method: 'POST',
      url: '/api/third-party/campaigns',
      headers: headers(),
      payload: { name: 'x', template: { templateId: 'order_shipped', language: 'pt_BR' } },
    })
    expectError(noHeader, 422, 'TEMPLATE_PARAMETERS_MISMATCH', /headerVariables/)
    const draft = await create()
    expectError(await control(draft.id, 'start'), 409, 'INVALID_STATE_TRANSITION', /audience/)
    // An audience of skipped rows only: nothing to start.
    const upload = await app.inject({
      method: 'PUT',
      url: `/api/third-party/campaigns/${draft.id}/audience`,
      headers: { ...headers(), 'content-type': 'text/csv' },
      payload: 'phone,1,2\nnot-a-phone,Ana,BR-1\n',
    })
    expect(upload.statusCode, upload.body).toBe(200)
    expectError(await control(draft.id, 'start'), 409, 'INVALID_STATE_TRANSITION', /took no row/)
  })
})
