import { afterAll, beforeAll, expect, it, onTestFailed } from 'vitest'
import { createWorld, type TestWorld } from '../helpers.ts'
import {
  AUDIENCE,
  appLogs,
  expectCampaignWhole,
  type FaultRig,
  startRig,
  unexpectedErrors,
} from './faults.ts'

/** Jobs a worker holds at once: the killed one can have had at most this many sends in flight. */
const CONCURRENCY = 10
/** Short locks, so the killed worker's jobs are retaken within seconds. */
const LOCKS = {
  MESSAGES_LOCK_MS: '4000',
  MESSAGES_STALLED_INTERVAL_MS: '1000',
  MESSAGES_CONCURRENCY: String(CONCURRENCY),
}

let world: TestWorld
let rig: FaultRig
beforeAll(async () => {
  world = await createWorld()
  rig = await startRig(world)
  // Sends take a moment, so the kill finds some in flight.
  rig.fake.latencyMs = 20
})
afterAll(async () => {
  await rig?.close()
  await world?.close()
})

it('a worker SIGKILLed mid-campaign, another started: every row sent, none twice but a send in flight at the kill', async () => {
  onTestFailed(() => console.log(rig.report()))
  const first = await rig.startWorker('worker-1', LOCKS)
  const campaign = await rig.startCampaign()

  await campaign.untilSent(AUDIENCE / 3)
  first.child.kill('SIGKILL')
  await first.exited
  // What was recorded when it died: none of these may go out again.
  const recorded = new Set(
    (
      await world.sql<{ id: string }[]>`
        select id from messages where batch_id = ${campaign.id} and platform_message_id is not null`
    ).map((r) => r.id),
  )
  const sentAtKill = new Set(campaign.sends().map((r) => r.messageId))
  expect(sentAtKill.size).toBeLessThan(AUDIENCE)
  await rig.startWorker('worker-2', LOCKS)

  const twice = await expectCampaignWhole(rig, campaign)
  // The documented window: a send in flight in the killed worker, its platform id not yet in the
  // sent log, is sent again by the worker that retakes its job. Twice at most, at most one a slot.
  expect(twice.length).toBeLessThanOrEqual(CONCURRENCY)
  for (const id of twice) {
    expect(recorded.has(id), `message ${id} was recorded before the kill`).toBe(false)
    expect(sentAtKill.has(id), `message ${id} was in flight at the kill`).toBe(true)
    expect(campaign.sends().filter((r) => r.messageId === id)).toHaveLength(2)
  }
  expect(unexpectedErrors(appLogs(rig))).toEqual([])
  console.log(
    `campaign, worker SIGKILLed: ${AUDIENCE} recipients, ${sentAtKill.size} sent before the kill, ${twice.length} sent twice (in flight at the kill, at most ${CONCURRENCY})`,
  )
}, 180_000)
