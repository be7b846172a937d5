import { applySmsStatus, campaignCounts, createDb, findCampaign, findFallback } from '@dispatch/db'
import { type FakeSms, startFakeSms, waitFor } from '@dispatch/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createDeliveryWorld, type DeliveryWorld, text } from './world.ts'

/**
 * The SMS's prices, which Twilio's status callbacks do not carry, read by the worker from the
 * provider's Message resource once each SMS's delivery ended (docs/fallback.md, "Prices"), through
 * the real worker against Postgres, Redis and the fake SMS provider, and summed with the campaign.
 */
let world: DeliveryWorld
let sms: FakeSms
let client: ReturnType<typeof createDb>

beforeAll(async () => {
  world = await createDeliveryWorld()
  // Twilio's record says no price for a while after the delivery: the first read of each finds none.
  sms = await startFakeSms({ pricing: { price: '-0.00790', priceUnit: 'USD', unpricedReads: 1 } })
  await world.startWorker({ ...sms.env(), SMS_PRICE_CHECK_MS: '200' })
  client = createDb(world.workerEnv().DATABASE_URL as string, { max: 2 })
})
afterAll(async () => {
  await client?.close()
  await sms?.close()
  await world?.close()
})

let phones = 0
const newPhone = () => `+4915116${String(100_000 + phones++)}`
const to = (phone: string) => ({ type: 'text', body: { ...text().body, phone } }) as ReturnType<typeof text>
const settle = () => new Promise((resolve) => setTimeout(resolve, 600))

describe("a campaign's SMS", () => {
  it('are priced from the provider once delivered or not, and summed; one still on its way is not asked', async () => {
    const [campaign] = await client.sql<{ id: string }[]>`
      insert into campaigns (api_key_id, sender_id, name, template, status, fed_rows, audience)
      values (${world.apiKeyId}, 'default', 'Autumn', ${JSON.stringify({ name: 'promo', language: 'en' })}::jsonb,
        'running', 3, ${JSON.stringify({ taken: 3, skipped: 0 })}::jsonb)
      returning id`
    const sent: Array<{ messageId: string; sid: string }> = []
    for (const n of [0, 1, 2]) {
      // Expired before it went: its SMS goes instead.
      const messageId = await world.enqueue(to(newPhone()), undefined, {
        batchId: campaign?.id,
        expiresAt: new Date(Date.now() - 1000).toISOString(),
        fallback: { sms: { text: 'Our autumn sale starts today' } },
      })
      const fallback = await waitFor(
        async () => {
          const found = await findFallback(client.sql, messageId)
          return found?.state === 'sent' && found
        },
        { what: `SMS ${n}` },
      )
      sent.push({ messageId, sid: fallback.providerMessageId as string })
    }
    const [first, second, third] = sent as [(typeof sent)[0], (typeof sent)[0], (typeof sent)[0]]
    // The reports, as the status callback route applies them: no price on any.
    await applySmsStatus(client.sql, { providerMessageId: first.sid, status: 'delivered', at: new Date() })
    await applySmsStatus(client.sql, {
      providerMessageId: second.sid,
      status: 'undelivered',
      errorCode: '30003',
      at: new Date(),
    })
    await applySmsStatus(client.sql, { providerMessageId: third.sid, status: 'sent', at: new Date() })
    for (const { messageId } of [first, second]) {
      await waitFor(async () => (await findFallback(client.sql, messageId))?.price != null, {
        what: 'the price read from the provider',
      })
    }
    expect(await findFallback(client.sql, first.messageId)).toMatchObject({
      price: '0.00790',
      priceUnit: 'USD',
      providerStatus: 'delivered',
    })
    // Asked twice (none yet, then the price), then never again; the one still `sent` never.
    await settle()
    expect([sms.reads(first.sid), sms.reads(second.sid), sms.reads(third.sid)]).toEqual([2, 2, 0])
    const row = await findCampaign(client.db, campaign?.id as string)
    const counted = await campaignCounts(client.db, row as NonNullable<typeof row>)
    expect(counted.pricing.sms).toEqual({ sent: 3, priceByCurrency: { USD: '0.01580' } })
  })
})
