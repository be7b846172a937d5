import { randomUUID } from 'node:crypto'
import {
  CAMPAIGN_CANCELED_CODE,
  type CampaignCancelJob,
  DEFAULT_SENDER_ID,
  QueueNames,
} from '@dispatch/contracts'
import {
  type CampaignRow,
  cancelCampaign,
  createCampaign,
  createDb,
  type Db,
  transitionCampaign,
  upsertDefaultSender,
} from '@dispatch/db'
import { fairKeys } from '@dispatch/runtime/message-handoff'
import { testRedisUrl, waitFor } from '@dispatch/testing'
import { Queue } from 'bullmq'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { CampaignCancelReport } from '../../src/lifecycle/campaign-cancel.ts'
import {
  createDeliveryWorld,
  type DeliveryWorld,
  insertSenderKey,
  PHONE_NUMBER_ID,
  text,
} from '../messages/world.ts'

// A campaign's cancel, on the worker's side (issue 43): the outbox row its cancel committed is
// relayed to `campaign-cancels`, whose lifecycle sweep cancels the campaign's messages still in
// Redis (queued, scheduled, admitted) as `CAMPAIGN_CANCELED`; one a worker holds is canceled when it
// next comes to delivery. Other campaigns', other keys' and plain messages go on untouched.
let world: DeliveryWorld
let db: Db
let closeDb: () => Promise<void>
let redis: Redis
let cancels: Queue<CampaignCancelJob, CampaignCancelReport>

beforeAll(async () => {
  world = await createDeliveryWorld()
  ;({ db, close: closeDb } = createDb(world.workerEnv().DATABASE_URL, { max: 2 }))
  // The sweep finds a campaign's messages on its sender's queue: the row a messages worker writes.
  await upsertDefaultSender(db, {
    phoneNumberId: PHONE_NUMBER_ID,
    displayName: 'Acme',
    ratePerSecond: 10_000,
    accessTokenLast4: null,
  })
  redis = new Redis(testRedisUrl())
  cancels = new Queue(QueueNames.campaignCancels, {
    connection: { url: testRedisUrl() },
    prefix: world.queuePrefix,
  })
})
afterAll(async () => {
  await cancels?.obliterate({ force: true }).catch(() => {})
  await cancels?.close()
  redis?.disconnect()
  await closeDb?.()
  await world?.close()
})

/** A campaign of the key, running, its first `fed` rows fed (so its cancel writes the sweep's outbox row). */
async function runningCampaign(apiKeyId = world.apiKeyId, fed = 10): Promise<CampaignRow> {
  const at = new Date()
  const draft = await createCampaign(
    db,
    {
      apiKeyId,
      tenantId: null,
      senderId: DEFAULT_SENDER_ID,
      name: `December promotion ${randomUUID().slice(0, 8)}`,
      template: { templateId: 'december_promo', language: 'en' },
      startAt: null,
      validitySeconds: null,
      quietHours: null,
    },
    at,
  )
  const running = await transitionCampaign(db, draft.id, ['draft'], 'running', at, {
    set: { startedAt: at, fedThrough: fed, confirmedThrough: fed },
  })
  if (!running) throw new Error('campaign not started')
  return running
}

const later = (ms: number) => new Date(Date.now() + ms).toISOString()
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** The message's record in Postgres (none while it waits in Redis). */
const record = (id: string) =>
  world.sql<{ status: string; last_error_code: string | null; updated_at: Date }[]>`
    select status, last_error_code, updated_at from messages where id = ${id}`.then((rows) => rows[0])
const untilStatus = (id: string, status: string, timeoutMs = 15_000) =>
  waitFor(
    async () => {
      const row = await record(id)
      return row?.status === status ? row : undefined
    },
    { timeoutMs, what: `${id} to be ${status}` },
  )

/** Where a message of the default sender may wait in Redis: admission, schedule, its BullMQ job. */
async function inRedis(id: string): Promise<boolean> {
  const keys = fairKeys(world.queuePrefix, DEFAULT_SENDER_ID)
  const [waiting, scheduled, job] = await Promise.all([
    redis.hexists(keys.jobs, id),
    redis.zscore(keys.scheduled, id),
    world.queue.getJob(id),
  ])
  return waiting === 1 || scheduled !== null || job !== undefined
}

/** The sweep's job of the campaign, once it completed: its report. */
const sweepReport = (jobId: string) =>
  waitFor(
    async () => {
      const job = await cancels.getJob(jobId)
      return job?.finishedOn ? job : undefined
    },
    { what: `sweep ${jobId} to finish` },
  ).then((job) => {
    expect(job.failedReason).toBeUndefined()
    return job.returnvalue
  })

