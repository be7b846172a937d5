import { CAMPAIGN_CANCELS_CHANNEL, CampaignCancelJob, type MessageJob } from '@dispatch/contracts'
import { type DeliveryOutcome, findCampaign, listAllSenders, recordDeliveryOutcomes } from '@dispatch/db'
import type { RedisClient } from '@dispatch/runtime/redis'
import { type Job, UnrecoverableError } from 'bullmq'
import Value from 'typebox/value'
import type { WorkerContext } from '../runtime.ts'
import { campaignCanceledFields, deliveryOutcome } from '../shared/message-outcome.ts'
import type { RedisEraser } from './erase-redis.ts'

/** How often, a second apart, the sweep looks again for messages being admitted meanwhile. */
const SWEEP_PASSES = 3
const SWEEP_PAUSE_MS = 1000

export interface CampaignCancelReport {
  canceled: number
  /**
   * Held by a worker when the sweep ended (being sent, waiting for a retry or for room under the
   * messaging limit): one not sent yet is canceled at delivery (messages/canceled-campaigns.ts).
   */
  inFlight: number
}

/** A canceled campaign's message as the sweep records it: `canceled`, with its recipient, never sent. */
export const campaignCanceledOutcome = (
  job: MessageJob,
  sender: { id: string; phoneNumberId: string },
): DeliveryOutcome =>
  deliveryOutcome(job, { senderId: job.senderId ?? sender.id, platform: sender }, 'canceled', {
    attempts: job.priorAttempts ?? 0,
    ...campaignCanceledFields,
  })

/**
 * A canceled campaign's sweep (queue `campaign-cancels`, from the outbox row its cancel committed).
 * The cancel's transaction already canceled the rows not fed, and the feeder, which locks the
 * campaign's row to feed a window, feeds none after it. What remains is the messages fed before:
 * first every messages worker is told (they cancel the campaign's messages they take from then on:
 * one held for the messaging limit or waiting for a retry keeps its claim, and one a feeder stored
 * after this sweep passed is met there); then every queued and scheduled message of the campaign
 * (its `batchId`, of its key) still in Redis on its sender is claimed for a cancel, recorded
 * `canceled` (`CAMPAIGN_CANCELED`: the view's `cancelReason: "campaign_canceled"`) and its job
 * removed. One a worker is sending goes out (the in-flight window); none is sent twice, the claim
 * settling each race. Every step can run again, so a retried job finishes what a crashed one began.
 */
export async function runCampaignCancel(
  context: WorkerContext,
  eraser: RedisEraser,
  announcer: RedisClient,
  job: Job,
): Promise<CampaignCancelReport> {
  const { db, sql, config, logger } = context
  if (!Value.Check(CampaignCancelJob, job.data))
    throw new UnrecoverableError('campaign cancel job does not match its contract')
  const { campaignId } = job.data as CampaignCancelJob
  const log = logger.child({ campaignId })
  const campaign = await findCampaign(db, campaignId)
  if (campaign?.status !== 'canceled') throw new UnrecoverableError('the campaign is not canceled')
  await announcer.publish(`${config.QUEUE_PREFIX}:${CAMPAIGN_CANCELS_CHANNEL}`, campaignId)
  const all = (await listAllSenders(db)).map((s) => ({ id: s.id, phoneNumberId: s.phoneNumberId }))
  // Its messages wait on its own sender's queue; were that sender removed since, every one is looked at.
  const own = all.filter((s) => s.id === campaign.senderId)
  const senders = own.length > 0 ? own : all
  const report: CampaignCancelReport = { canceled: 0, inFlight: 0 }
  for (let pass = 1; ; pass++) {
    const swept = await eraser.cancelQueued(
      senders,
      (message) => message.batchId === campaignId && message.apiKeyId === campaign.apiKeyId,
      (outcomes) => recordDeliveryOutcomes(sql, outcomes),
      campaignCanceledOutcome,
    )
    report.canceled += swept.canceled.length
    report.inFlight = swept.inFlight
    if (swept.inFlight === 0 || pass === SWEEP_PASSES) break
    await new Promise((resolve) => setTimeout(resolve, SWEEP_PAUSE_MS))
  }
  log.info({ ...report }, 'canceled campaign swept: its queued and scheduled messages canceled')
  return report
}
