import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, beforeAll, expect, it, onTestFailed, vi } from 'vitest'
import { createWorld, type TestWorld } from '../helpers.ts'
import {
  AUDIENCE,
  appLogs,
  expectCampaignWhole,
  type FaultRig,
  startRig,
  unexpectedErrors,
} from './faults.ts'

/**
 * The feeder's narrow window, made certain: a window stored in Redis whose confirmation never
 * reached Postgres (its feeder died between the two). The confirmations of two windows fail here,
 * one at once (its messages still waiting in Redis when they are stored again), one after 3 s
 * (its messages sent by then); the next turn stores each again under the same ids, `readmitted`.
 */
const dying = vi.hoisted(() => ({
  /** Confirmation calls that fail (by their order), after this many ms. */
  failing: new Map<number, number>([
    [1, 0],
    [3, 3000],
  ]),
  calls: 0,
  /** The last line of each window whose confirmation failed. */
  died: [] as number[],
}))

vi.mock('@dispatch/db', async (importOriginal) => {
  const original = await importOriginal<typeof import('@dispatch/db')>()
  return {
    ...original,
    confirmWindow: async (...args: Parameters<typeof original.confirmWindow>) => {
      const delay = dying.failing.get(dying.calls++)
      if (delay === undefined) return original.confirmWindow(...args)
      await sleep(delay)
      dying.died.push(args[2])
      throw new Error('the feeder died before confirming its window (simulated)')
    },
  }
})

let world: TestWorld
let rig: FaultRig
beforeAll(async () => {
  world = await createWorld()
  rig = await startRig(world)
})
afterAll(async () => {
  await rig?.close()
  await world?.close()
})

it('windows stored but never confirmed are stored again under the same ids, before and after their sends: each sent exactly once', async () => {
  onTestFailed(() => console.log(rig.report()))
  await rig.startWorker('worker')
  const campaign = await rig.startCampaign()

  const twice = await expectCampaignWhole(rig, campaign)
  expect(dying.died).toHaveLength(2)
  // Each failure ended its turn; the next turn stored the window again, and confirmed it.
  const failed = appLogs(rig).filter((line) => line.msg === 'campaign feed failed; trying again next turn')
  expect(failed).toHaveLength(2)
  expect(twice).toEqual([])
  expect(unexpectedErrors(appLogs(rig), [/campaign feed/])).toEqual([])
  console.log(
    `campaign, windows through lines ${dying.died.join(' and ')} stored and not confirmed: ${AUDIENCE} recipients, none twice`,
  )
}, 180_000)
