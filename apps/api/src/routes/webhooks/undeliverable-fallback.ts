import { QueueNames } from '@dispatch/contracts'
import { type Db, findRecordedDelivery } from '@dispatch/db'
import { queuePrefix } from '@dispatch/runtime'
import { Job, Queue } from 'bullmq'
import type { ApiDeps } from '../../deps.ts'

/** WhatsApp's "message undeliverable" (not on WhatsApp, or unreachable). */
export const UNDELIVERABLE_CODE = '131026'

/**
 * The channel fallback of a message WhatsApp reports undeliverable (131026) in a status webhook
 * (docs/failover.md, "Channel fallback"). A message carrying a fallback has a timer in the
 * `sms-fallback-timers` queue since WhatsApp took it (armed by the worker before its send is
 * recorded, so before any status can move it): `afterSeconds` ahead, or a hold. Once the `failed`
 * is committed, the timer is promoted: a worker runs it at once and, finding the message `failed`
 * with 131026, takes the fallback's steps (decided with the message's row locked, `calling`
 * committed before the provider is called). The webhook itself never calls the SMS provider, and
 * holds no SMS text: the timer does. A message without a fallback has no timer: nothing happens.
 */
export class UndeliverableFallbacks {
  readonly #queue: Queue

  constructor(deps: Pick<ApiDeps, 'config' | 'redisQueues' | 'logger'>) {
    const name = QueueNames.smsFallbackTimers
    this.#queue = new Queue(name, { connection: deps.redisQueues, prefix: queuePrefix(deps.config, name) })
    this.#queue.on('error', (error) => deps.logger.warn({ err: error }, 'sms fallback timers queue error'))
  }

  /** Runs the message's fallback timer now: true when one was waiting (a duplicate status finds none). */
  async promote(messageId: string): Promise<boolean> {
    const job = await Job.fromId(this.#queue, messageId)
    if (!job || !(await job.isDelayed())) return false
    try {
      await job.promote()
      return true
    } catch (error) {
      // Promoted or run meanwhile (two deliveries of the status at once): it runs once either way.
      if (await job.isDelayed()) throw error
      return false
    }
  }

  close(): Promise<void> {
    return this.#queue.close()
  }
}

/** A duplicate 131026 status (it moved nothing): the message it names, when it is recorded so. */
export async function recordedUndeliverable(
  db: Db,
  messageId: string | undefined,
): Promise<string | undefined> {
  if (!messageId) return undefined
  const recorded = await findRecordedDelivery(db, messageId)
  return recorded?.status === 'failed' && recorded.lastErrorCode === UNDELIVERABLE_CODE
    ? messageId
    : undefined
}
