import type { MessageJob } from '@dispatch/contracts'
import {
  attemptsLeft,
  MESSAGE_JOB_OPTIONS,
  MessageBundleJob,
  type MessageBundleResult,
} from '@dispatch/runtime/message-handoff'
import type { RedisClient } from '@dispatch/runtime/redis'
import { DelayedError, type Job, type Queue, UnrecoverableError, Worker } from 'bullmq'
import { Compile } from 'typebox/compile'
import { type Permits, withPermit } from '../shared/permits.ts'
import { deliverOne, platformBackoff } from './deliver.ts'
import type { DeliveryDeps, DeliveryLane, Disposition } from './delivery/types.ts'
import { fromNewerVersion, NEWER_JOB_DELAY_MS } from './newer-job.ts'

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

const NONE: ReadonlySet<string> = new Set()

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
 * and looks for a platform id before sending anything. A bundle whose number left its pool's
 * rotation (docs/sender-pools.md) hands what it has not sent to the pool mover, which moves what may
 * move to a healthy member: at its start, before each message it would send, and what it held.
 */
export async function deliverBundle(
  job: Job<MessageBundleJob, MessageBundleResult>,
  lane: DeliveryLane,
  deps: BundleDeps,
  token?: string,
): Promise<MessageBundleResult> {
  if (!isBundleJob.Check(job.data)) {
    if (fromNewerVersion(MessageBundleJob, job.data)) {
      deps.logger.warn(
        { jobId: job.id },
        'bundle job carries fields this worker does not know (a newer version wrote it); left for a newer worker',
      )
      await job.moveToDelayed(Date.now() + NEWER_JOB_DELAY_MS, token)
      throw new DelayedError()
    }
    deps.logger.error({ jobId: job.id }, 'bundle job does not match its contract; failed without delivery')
    throw new UnrecoverableError('The job payload does not match the message bundles contract')
  }
  // Taken during a pause: back to the queue unsent, unless its number left its pool's rotation
  // meanwhile (then what may move is handed over first, below).
  const fell = deps.rotation?.leftRotation(lane.senderId) === true
  if (!fell && Date.now() < lane.limitedUntil && (await lane.holdForLimit())) throw Worker.RateLimitError()
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
      if (own[i]?.data.claimedBy === (m.claimedBy ?? bundleId)) settled.add(m.messageId)
    }
    messages = messages.filter((m) => !settled.has(m.messageId))
  }
  /** Whether a message may leave: it came through a pool, and the number left that pool's rotation. */
  const mayMove = (m: MessageJob) =>
    m.senderPoolId !== undefined && deps.rotation?.leftRotation(lane.senderId) === true
  /** Hands these, none sent by this job, to a healthy member if the number left rotation. */
  const handedOver = async (candidates: MessageJob[]): Promise<ReadonlySet<string>> => {
    const movable = candidates.filter(mayMove)
    if (!deps.rotation || movable.length === 0) return NONE
    return deps.rotation.handOver(lane.senderId, movable, bundleId).catch((error) => {
      deps.logger.warn({ err: error, bundleId }, 'bundled messages not handed off a fallen pool number')
      return NONE
    })
  }
  if (fell) {
    // Taken after its number left rotation (rate limited past the tolerance, RED…): what may move
    // goes before anything is sent here; the rest waits out the pause, if any.
    const moved = await handedOver(messages)
    for (const id of moved) settled.add(id)
    messages = messages.filter((m) => !moved.has(m.messageId))
    if (messages.length === 0) return {}
    if (Date.now() < lane.limitedUntil && (await lane.holdForLimit())) {
      if (moved.size > 0) await job.updateProgress({ settled: [...settled] } satisfies BundleProgress)
      throw Worker.RateLimitError()
    }
  }

  // Set once a message meets the pause, so the bundle's later ones are not tried.
  let pausing = false
  const runOne = (message: MessageJob): Promise<Settled> =>
    withPermit(deps.permits, async () => {
      try {
        // The sender was paused meanwhile: the rest waits in the bundle, unsent.
        if (pausing || Date.now() < lane.limitedUntil) return { message, disposition: { kind: 'held' } }
        // Its number left rotation while the bundle went on: moved, its new job sends it.
        if (mayMove(message) && (await handedOver([message])).size > 0)
          return { message, disposition: { kind: 'elsewhere' } }
        const disposition = await deliverOne(
          message,
          {
            claimAs: bundleId,
            // Moved here off a fallen number: the claim is held in its new job's name.
            takesOver: message.claimedBy,
            attemptsMade: 0,
            maxAttempts: attemptsLeft(message),
            rerun,
          },
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
  // Held (refused by the platform, or never tried): none went, so they may move if the number fell.
  const movedHeld = await handedOver(
    outcomes.filter(({ disposition }) => disposition.kind === 'held').map(({ message }) => message),
  )
  for (const outcome of outcomes) {
    if (movedHeld.has(outcome.message.messageId)) outcome.disposition = { kind: 'elsewhere' }
  }

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
  const attemptsSpent = (message.attemptsSpent ?? 0) + spent
  return {
    name: message.message.type,
    data: {
      ...message,
      ...again.held,
      priorAttempts,
      ...(attemptsSpent > 0 ? { attemptsSpent } : {}),
      // The claim's holder: the bundle, or the job it was moved here for.
      claimedBy: message.claimedBy ?? bundleId,
    },
    opts: {
      ...MESSAGE_JOB_OPTIONS,
      jobId: message.messageId,
      attempts: attemptsLeft({ attemptsSpent }),
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
