import { setTimeout as sleep } from 'node:timers/promises'
import { waitFor } from '@dispatch/testing'
import { afterAll, beforeAll, expect, it, onTestFailed, vi } from 'vitest'
import { createWorld, type TestWorld } from '../helpers.ts'
import {
  AUDIENCE,
  appLogs,
  expectCampaignWhole,
  type FaultRig,
  startRig,
  unexpectedErrors,
  untilCompleted,
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

it('a recipient opted out between the two stores keeps the message it got, counted once; one opted out before either is skipped', async () => {
  dying.calls = 0
  dying.died = []
  // The first window's confirmation fails once its messages went.
  dying.failing = new Map([[0, 4000]])
  if (!rig.services.some((s) => s.running())) await rig.startWorker('worker')
  const optOut = async (phone: string) => {
    const res = await rig.app.inject({
      method: 'POST',
      url: '/api/third-party/suppressions',
      headers: { 'x-api-key': rig.key.key },
      payload: { phone, reason: 'asked by phone' },
    })
    expect(res.statusCode, res.body).toBe(201)
  }
  const size = 300
  const campaign = await rig.startCampaign(size, (phones) => optOut(phones[0] as string))
  const [before, between] = campaign.phones as [string, string]
  await waitFor(() => campaign.sends().some((r) => r.body.to === between.slice(1)) || undefined, {
    what: 'line 3 sent',
  })
  await optOut(between)

  const done = await untilCompleted(rig, campaign.id)
  expect(dying.died).toEqual([201])
  expect(done.counts).toMatchObject({ sent: size - 1, skipped: 1, pending: 0, held: 0, failed: 0 })
  expect(Object.values(done.counts).reduce((a, b) => a + b, 0)).toBe(size)
  const rows = await world.sql<
    { line: number; state: string; reason: string | null; message_id: string | null }[]
  >`
    select line, state, reason, message_id from campaign_recipients
    where campaign_id = ${campaign.id} and line in (2, 3) order by line`
  expect(rows).toEqual([
    { line: 2, state: 'skipped', reason: 'opted_out', message_id: null },
    { line: 3, state: 'fed', reason: null, message_id: expect.any(String) },
  ])
  const sendsTo = (phone: string) => campaign.sends().filter((r) => r.body.to === phone.slice(1))
  expect(sendsTo(before)).toHaveLength(0)
  expect(sendsTo(between).map((r) => r.messageId)).toEqual([rows[1]?.message_id])
}, 180_000)
