import {
  applyPlatformStatus,
  campaignCounts,
  createDb,
  type DeliveryOutcome,
  findCampaign,
  foldCampaignTallies,
  recordDeliveryOutcomes,
  recordMessagePricing,
  recountCampaign,
} from '@dispatch/db'
import { messageIdAt } from '@dispatch/runtime'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { createWorld, type TestWorld } from '../helpers.ts'

/**
 * A campaign's counts as kept (migration 0045: moves appended by the triggers on `messages`, folded
 * into `campaign_tallies`) against a recount of every row and message, while its messages are
 * recorded and moved on by several connections at once and folds run between and during them.
 */

const AUDIENCE = 600
let world: TestWorld
let dbs: ReturnType<typeof createDb>[]
let campaignId: string
let keyId: string

beforeAll(async () => {
  world = await createWorld()
  dbs = Array.from({ length: 4 }, () => createDb(world.databaseUrl, { max: 1 }))
  const [key] = await world.sql<{ id: string }[]>`
    insert into api_keys (key_hash, key_prefix, environment, client_name, email, scopes, status)
    values ('tally-test', 'mdk_test', 'development', 'tally', 'tally@dispatch.local', '{send:template}', 'approved')
    returning id`
  keyId = key?.id as string
  const audience = { rows: AUDIENCE, taken: AUDIENCE, skipped: 0, skippedByReason: {}, format: 'csv' }
  const [campaign] = await world.sql<{ id: string }[]>`
    insert into campaigns (api_key_id, sender_id, name, template, status, audience, started_at,
      fed_through, confirmed_through, fed_rows)
    values (${keyId}, 'default', 'tally', '{"templateId":"order_shipped","language":"pt_BR"}', 'running',
      ${world.sql.json(audience)}, now() - interval '1 minute', ${AUDIENCE + 1}, ${AUDIENCE + 1}, ${AUDIENCE})
    returning id`
  campaignId = campaign?.id as string
  await world.sql`
    insert into campaign_recipients (campaign_id, line, phone, variables, state)
    select ${campaignId}, i + 1, '+5521900' || lpad(i::text, 6, '0'), '{}', 'fed'
    from generate_series(1, ${AUDIENCE}) i`
})

afterAll(async () => {
  await Promise.all((dbs ?? []).map((d) => d.close()))
  await world?.close()
})

const outcome = (i: number, batchId: string | null): DeliveryOutcome => {
  const at = new Date()
  return {
    id: messageIdAt(at.getTime()),
    apiKeyId: keyId,
    type: 'template',
    phone: `+5521900${String(i).padStart(6, '0')}`,
    userId: null,
    payload: { templateId: 'order_shipped', language: 'pt_BR' },
    clientReference: null,
    senderPhoneNumberId: '106540352242922',
    senderId: 'default',
    batchId,
    acceptedAt: at,
    sendAt: null,
    expiresAt: null,
    status: 'sent',
    attempts: 1,
    platformMessageId: `wamid.tally.${batchId ? 'c' : 'b'}.${i}`,
    lastErrorCode: null,
    lastErrorMessage: null,
    at,
  }
}

async function expectCountsExact() {
  const [first] = dbs
  const db = (first as ReturnType<typeof createDb>).db
  const row = await findCampaign(db, campaignId)
  if (!row) throw new Error('campaign not found')
  const recounted = await recountCampaign(db, row)
  expect(await campaignCounts(db, row)).toEqual(recounted)
  return recounted
}

