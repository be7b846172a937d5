import { type Service, waitFor } from '@dispatch/testing'
import { afterAll, beforeAll, expect, it, onTestFailed } from 'vitest'
import { createWorld, type TestWorld } from '../helpers.ts'
import {
  AUDIENCE,
  expectCampaignWhole,
  type FaultRig,
  SLOW_SENDER,
  startRig,
  unexpectedErrors,
} from './faults.ts'

let world: TestWorld
let rig: FaultRig
beforeAll(async () => {
  world = await createWorld()
  // A slower sender: the feeder keeps only about a window ahead, so the kill leaves rows not fed.
  rig = await startRig(world, { feeder: 'processes', ratePerSecond: SLOW_SENDER })
})
afterAll(async () => {
  await rig?.close()
  await world?.close()
})

it('the API feeding a campaign SIGKILLed, another instance takes its lease over: every row sent exactly once', async () => {
  onTestFailed(() => console.log(rig.report()))
  await rig.startWorker('worker')
  const apis = await Promise.all([rig.startApi('api-1'), rig.startApi('api-2')])
  const campaign = await rig.startCampaign()
  const leased = (api: Service) => api.logs().some((line) => line.msg === 'campaign lease taken')
  const feeding = await waitFor(() => apis.find(leased), { what: 'an instance to take the lease' })
  const other = apis.find((api) => api !== feeding) as Service

  await campaign.untilMidway()
  feeding.child.kill('SIGKILL')
  await feeding.exited
  const sentAtKill = campaign.sends().length
  const [cursor] = await world.sql<{ fed_through: number; confirmed_through: number }[]>`
    select fed_through, confirmed_through from campaigns where id = ${campaign.id}`
  // Rows were left to feed: the other instance has to take the lease (once it expires) to finish.
  expect(cursor?.fed_through).toBeLessThan(AUDIENCE + 1)

  // Exactly once: each message id reaches the platform once, each recipient gets one request.
  const twice = await expectCampaignWhole(rig, campaign)
  expect(twice).toEqual([])
  expect(leased(other)).toBe(true)
  await other.logged('campaign completed')
  expect(unexpectedErrors(other.logs())).toEqual([])
  console.log(
    `campaign, feeding API SIGKILLed: ${AUDIENCE} recipients, ${sentAtKill} sent and rows through line ${cursor?.fed_through} fed (${cursor?.confirmed_through} confirmed) at the kill, none twice`,
  )
}, 180_000)
