import { randomUUID } from 'node:crypto'
import { SENDER_CHANGES_CHANNEL, type SenderView } from '@dispatch/contracts'
import { waitFor } from '@dispatch/testing'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, expect, it } from 'vitest'
import {
  asAdmin,
  buildTestApp,
  createWorld,
  postPlatformWebhook,
  type TestApp,
  type TestWorld,
} from '../helpers.ts'

const APP_SECRET = 'app-secret-for-quality-updates'

let world: TestWorld
let app: TestApp
let subscriber: Redis
const published: string[] = []
beforeAll(async () => {
  world = await createWorld()
  app = await buildTestApp(world, { WHATSAPP_APP_SECRET: APP_SECRET })
  subscriber = new Redis(world.redisUrl)
  subscriber.on('message', (_channel, senderId: string) => published.push(senderId))
  await subscriber.subscribe(`${world.queuePrefix}:${SENDER_CHANGES_CHANNEL}`)
})
afterAll(async () => {
  subscriber.disconnect()
  await app.close()
  await world.close()
})

/** What was published since the last call, once everything published before it has arrived. */
const publishedSoFar = async () => {
  const marker = `marker-${randomUUID()}`
  await app.deps.redis.publish(`${world.queuePrefix}:${SENDER_CHANGES_CHANNEL}`, marker)
  await waitFor(() => published.includes(marker), { what: 'our marker' })
  const seen = published.filter((id) => id !== marker)
  published.length = 0
  return seen
}

let numbers = 0
const create = async (displayPhoneNumber: string) => {
  const res = await app.inject({
    method: 'POST',
    url: '/api/admin/senders',
    headers: asAdmin(),
    payload: {
      phoneNumberId: `30${Date.now()}${numbers++}`,
      displayName: 'Acme',
      displayPhoneNumber,
      accessToken: `EAAG-${randomUUID()}`,
    },
  })
  expect(res.statusCode, res.body).toBe(201)
  await publishedSoFar()
  return res.json<SenderView>()
}

const rateOf = async (id: string) => {
  const [row] = await world.sql`select rate_per_second from senders where id = ${id}`
  return row?.rate_per_second as number
}

/** A delivery as Meta documents it (the `phone_number_quality_update` webhook reference). */
const qualityUpdate = (value: unknown) => ({
  object: 'whatsapp_business_account',
  entry: [
    { id: '102290129340398', time: 1748454394, changes: [{ field: 'phone_number_quality_update', value }] },
  ],
})

it('raises the sender of a number upgraded to higher throughput to 1000/s and tells the workers', async () => {
  const sender = await create('15550783881')
  const other = await create('15550780000')
  const res = await postPlatformWebhook(
    app,
    qualityUpdate({
      display_phone_number: '15550783881',
      event: 'THROUGHPUT_UPGRADE',
      current_limit: 'TIER_UNLIMITED',
      max_daily_conversations_per_business: 'TIER_2K',
    }),
    APP_SECRET,
  )
  expect(res.statusCode, res.body).toBe(200)
  expect(res.json()).toEqual({ received: true })
  expect(await rateOf(sender.id)).toBe(1000)
  expect(await rateOf(other.id)).toBe(80)
  expect(await publishedSoFar()).toEqual([sender.id])
  expect(app.logs.text()).toContain('sender throughput raised by the platform')

  // Meta redelivers: a second upgrade changes nothing and tells no one.
  await postPlatformWebhook(
    app,
    qualityUpdate({ display_phone_number: '15550783881', event: 'THROUGHPUT_UPGRADE' }),
    APP_SECRET,
  )
  expect(await publishedSoFar()).toEqual([])
})

it('matches a number written with punctuation, and a phone_number_id when one is given', async () => {
  const sender = await create('15550783882')
  const res = await postPlatformWebhook(
    app,
    qualityUpdate({ display_phone_number: '+1 555-078-3882', event: 'THROUGHPUT_UPGRADE' }),
    APP_SECRET,
  )
  expect(res.statusCode).toBe(200)
  expect(await rateOf(sender.id)).toBe(1000)

  const byId = await create('15550783884')
  await postPlatformWebhook(
    app,
    qualityUpdate({
      display_phone_number: '15559999999',
      event: 'THROUGHPUT_UPGRADE',
      metadata: { phone_number_id: byId.phoneNumberId },
    }),
    APP_SECRET,
  )
  expect(await rateOf(byId.id)).toBe(1000)
})

it('acknowledges other events, unknown numbers and malformed values with 200, changing no rate', async () => {
  const sender = await create('15550783883')
  const values: unknown[] = [
    { display_phone_number: '15550783883', event: 'ONBOARDING', current_limit: 'TIER_250' },
    { display_phone_number: '15550783883', event: 'FLAGGED' },
    { display_phone_number: '19999999999', event: 'THROUGHPUT_UPGRADE' },
    { display_phone_number: 15550783883, event: 'THROUGHPUT_UPGRADE' },
    { display_phone_number: 'n/a', event: 'THROUGHPUT_UPGRADE' },
    { event: 'THROUGHPUT_UPGRADE' },
    { display_phone_number: '15550783883', event: ['THROUGHPUT_UPGRADE'] },
    { display_phone_number: '15550783883', event: 'THROUGHPUT_UPGRADE', metadata: 'x' },
  ]
  for (const value of values) {
    const res = await postPlatformWebhook(app, qualityUpdate(value), APP_SECRET)
    expect(res.statusCode, JSON.stringify(value)).toBe(200)
  }
  expect(await rateOf(sender.id)).toBe(80)
  // Its health changed twice (its tier, then FLAGGED): announced each time, so every API
  // instance's sender pools and send rules take it at once (docs/sender-pools.md).
  expect(await publishedSoFar()).toEqual([sender.id, sender.id])
  const logs = app.logs.text()
  expect(logs).toContain('throughput upgrade for a number no sender has')
  expect(logs).toContain('whatsapp webhook items skipped')
  // Numbers are logged by their last four digits only.
  expect(logs).not.toContain('19999999999')
})

it('reads the other changes of the same delivery as before', async () => {
  const sender = await create('15550783885')
  const body = qualityUpdate({ display_phone_number: '15550783885', event: 'THROUGHPUT_UPGRADE' })
  body.entry[0]?.changes.push({
    field: 'messages',
    value: {
      metadata: { phone_number_id: '1' },
      statuses: [{ id: 'wamid.unknown', status: 'sent', timestamp: '1' }],
    },
  } as never)
  const res = await postPlatformWebhook(app, body, APP_SECRET)
  expect(res.statusCode).toBe(200)
  expect(await rateOf(sender.id)).toBe(1000)
})