it('counts equal a recount of every message while four connections record and move them on and folds run meanwhile', async () => {
  const outcomes = Array.from({ length: AUDIENCE }, (_, i) => outcome(i + 1, campaignId))
  // Messages of another batch (not a campaign) beside them: never counted.
  const others = Array.from({ length: 50 }, (_, i) => outcome(i + 1, '00000000-0000-4000-8000-000000000001'))
  // Recorded `sent` 50 a statement, each connection its own share.
  await Promise.all(
    dbs.map(({ sql }, c) =>
      (async () => {
        for (let i = c * 50; i < outcomes.length; i += dbs.length * 50)
          await recordDeliveryOutcomes(sql, outcomes.slice(i, i + 50))
      })(),
    ),
  )
  await recordDeliveryOutcomes((dbs[0] as ReturnType<typeof createDb>).sql, others)
  expect((await expectCountsExact()).counts.sent).toBe(AUDIENCE)

  // Each message moved on (delivered, then read; every seventh failed, every eleventh billed), one
  // status a statement, spread over the four connections, while a fifth loop folds.
  let writing = true
  const folds = (async () => {
    let n = 0
    while (writing) {
      n += await foldCampaignTallies((dbs[3] as ReturnType<typeof createDb>).db)
      await new Promise((resolve) => setTimeout(resolve, 5))
    }
    return n
  })()
  await Promise.all(
    dbs.map(({ db }, c) =>
      (async () => {
        for (let i = c; i < outcomes.length; i += dbs.length) {
          const o = outcomes[i] as DeliveryOutcome
          const platformMessageId = o.platformMessageId as string
          if (i % 7 === 0) {
            await applyPlatformStatus(db, {
              platformMessageId,
              messageId: o.id,
              status: 'failed',
              at: new Date(),
              error: { code: i % 2 ? '131026' : '131049', message: 'undeliverable' },
            })
            continue
          }
          await applyPlatformStatus(db, {
            platformMessageId,
            messageId: o.id,
            status: 'delivered',
            at: new Date(),
          })
          if (i % 11 === 0)
            await recordMessagePricing(
              db,
              platformMessageId,
              {
                billable: true,
                pricingModel: 'PMP',
                category: i % 2 ? 'marketing' : 'utility',
                type: 'regular',
              },
              o.id,
            )
          if (i % 3 === 0)
            await applyPlatformStatus(db, {
              platformMessageId,
              messageId: o.id,
              status: 'read',
              at: new Date(),
            })
        }
      })(),
    ),
  )
  // A late `delivered` after `read` moves nothing (statuses only go forward), so counts nothing.
  for (const o of outcomes.slice(0, 20))
    await applyPlatformStatus((dbs[0] as ReturnType<typeof createDb>).db, {
      platformMessageId: o.platformMessageId as string,
      messageId: o.id,
      status: 'delivered',
      at: new Date(),
    })
  writing = false
  const foldedMeanwhile = await folds
  // Before the last fold: the moves left unfolded are read beside the tallies.
  const [left] = await world.sql<{ n: number }[]>`select count(*)::int as n from campaign_tally_moves`
  const counted = await expectCountsExact()
  expect(foldedMeanwhile + (left?.n ?? 0)).toBeGreaterThan(AUDIENCE)

  const failed = outcomes.filter((_, i) => i % 7 === 0).length
  const read = outcomes.filter((_, i) => i % 7 !== 0 && i % 3 === 0).length
  expect(counted.counts).toMatchObject({ sent: 0, failed, read, delivered: AUDIENCE - failed - read })
  expect(Object.values(counted.failedByCode).reduce((a, b) => a + b, 0)).toBe(failed)
  const billed = outcomes.filter((_, i) => i % 7 !== 0 && i % 11 === 0).length
  expect(counted.pricing.billable).toBe(billed)

  // Compacted: once folded, no moves, and one tally row per group of the campaign (none per
  // connection), none of a batch that is no campaign.
  await foldCampaignTallies((dbs[0] as ReturnType<typeof createDb>).db)
  const [moves] = await world.sql<{ n: number }[]>`select count(*)::int as n from campaign_tally_moves`
  expect(moves?.n).toBe(0)
  const groups = await world.sql<{ campaign_id: string; status: string; n: number }[]>`
    select campaign_id, status, n from campaign_tallies order by status, n`
  expect(new Set(groups.map((g) => g.campaign_id))).toEqual(new Set([campaignId]))
  expect(groups.every((g) => g.n > 0)).toBe(true)
  const byStatus = await world.sql<{ status: string; n: number }[]>`
    select status, count(*)::int as n from messages where batch_id = ${campaignId} group by status order by status`
  const tallied = await world.sql<{ status: string; n: number }[]>`
    select status, sum(n)::int as n from campaign_tallies where campaign_id = ${campaignId} group by status order by status`
  expect(tallied).toEqual(byStatus)
  expect(await expectCountsExact()).toEqual(counted)
}, 60_000)