describe("a campaign's cancel", () => {
  it('cancels its queued, scheduled and admitted messages (CAMPAIGN_CANCELED), leaves the rest to be delivered, and sweeps again harmlessly', async () => {
    const campaign = await runningCampaign()
    const other = await runningCampaign()
    const otherKey = await insertSenderKey(db)
    const of = { batchId: campaign.id }
    // No messages worker runs yet: everything waits in Redis.
    const queued = await Promise.all(
      [1, 2, 3].map(() => world.accept(text('December: 20% off'), randomUUID(), of)),
    )
    const scheduled = await Promise.all(
      [1, 2].map(() =>
        world.accept(text('December: 20% off'), randomUUID(), { ...of, sendAt: later(60_000) }),
      ),
    )
    const admitted = await Promise.all(
      [1, 2].map(() => world.enqueue(text('December: 20% off'), randomUUID(), of)),
    )
    const ours = [...queued, ...scheduled, ...admitted]
    const others = [
      await world.accept(text('Another campaign'), randomUUID(), { batchId: other.id }),
      await world.enqueue(text('Another campaign, admitted'), randomUUID(), { batchId: other.id }),
      // Another key's message naming the campaign's id as its batch: not the campaign's.
      await world.accept(text('Not this campaign'), randomUUID(), {
        apiKeyId: otherKey.id,
        batchId: campaign.id,
      }),
      await world.accept(text('Your code is 424242')),
    ]

    const canceled = await cancelCampaign(db, campaign.id, new Date())
    expect(canceled).toMatchObject({ status: 'canceled' })
    const [outbox] = await world.sql<{ job_id: string }[]>`
      select job_id from outbox where topic = ${QueueNames.campaignCancels} and payload->>'campaignId' = ${campaign.id}`
    if (!outbox) throw new Error('the cancel wrote no outbox row')
    // Canceled again: refused, no second sweep.
    expect(await cancelCampaign(db, campaign.id, new Date())).toBeUndefined()

    const sweeper = await world.startWorker({ WORKER_QUEUES: 'outbox,lifecycle', OUTBOX_POLL_MS: '50' })
    try {
      expect(await sweepReport(`outbox-${outbox.job_id}`)).toEqual({ canceled: ours.length, inFlight: 0 })
      for (const id of ours) {
        expect(await record(id)).toMatchObject({
          status: 'canceled',
          last_error_code: CAMPAIGN_CANCELED_CODE,
        })
        expect(await inRedis(id)).toBe(false)
      }
      for (const id of others) {
        expect(await record(id)).toBeUndefined()
        expect(await inRedis(id)).toBe(true)
      }

      // The same sweep run again (a retry, a second row): nothing left to cancel, nothing rewritten.
      const before = await Promise.all(ours.map(record))
      await cancels.add(
        'campaign-cancel',
        { outboxId: '999999', campaignId: campaign.id },
        { jobId: 'again' },
      )
      expect(await sweepReport('again')).toEqual({ canceled: 0, inFlight: 0 })
      expect(await Promise.all(ours.map(record))).toEqual(before)
      // A campaign not canceled is not swept.
      await cancels.add(
        'campaign-cancel',
        { outboxId: '999998', campaignId: other.id },
        { jobId: 'not-canceled' },
      )
      const refused = await waitFor(async () => (await cancels.getJob('not-canceled'))?.failedReason, {
        what: 'the sweep of a running campaign to be refused',
      })
      expect(refused).toMatch(/not canceled/)
    } finally {
      await sweeper.close()
    }

    // The rest go out once a messages worker runs; the campaign's never reach the platform.
    const delivering = await world.startWorker({ WORKER_QUEUES: 'messages' })
    try {
      for (const id of others) await untilStatus(id, 'sent')
      await sleep(300)
      for (const id of ours) {
        expect(world.fake.requests.filter((r) => r.messageId === id)).toEqual([])
        expect(await record(id)).toMatchObject({
          status: 'canceled',
          last_error_code: CAMPAIGN_CANCELED_CODE,
        })
      }
    } finally {
      await delivering.close()
    }
  })

  it('a message a worker already holds (tried once, waiting for its retry) is canceled at delivery, never sent', async () => {
    const campaign = await runningCampaign()
    const worker = await world.startWorker({
      WORKER_QUEUES: 'messages,outbox,lifecycle',
      OUTBOX_POLL_MS: '50',
      // The failed first try is retried 10 to 20 s later: the sweep passes meanwhile and gives way
      // (a retry 3 to 6 s later came before the sweep on a loaded CI machine).
      MESSAGES_BACKOFF_MS: '20000',
    })
    try {
      world.fake.script({
        status: 500,
        body: { error: { message: 'try later', code: 2, type: 'OAuthException' } },
      })
      const id = await world.accept(text('December: 20% off'), randomUUID(), { batchId: campaign.id })
      await waitFor(() => world.fake.requests.find((r) => r.messageId === id), { what: 'the first try' })
      expect(world.fake.sendsOf(id)).toBe(0)
      await cancelCampaign(db, campaign.id, new Date())
      const [outbox] = await world.sql<{ job_id: string }[]>`
        select job_id from outbox where topic = ${QueueNames.campaignCancels} and payload->>'campaignId' = ${campaign.id}`
      // The sweep gave way to the worker's claim; the delivery's gate cancels it.
      expect(await sweepReport(`outbox-${outbox?.job_id}`)).toEqual({ canceled: 0, inFlight: 1 })
      expect(await untilStatus(id, 'canceled', 40_000)).toMatchObject({
        last_error_code: CAMPAIGN_CANCELED_CODE,
      })
      await sleep(500)
      expect(world.fake.requests.filter((r) => r.messageId === id)).toHaveLength(1)
      expect(world.fake.sendsOf(id)).toBe(0)
    } finally {
      await worker.close()
    }
  }, 60_000)
})
