import { setTimeout as sleep } from 'node:timers/promises'
import { type PrivatePostgres, privateServerMissing } from '@dispatch/testing'
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

/** Postgres stopped this long mid-campaign. */
const DOWN_MS = 10_000

const missing = privateServerMissing('postgres')
if (missing) console.warn(`Postgres outage test skipped: ${missing}`)

describe.skipIf(missing !== undefined)('Postgres down for 10 s mid-campaign', () => {
  let servers: PrivateWorld
  let pg: PrivatePostgres
  let world: TestWorld
  let rig: FaultRig
  beforeAll(async () => {
    // A Postgres cluster of this file's own, migrated; the run's Redis under a prefix of its own.
    servers = await startPrivateWorld({ postgres: true })
    world = servers.world
    pg = servers.pg as PrivatePostgres
    rig = await startRig(world, { ratePerSecond: SLOW_SENDER })
  })
  afterAll(async () => {
    await rig?.close()
    await servers?.close()
  })

  it('Postgres stopped for 10 s mid-campaign: every row sent exactly once, the campaign completes, reads answer 503 meanwhile', async () => {
    onTestFailed(() => console.log(rig.report()))
    await rig.startWorker('worker')
    const campaign = await rig.startCampaign()

    const midway = await campaign.untilMidway()
    // Rows were left to feed: the feeder has to go on once Postgres is back.
    expect(midway.fedThrough).toBeLessThan(AUDIENCE + 1)
    await pg.stop()
    const sentAtStop = campaign.sends().length
    await sleep(DOWN_MS / 2)
    const read = await rig.app.inject({
      method: 'GET',
      url: `/api/third-party/campaigns/${campaign.id}`,
      headers: { 'x-api-key': rig.key.key },
    })
    expect(read.statusCode, read.body).toBe(503)
    await sleep(DOWN_MS / 2)
    const sentWhileDown = campaign.sends().length - sentAtStop
    await pg.start()
    const back = Date.now()

    const twice = await expectCampaignWhole(rig, campaign)
    const seconds = ((Date.now() - back) / 1000).toFixed(1)
    expect(twice).toEqual([])
    expect(unexpectedErrors(appLogs(rig), [/campaign feed/])).toEqual([])
    console.log(
      `campaign, Postgres down ${DOWN_MS / 1000} s: ${AUDIENCE} recipients, ${sentAtStop} sent and rows through line ${midway.fedThrough} fed before the stop, ${sentWhileDown} while it was down, completed ${seconds} s after it was back, none twice`,
    )
  }, 180_000)
})
