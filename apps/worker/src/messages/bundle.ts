import type { MessageJob } from '@dispatch/contracts'
import {
  MESSAGE_JOB_OPTIONS,
  MessageBundleJob,
  type MessageBundleResult,
} from '@dispatch/runtime/message-handoff'
import type { RedisClient } from '@dispatch/runtime/redis'
import { type Job, type Queue, UnrecoverableError, Worker } from 'bullmq'
import { Compile } from 'typebox/compile'
import { type Permits, withPermit } from '../shared/permits.ts'
import { deliverOne, platformBackoff } from './deliver.ts'
import type { DeliveryDeps, DeliveryLane, Disposition } from './delivery/types.ts'

const isBundleJob = Compile(MessageBundleJob)

/** What a bundle keeps on its job when it goes back to the queue: the messages it has settled. */
interface BundleProgress {
  settled?: string[]
}

export interface BundleDeps extends DeliveryDeps {
  /** The sender's queue, where a message that must wait goes on as a job of its own. */
  queue: () => Promise<Queue<MessageJob>>
  /** The platform calls in flight in this process for this sender (MESSAGES_CONCURRENCY). */
  permits: Permits
  /** The sender's bundle index (messageId → bundle id), which the API finds a bundled message by. */
  index: { redis: RedisClient; key: string }
  backoffMs: number
}

type Settled = { message: MessageJob; disposition: Disposition }

/**
 * A bundle's job (message-bundles.ts): its messages delivered together, each as a message's own job
 * delivers it (`deliverOne`), on the sender's platform places. What a message's own job leaves to
 * BullMQ a bundle does itself:
 * - a message to try again later (a failed attempt, the recipient's pair limit) goes on as a job
 *   of its own, under its id, with its attempts so far and the bundle's claim to take over;
 * - a paused sender (a platform rate limit, a refused token) sends the bundle back to the queue,
 *   the messages it settled kept on the job, so its next run sends only the rest.
 * A bundle run again (its process died, or it was sent back) skips what it settled or handed on,
 * and looks for a platform id before sending anything.
 */
export async function deliverBundle(
  job: Job<MessageBundleJob, MessageBundleResult>,
  lane: DeliveryLane,
  deps: BundleDeps,
): Promise<MessageBundleResult> {
  if (!isBundleJob.Check(job.data)) {
    deps.logger.error({ jobId: job.id }, 'bundle job does not match its contract; failed without delivery')
    throw new UnrecoverableError('The job payload does not match the message bundles contract')
  }
  if (Date.now() < lane.limitedUntil && (await lane.holdForLimit())) throw Worker.RateLimitError()
  const bundleId = job.id as string
  const progress = (job.progress ?? {}) as BundleProgress
  const settled = new Set(progress.settled ?? [])
  const rerun = job.attemptsMade > 0 || job.attemptsStarted > 1
  let messages = job.data.messages.filter((m) => !settled.has(m.messageId))
  if (rerun) {
    // Handed on by an earlier run that died before it ended: that job has it now. (A job of the
    // message's own made otherwise, by an admission run again, is settled by the claim instead.)
    const queue = await deps.queue()
    const own = await Promise.all(messages.map((m) => queue.getJob(m.messageId)))
    for (const [i, m] of messages.entries()) {
      if (own[i]?.data.claimedBy === bundleId) settled.add(m.messageId)
    }
    messages = messages.filter((m) => !settled.has(m.messageId))
  }

  // Set once a message meets the pause, so the bundle's later ones are not tried.
  let pausing = false
  const runOne = (message: MessageJob): Promise<Settled> =>
    withPermit(deps.permits, async () => {
      try {
        // The sender was paused meanwhile: the rest waits in the bundle, unsent.
        if (pausing || Date.now() < lane.limitedUntil) return { message, disposition: { kind: 'held' } }
        const disposition = await deliverOne(
          message,
          { claimAs: bundleId, attemptsMade: 0, maxAttempts: MESSAGE_JOB_OPTIONS.attempts, rerun },
          lane,
          deps,
        )
        if (disposition.kind === 'held') pausing = true
        // Its place is given back once its sent outcome is in the log: a process killed any time
        // has at most its places' worth of messages sent and not logged (sent again by the rerun).
        if (disposition.kind === 'done') await disposition.logged?.catch(() => {})
        return { message, disposition }
      } catch (error) {
        // Redis or Postgres failed around this message: it goes on as a job of its own, unspent.
        deps.logger.warn(
          { err: error, messageId: message.messageId },
          'bundled message handed on after an error',
        )
        return { message, disposition: { kind: 'again', error: error as Error, spent: false } }
      }
    })
  const outcomes = await Promise.all(messages.map(runOne))

  const handOn = []
  const done: string[] = []
  const recorded = new Map<string, Promise<void>>()
  for (const { message, disposition } of outcomes) {
    const { messageId } = message
    if (disposition.kind === 'held') continue
    settled.add(messageId)
    if (disposition.kind === 'done' && disposition.recorded) recorded.set(messageId, disposition.recorded)
    else if (disposition.kind === 'again') handOn.push(ownJob(message, bundleId, disposition, deps.backoffMs))
    if (disposition.kind !== 'elsewhere') done.push(messageId)
  }
  // Before the bundle ends: a handed-on message is never only in a finished bundle.
  if (handOn.length > 0) await (await deps.queue()).addBulk(handOn)
  // Any message not tried (the pause met here, or by another job meanwhile) keeps the bundle.
  if (outcomes.some(({ disposition }) => disposition.kind === 'held')) {
    await job.updateProgress({ settled: [...settled] } satisfies BundleProgress)
    throw Worker.RateLimitError()
  }
  forget(deps, done, recorded)
  return {}
}

/** A bundled message that must wait, as a job of its own: its attempts go on from the bundle's. */
function ownJob(
  message: MessageJob,
  bundleId: string,
  again: Extract<Disposition, { kind: 'again' }>,
  backoffMs: number,
) {
  const spent = again.spent ? 1 : 0
  const priorAttempts = (message.priorAttempts ?? 0) + spent
  return {
    name: message.message.type,
    data: { ...message, ...again.held, priorAttempts, claimedBy: bundleId },
    opts: {
      ...MESSAGE_JOB_OPTIONS,
      jobId: message.messageId,
      attempts: Math.max(1, MESSAGE_JOB_OPTIONS.attempts - spent),
      delay: again.delayMs ?? platformBackoff(Math.max(1, spent), backoffMs, again.error),
    },
  }
}

/**
 * Once the bundle's records are in Postgres, where the API finds them first (a sent one's lands a
 * moment after the bundle ends, from the sent log), its messages leave the index. Not awaited. A
 * record not yet written (Postgres down: the sent log's sweep writes it later) keeps its entry,
 * and the API finds the message in the sent log meanwhile. The finished bundle itself is gone at
 * once (`removeOnComplete`): its messages' content does not stay in Redis.
 */
function forget(deps: BundleDeps, ids: string[], recorded: Map<string, Promise<void>>): void {
  const forgetting = async () => {
    const unwritten = new Set<string>()
    await Promise.all([...recorded].map(([id, written]) => written.catch(() => unwritten.add(id))))
    const gone = ids.filter((id) => !unwritten.has(id))
    if (gone.length > 0) await deps.index.redis.hdel(deps.index.key, ...gone)
  }
  forgetting().catch((error) => deps.logger.warn({ err: error }, 'bundle index entries not dropped'))
}
