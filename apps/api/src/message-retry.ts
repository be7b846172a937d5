import { DEFAULT_SENDER_ID, MessageJob } from '@dispatch/contracts'
import {
  type FallbackState,
  findApiKeyById,
  findFallbacks,
  findSender,
  type MessageRow,
  type RetryHooks,
  type Sql,
} from '@dispatch/db'
import { messageClaimKey } from '@dispatch/runtime/message-handoff'
import { Compile } from 'typebox/compile'
import type { ApiDeps } from './deps.ts'
import { currentTraceContext } from './trace-context.ts'

const jobIsValid = Compile(MessageJob)

/**
 * Why a message whose channel fallback (docs/fallback.md, "An admin's retry") went, or may have,
 * is not sent on WhatsApp again: the recipient got it by SMS. A fallback that surely sent nothing
 * (`failed`) or was withdrawn does not stand in the way.
 */
const FALLBACK_REFUSALS: Partial<Record<FallbackState, string>> = {
  sent: 'its SMS fallback went: the recipient has it by SMS, and sending it on WhatsApp again would reach them twice',
  unknown:
    'its SMS fallback may have gone (the provider never said): sending it on WhatsApp again could reach the recipient twice',
  calling: 'its SMS fallback is being sent',
  decided: 'its SMS fallback is being sent',
}

/**
 * The job a failed message goes out again with: the same id, key, reference, batch and acceptance
 * time, through the sender it was accepted for, at `normal` priority, valid until `expiresAt`. Its
 * attempts so far travel with it, so the record's count goes on from there.
 */
export function jobFromRecord(row: MessageRow, expiresAt: Date): MessageJob {
  return {
    messageId: row.id,
    apiKeyId: row.apiKeyId,
    acceptedAt: row.acceptedAt.toISOString(),
    senderId: row.senderId ?? DEFAULT_SENDER_ID,
    priority: 'normal',
    ...(row.clientReference === null ? {} : { clientReference: row.clientReference }),
    ...(row.batchId === null ? {} : { batchId: row.batchId }),
    expiresAt: expiresAt.toISOString(),
    priorAttempts: row.attempts,
    message: {
      type: row.type,
      body: { ...(row.payload as object), ...(row.phone === null ? {} : { phone: row.phone }) },
    } as MessageJob['message'],
  }
}

/**
 * The Redis side of an admin's retry, for `retryFailedMessage(s)`: each message's old job is
 * removed from its sender's queue (otherwise adding the same job id again does nothing), its claim
 * is cleared (so it can be claimed, or canceled, again), and it is stored for fair admission as a
 * new send is. `skipped` tells why a message was left `failed`.
 */
export function retryHooks(
  deps: Pick<ApiDeps, 'db' | 'redis' | 'messages' | 'config'>,
  expiresAt: Date,
  /** Whether a message is a marketing template, judged again by its sender's catalog. */
  isMarketing: (senderId: string, message: MessageJob['message']) => boolean = () => false,
) {
  const skipped = new Map<string, string>()
  const hooks: RetryHooks = {
    release: async (rows) => {
      // Read while the retry holds the messages' rows: a fallback decided meanwhile waits for it.
      const fallbacks = await findFallbacks(
        deps.db.$client as Sql,
        rows.map((row) => row.id),
      )
      const senders = new Map<string, boolean>()
      for (const senderId of new Set(rows.map((row) => row.senderId ?? DEFAULT_SENDER_ID))) {
        senders.set(senderId, senderId === DEFAULT_SENDER_ID || Boolean(await findSender(deps.db, senderId)))
      }
      const ready = new Set<string>()
      await Promise.all(
        rows.map(async (row) => {
          const senderId = row.senderId ?? DEFAULT_SENDER_ID
          const fallback = fallbacks.get(row.id)
          const refusal = fallback && FALLBACK_REFUSALS[fallback.state]
          if (refusal) {
            skipped.set(row.id, refusal)
            return
          }
          // WhatsApp's delivered recorded beside `failed` (docs/fallback.md): the recipient has it.
          if (row.deliveredAt !== null) {
            skipped.set(
              row.id,
              'WhatsApp reported it delivered: sending it again would reach the recipient twice',
            )
            return
          }
          if (!senders.get(senderId)) {
            skipped.set(row.id, `its sender ${JSON.stringify(senderId)} no longer exists`)
            return
          }
          if (row.redactedAt !== null) {
            skipped.set(row.id, 'its content was redacted: there is nothing left to send again')
            return
          }
          if (!jobIsValid.Check(jobFromRecord(row, expiresAt))) {
            skipped.set(row.id, 'its stored body is not one the service can send again')
            return
          }
          // 0: a worker still holds the job (it is finishing the failed attempt): not now.
          if ((await deps.messages.queue(senderId).remove(row.id)) === 0) {
            skipped.set(row.id, 'a worker is still finishing its last attempt; retry in a moment')
            return
          }
          ready.add(row.id)
        }),
      )
      return ready
    },
    requeue: async (rows) => {
      if (rows.length === 0) return
      // One DEL per key: on a cluster, the claims sit on different slots.
      await Promise.all(rows.map((row) => deps.redis.del(messageClaimKey(deps.config.QUEUE_PREFIX, row.id))))
      // The retry's delivery continues the admin request's trace, as a send's continues its own. A
      // marketing template is marked as at accept (by its sender's catalog now: a send's own
      // category is not kept), so a marketing opt-out made since cancels it at delivery.
      const traceContext = currentTraceContext()
      // Each key's tenant as it is now, carried as at accept: its tenant's opt-outs cancel the job.
      const keyIds = [...new Set(rows.map((row) => row.apiKeyId))]
      const tenants = new Map(
        await Promise.all(
          keyIds.map(async (id) => [id, (await findApiKeyById(deps.db, id))?.tenantId ?? null] as const),
        ),
      )
      await Promise.all(
        rows.map((row) => {
          const tenantId = tenants.get(row.apiKeyId)
          const job = { ...jobFromRecord(row, expiresAt), ...(tenantId ? { tenantId } : {}) }
          const marketing = isMarketing(job.senderId ?? DEFAULT_SENDER_ID, job.message)
          // Accepted once already: stored past the key's outstanding bound rather than lost.
          return deps.messages.add(
            {
              ...job,
              ...(marketing ? { marketing: true } : {}),
              ...(traceContext ? { traceContext } : {}),
            },
            0,
            { bounded: false },
          )
        }),
      )
    },
  }
  return { hooks, skipped }
}
