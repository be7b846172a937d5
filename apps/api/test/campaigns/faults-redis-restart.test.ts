import { setTimeout as sleep } from 'node:timers/promises'
import { type PrivateRedis, privateServerMissing } from '@dispatch/testing'
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest'
import type { TestWorld } from '../helpers.ts'
import {
  AUDIENCE,
  appLogs,
  expectCampaignWhole,
  type FaultRig,
  type PrivateWorld,
  SLOW_SENDER,
  startPrivateWorld,
  startRig,
  unexpectedErrors,
} from './faults.ts'

/** Redis down this long between its crash and its restart. */
const DOWN_MS = 3000

const missing = privateServerMissing('redis')
if (missing) console.warn(`Redis restart test skipped: ${missing}`)

describe.skipIf(missing !== undefined)('Redis restarted mid-campaign', () => {
  let servers: PrivateWorld
  let redis: PrivateRedis
  let world: TestWorld
  let rig: FaultRig
  beforeAll(async () => {
    // The run's Postgres, a Redis of this file's own (AOF fsynced on every write, as in production).
    servers = await startPrivateWorld({ redis: true })
    world = servers.world
    redis = servers.redis as PrivateRedis
    rig = await startRig(world, { ratePerSecond: SLOW_SENDER })
  })
  afterAll(async () => {
    await rig?.close()
    await servers?.close()
  })

  it('Redis SIGKILLed and started again mid-campaign: every row sent exactly once, the campaign completes', async () => {
    onTestFailed(() => console.log(rig.report()))
    await rig.startWorker('worker')
    const campaign = await rig.startCampaign()

    await campaign.untilMidway()
    await redis.kill()
    const sentAtCrash = campaign.sends().length
    const [cursor] = await world.sql<{ fed_through: number }[]>`
      select fed_through from campaigns where id = ${campaign.id}`
    // Rows were left to feed: the feeder has to go on once Redis is back.
    expect(cursor?.fed_through).toBeLessThan(AUDIENCE + 1)
    await sleep(DOWN_MS)
    await redis.start()

    const twice = await expectCampaignWhole(rig, campaign)
    expect(twice).toEqual([])
    // The feeder's turns failed while Redis was away (logged, tried again), and so did a slice it
    // was storing when Redis died (`could not enqueue batch`: answered 503 to the feeder, which
    // stores the window again under the same ids); no answer was a 500.
    expect(unexpectedErrors(appLogs(rig), [/campaign feed/, /could not enqueue batch/])).toEqual([])
    console.log(
      `campaign, Redis restarted: ${AUDIENCE} recipients, ${sentAtCrash} sent and rows through line ${cursor?.fed_through} fed at the crash, none twice`,
    )
  }, 180_000)
})
