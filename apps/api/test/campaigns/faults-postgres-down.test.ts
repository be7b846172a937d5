import { setTimeout as sleep } from 'node:timers/promises'
import { migrateDatabase } from '@dispatch/db/migrate'
import {
  type PrivatePostgres,
  privateServerMissing,
  startPrivatePostgres,
  testQueuePrefix,
  testRedisUrl,
} from '@dispatch/testing'
import postgres from 'postgres'
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest'
import type { TestWorld } from '../helpers.ts'
import {
  AUDIENCE,
  appLogs,
  expectCampaignWhole,
  type FaultRig,
  SLOW_SENDER,
  startRig,
  unexpectedErrors,
} from './faults.ts'

/** Postgres stopped this long mid-campaign. */
const DOWN_MS = 10_000

const missing = privateServerMissing('postgres')
if (missing) console.warn(`Postgres outage test skipped: ${missing}`)

describe.skipIf(missing !== undefined)('Postgres down for 10 s mid-campaign', () => {
  let pg: PrivatePostgres
  let world: TestWorld
  let rig: FaultRig
  beforeAll(async () => {
    pg = await startPrivatePostgres()
    // A Postgres cluster of this file's own, migrated; the run's Redis under a prefix of its own.
    const url = new URL(pg.url)
    url.pathname = '/dispatch'
    const admin = postgres(pg.url, { max: 1, onnotice: () => {} })
    await admin.unsafe('create database dispatch')
    await admin.end()
    await migrateDatabase(url.toString())
    const sql = postgres(url.toString(), { max: 2, onnotice: () => {} })
    world = {
      databaseUrl: url.toString(),
      redisUrl: testRedisUrl(),
      queuePrefix: testQueuePrefix(),
      sql,
      close: () => sql.end({ timeout: 5 }),
    }
    rig = await startRig(world, { ratePerSecond: SLOW_SENDER })
  })
  afterAll(async () => {
    await rig?.close()
    await world?.close()
    await pg?.destroy()
  })

  it('Postgres stopped for 10 s mid-campaign: every row sent exactly once, the campaign completes, reads answer 503 meanwhile', async () => {
    onTestFailed(() => console.log(rig.report()))
    await rig.startWorker('worker')
    const campaign = await rig.startCampaign()

    await campaign.untilSent(AUDIENCE / 3)
    const [cursor] = await world.sql<{ fed_through: number }[]>`
      select fed_through from campaigns where id = ${campaign.id}`
    // Rows were left to feed: the feeder has to go on once Postgres is back.
    expect(cursor?.fed_through).toBeLessThan(AUDIENCE + 1)
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
      `campaign, Postgres down ${DOWN_MS / 1000} s: ${AUDIENCE} recipients, ${sentAtStop} sent and rows through line ${cursor?.fed_through} fed before the stop, ${sentWhileDown} while it was down, completed ${seconds} s after it was back, none twice`,
    )
  }, 180_000)
})
