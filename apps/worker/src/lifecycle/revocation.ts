import { API_KEY_INVALIDATION_CHANNEL, KeyRevocationJob, type MessageJob } from '@dispatch/contracts'
import { type DeliveryOutcome, findApiKeyById, listAllSenders, recordDeliveryOutcomes } from '@dispatch/db'
import type { RedisClient } from '@dispatch/runtime/redis'
import { type Job, UnrecoverableError } from 'bullmq'
import Value from 'typebox/value'
import type { WorkerContext } from '../runtime.ts'
import { deliveryOutcome, keyRevokedFields } from '../shared/message-outcome.ts'
import type { RedisEraser } from './erase-redis.ts'

/** How often, a second apart, the sweep looks again for messages being admitted meanwhile. */
const SWEEP_PASSES = 3
const SWEEP_PAUSE_MS = 1000

export interface KeyRevocationReport {
  canceled: number
  /** Held by a worker when the sweep ended: each is canceled at delivery (messages/revoked-keys.ts). */
  inFlight: number
}

/** A revoked key's message as the sweep records it: `canceled`, with its recipient, never sent. */
export const revokedOutcome = (
  job: MessageJob,
  sender: { id: string; phoneNumberId: string },
): DeliveryOutcome =>
  deliveryOutcome(job, { senderId: job.senderId ?? sender.id, platform: sender }, 'canceled', {
    attempts: job.priorAttempts ?? 0,
    ...keyRevokedFields,
  })

/**
 * A revoked key's sweep (queue `key-revocations`, from the outbox row its revocation committed):
 * first every worker process is told (the API's key-change announcement, made again here in case
 * the API died before making it), so each cancels the key's messages it takes from then on; then
 * every queued and scheduled message of the key still in Redis is claimed for a cancel, recorded
 * `canceled` (`KEY_REVOKED`: the view's `cancelReason: "key_revoked"`) and its job removed, on every
 * sender (a key's sender may have changed). A message a worker holds is left to it: it checks the
 * key before sending. Every step can run again, so a retried job finishes what a crashed one began.
 */
export async function runKeyRevocation(
  context: WorkerContext,
  eraser: RedisEraser,
  announcer: RedisClient,
  job: Job,
): Promise<KeyRevocationReport> {
  const { db, sql, config, logger } = context
  if (!Value.Check(KeyRevocationJob, job.data))
    throw new UnrecoverableError('key revocation job does not match its contract')
  const { apiKeyId } = job.data as KeyRevocationJob
  const log = logger.child({ apiKeyId })
  const key = await findApiKeyById(db, apiKeyId)
  if (key?.status !== 'revoked') throw new UnrecoverableError('the key is not revoked')
  await announcer.publish(`${config.QUEUE_PREFIX}:${API_KEY_INVALIDATION_CHANNEL}`, `revocation ${apiKeyId}`)
  const senders = (await listAllSenders(db)).map((s) => ({ id: s.id, phoneNumberId: s.phoneNumberId }))
  const report: KeyRevocationReport = { canceled: 0, inFlight: 0 }
  for (let pass = 1; ; pass++) {
    const swept = await eraser.cancelQueued(
      senders,
      (message) => message.apiKeyId === apiKeyId,
      (outcomes) => recordDeliveryOutcomes(sql, outcomes),
      revokedOutcome,
    )
    report.canceled += swept.canceled.length
    report.inFlight = swept.inFlight
    if (swept.inFlight === 0 || pass === SWEEP_PASSES) break
    await new Promise((resolve) => setTimeout(resolve, SWEEP_PAUSE_MS))
  }
  log.info({ ...report }, 'revoked key swept: its queued and scheduled messages canceled')
  return report
}
