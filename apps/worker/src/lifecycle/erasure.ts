import {
  DEFAULT_SENDER_ID,
  ErasureJob,
  type ErasureReport,
  emptyErasureReport,
  QueueNames,
} from '@dispatch/contracts'
import {
  endErasure,
  eraseRecipientRows,
  findApiKeyById,
  findSenderPool,
  identitiesOf,
  listAllSenders,
  recordDeliveryOutcomes,
  sendersOf,
  startErasure,
} from '@dispatch/db'
import { recipientHasher, suppressionOwner } from '@dispatch/runtime'
import { type Job, UnrecoverableError } from 'bullmq'
import Value from 'typebox/value'
import type { WorkerContext } from '../runtime.ts'
import { jobMatcher, type RedisEraser, recipientMatcher } from './erase-redis.ts'

/** How often, and how long apart, the erasure looks again for messages a worker held meanwhile. */
const SETTLE_PASSES = 5
const SETTLE_MS = 1000

/**
 * Runs one erasure (see docs/data-lifecycle.md): first what is still queued to the
 * recipient is canceled (so nothing more goes to them), and their sent outcomes still in a sender's
 * sent log are written to Postgres; then Postgres (each table's rows lose the recipient and content,
 * opt-outs are kept by hash); then what Redis still holds of those rows (the messages' and events'
 * jobs, the idempotency answers, the keys named after the recipient). A message a worker held
 * meanwhile is recorded by that worker with its recipient: the passes run again, a second apart,
 * until none is held (at most `SETTLE_PASSES` times). Every step can run twice, so a retried job
 * finishes what a crashed one began. Logs name the erasure, never the recipient.
 */
export async function runErasure(
  context: WorkerContext,
  eraser: RedisEraser,
  job: Job,
): Promise<ErasureReport> {
  const { db, sql, config, logger } = context
  if (!Value.Check(ErasureJob, job.data))
    throw new UnrecoverableError('erasure job does not match its contract')
  const data = job.data as ErasureJob
  const log = logger.child({ erasureId: data.erasureId })
  const erasure = await startErasure(db, data.erasureId, new Date())
  if (!erasure) throw new UnrecoverableError('no such erasure')
  const apiKeyId = erasure.apiKeyId
  const key = apiKeyId ? await findApiKeyById(db, apiKeyId) : undefined
  // A key's senders: its own, and its pool's members for a pooled key (its messages went through
  // them, and its tenant's opt-outs there are its to list and lift). None for an admin's erasure.
  const pool = key?.senderPoolId ? await findSenderPool(db, key.senderPoolId) : undefined
  const keySenders = apiKeyId
    ? sendersOf({
        senderId: key?.senderId ?? DEFAULT_SENDER_ID,
        poolSenderIds: pool?.members.map((m) => m.sender.id) ?? [],
      })
    : []
  // Kept on the job before anything is erased: a retry after the pairs are gone still has them.
  const identities = data.identities ?? (await identitiesOf(db, data))
  if (!data.identities) await job.updateData({ ...data, identities })
  const recipients = [...identities.phones, ...identities.userIds]
  const senders = (await listAllSenders(db)).map((s) => ({ id: s.id, phoneNumberId: s.phoneNumberId }))
  const ownSenders = apiKeyId ? senders.filter((s) => keySenders.includes(s.id)) : senders
  const matches = jobMatcher(identities, apiKeyId)
  const isRecipient = recipientMatcher(identities, apiKeyId)
  const report = emptyErasureReport()
  log.info({ scope: apiKeyId ? 'key' : 'all' }, 'erasure started')

  for (let pass = 1; ; pass++) {
    const queued = await eraser.cancelQueued(senders, matches, (outcomes) =>
      recordDeliveryOutcomes(sql, outcomes),
    )
    // After the look for held jobs: an outcome a job logs later is from one counted in flight.
    const logged = await eraser.writeLoggedSent(senders, isRecipient, (outcomes) =>
      recordDeliveryOutcomes(sql, outcomes),
    )
    const rows = await eraseRecipientRows(db, {
      identities,
      apiKeyId,
      senderIds: keySenders,
      // The key's tenant's entries (its tenant as it is now: entries belong to the tenant).
      ...(apiKeyId ? { owner: suppressionOwner({ apiKeyId, tenantId: key?.tenantId ?? null }) } : {}),
      hash: recipientHasher(config),
      at: new Date(),
      canceledIds: queued.canceled,
    })
    const jobs = await eraser.removeMessageJobs(rows.messages)
    report.messagesCanceled += queued.canceled.length
    for (const [name, count] of Object.entries(rows.counts)) report[name as keyof typeof rows.counts] += count
    report.redisJobs += jobs.removed
    report.redisJobs += await eraser.stripWebhookJobs(db, rows.eventIds)
    report.redisJobs += await eraser.removeJobs(QueueNames.consentConfirmations, rows.confirmationJobIds)
    report.inFlight = queued.inFlight + jobs.held + logged
    if (report.inFlight === 0 || pass === SETTLE_PASSES) break
    log.info({ inFlight: report.inFlight, pass }, 'erasure waits for messages a worker holds')
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS))
  }
  report.redisKeys += await eraser.removeRecipientKeys(
    ownSenders.map((s) => s.phoneNumberId),
    recipients,
    apiKeyId === null,
    apiKeyId === null ? 'all' : (key?.senderPoolId ?? null),
  )
  report.idempotencyAnswers += await eraser.rewriteIdempotencyAnswers(apiKeyId, recipients)
  await endErasure(db, data.erasureId, data.outboxId, { report }, new Date())
  log.info({ report }, 'erasure completed')
  return report
}

/** A job's last attempt failed: the erasure is marked failed, and its outbox row loses the recipient. */
export async function failErasure(context: WorkerContext, job: Job, error: Error): Promise<void> {
  const data = job.data as Partial<ErasureJob>
  if (!data.erasureId || !data.outboxId) return
  await endErasure(context.db, data.erasureId, data.outboxId, { error: error.message }, new Date())
}
