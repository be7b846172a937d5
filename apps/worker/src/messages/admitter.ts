import { createHash } from 'node:crypto'
import type { MessageJob } from '@dispatch/contracts'
import { bullQueueKeys } from '@dispatch/runtime'
import { defineLuaCommand, type LuaCall } from '@dispatch/runtime/lua-scripts'
import {
  ADMIT_MODE,
  attemptsLeft,
  FAIR_ADMIT_SCRIPT,
  fairActiveKey,
  fairKeys,
  MESSAGE_BUNDLE_JOB_NAME,
  MESSAGE_JOB_OPTIONS,
  type MessageBundleJob,
  messageBundleJobId,
  PRIORITY_RANK,
} from '@dispatch/runtime/message-handoff'
import type { RedisClient } from '@dispatch/runtime/redis'
import type { JobsOptions, Queue } from 'bullmq'
import { type WorkerContext, whenReady } from '../runtime.ts'
import type { SenderLane } from './lanes.ts'

/** Every this many ticks, every sender is looked at, not only those marked active. */
const SWEEP_EVERY = 40
/** A message taken but not confirmed in the queue after this long is handed out again. */
const STALE_MOVE_MS = 10_000
/** The most one tick moves for one sender. */
const MOST_PER_TICK = 1000

type AdmitAnswer = [number, number, number, number, ...string[]]

interface QueueEntry {
  name: string
  data: MessageJob | MessageBundleJob
  opts: JobsOptions & { jobId: string }
}

/**
 * A tick's jobs with runs of messages placed alike (same priority, same jump) put together, up to
 * `size` to a job (message-bundles.ts). A run of one stays a message's own job. A bundle's id is a
 * digest of its messages' ids: the same messages handed out again make the same job (an add of an
 * id already there does nothing); any other overlap is settled by the messages' claims.
 */
export function bundled(jobs: QueueEntry[], size: number): QueueEntry[] {
  if (size <= 1) return jobs
  const placement = (job: QueueEntry) => `${job.opts.lifo === true}:${job.opts.priority ?? 0}`
  const out: QueueEntry[] = []
  for (let start = 0; start < jobs.length; ) {
    const first = jobs[start] as QueueEntry
    let end = start + 1
    while (end < jobs.length && end - start < size && placement(jobs[end] as QueueEntry) === placement(first))
      end++
    if (end - start === 1) out.push(first)
    else {
      const messages = jobs.slice(start, end).map((job) => job.data as MessageJob)
      const digest = createHash('sha256')
        .update(messages.map((m) => m.messageId).join(','))
        .digest('base64url')
        .slice(0, 32)
      const { telemetry, ...opts } = first.opts
      out.push({
        name: MESSAGE_BUNDLE_JOB_NAME,
        data: { messages },
        // Gone once finished: its outcomes are in Postgres or the sent log, and its content need
        // not stay in Redis (the API finds a finished bundle's messages there).
        opts: {
          ...opts,
          // Its own (a message's attempts go with the message: bundle.ts).
          attempts: MESSAGE_JOB_OPTIONS.attempts,
          jobId: messageBundleJobId(digest),
          removeOnComplete: true,
          ...(telemetry ? { telemetry } : {}),
        },
      })
    }
    start = end
  }
  return out
}

/**
 * Tops up each sender's queue from its fair-admission lists (packages/runtime/src/message-handoff/fair-queue.ts):
 * every ADMISSION_INTERVAL_MS, each sender with waiting messages gets up to SENDER_QUEUE_WINDOW_MS of
 * its rate into its queue, one message per key in turn, and no faster than its rate: admission is
 * where a sender's rate is kept (the script's pace), so its queue's workers take jobs unlimited. Several processes may admit for the same
 * sender: the script is atomic and counts what is already queued, so together they never overfill
 * it. A taken message is added to the queue under its id (an add of an id already there does
 * nothing) and only then dropped from `moving`; one taken by a process that died is handed out again.
 * Its connection holds no BullMQ queue: BullMQ defines its 60-odd scripts on the connection it is
 * given, and ioredis copies each onto every pipeline (the MULTI below) made there.
 */
export class Admitter {
  readonly #context: WorkerContext
  readonly #redis: RedisClient
  readonly #admitScript: LuaCall
  readonly #lanes: () => Iterable<SenderLane>
  #timer: NodeJS.Timeout | undefined
  #tick = 0
  #running: Promise<void> | undefined
  #stopped = false

  constructor(context: WorkerContext, redis: RedisClient, lanes: () => Iterable<SenderLane>) {
    this.#context = context
    this.#redis = redis
    this.#lanes = lanes
    this.#admitScript = defineLuaCommand(redis, FAIR_ADMIT_SCRIPT)
  }

  start(): void {
    const interval = this.#context.config.ADMISSION_INTERVAL_MS
    let failures = 0
    const loop = async () => {
      if (this.#stopped) return
      this.#running = this.#round().then(
        () => {
          if (failures > 0) this.#context.logger.info({ failures }, 'admission rounds succeed again')
          failures = 0
        },
        (error) => {
          // A Redis outage fails every round: say so once, then every hundredth, and back off.
          if (failures++ % 100 === 0) {
            this.#context.logger.warn({ err: error, failures }, 'admission round failed; retrying')
          }
        },
      )
      await this.#running
      const wait = failures === 0 ? interval : Math.min(2000, interval * 2 ** Math.min(failures, 10))
      if (!this.#stopped) this.#timer = setTimeout(loop, wait)
    }
    // The first pass once this process's connection is up.
    whenReady(this.#redis, () => {
      if (!this.#stopped) this.#timer = setTimeout(loop, 0)
    })
  }

  async #round(): Promise<void> {
    const prefix = this.#context.config.QUEUE_PREFIX
    const sweep = this.#tick++ % SWEEP_EVERY === 0
    const active = sweep ? undefined : new Set(await this.#redis.smembers(fairActiveKey(prefix)))
    const lanes = [...this.#lanes()].filter((lane) => !active || active.has(lane.senderId))
    await Promise.all(lanes.map((lane) => this.#admitFor(lane)))
  }

  async #admitFor(lane: SenderLane): Promise<void> {
    let workLeft = await this.admit(lane)
    if (workLeft) return
    // Idle: drop it from the active set, then look once more, as an API that added a message after
    // the look above marks the sender active after adding: either that mark or this look sees it.
    const active = fairActiveKey(this.#context.config.QUEUE_PREFIX)
    await this.#redis.srem(active, lane.senderId)
    workLeft = await this.admit(lane)
    if (workLeft) await this.#redis.sadd(active, lane.senderId)
  }

  /** One top-up of one sender's queue; answers whether messages are still waiting for it. */
  async admit(lane: SenderLane): Promise<boolean> {
    const { config } = this.#context
    const keys = fairKeys(config.QUEUE_PREFIX, lane.senderId)
    const queueKeys = bullQueueKeys(config, lane.queueName)
    const target = Math.max(
      1,
      Math.ceil((lane.settings.ratePerSecond * config.SENDER_QUEUE_WINDOW_MS) / 1000),
    )
    const [workLeft, mode, jumpCount, staleCount, ...pairs] = (await this.#admitScript(
      keys.jobs,
      keys.moving,
      keys.movingAt,
      keys.scheduled,
      queueKeys.wait,
      queueKeys.prioritized,
      queueKeys.meta,
      queueKeys.limiter,
      Date.now(),
      target,
      MOST_PER_TICK,
      keys.base,
      STALE_MOVE_MS,
      lane.settings.ratePerSecond,
    )) as AdmitAnswer
    if (pairs.length === 0) return workLeft === 1
    const ids: string[] = []
    const jobs: QueueEntry[] = []
    for (let i = 0; i < pairs.length; i += 2) {
      const id = pairs[i] as string
      const data = JSON.parse(pairs[i + 1] as string) as MessageJob
      // Handed out again (never confirmed): its first job may have sent it and released its claim.
      if (i / 2 < staleCount) data.readmitted = true
      const jump = mode === ADMIT_MODE.jump && i / 2 < jumpCount
      ids.push(id)
      jobs.push({
        name: data.message.type,
        data,
        opts: {
          ...MESSAGE_JOB_OPTIONS,
          jobId: id,
          // A message moved off a fallen pool number keeps only the attempts it had left there.
          ...(data.attemptsSpent ? { attempts: attemptsLeft(data) } : {}),
          // Only when levels mix: a plain add is cheaper and already goes first (ADMIT_MODE).
          ...(mode === ADMIT_MODE.plain
            ? {}
            : jump
              ? { lifo: true }
              : { priority: PRIORITY_RANK[data.priority ?? 'normal'] }),
          // The accepting request's trace: the job's processing span becomes its child.
          ...(data.traceContext ? { telemetry: { metadata: data.traceContext } } : {}),
        },
      })
    }
    const queued = bundled(jobs, config.MESSAGES_BUNDLE_SIZE)
    // Each lifo add goes to the front: the jumping ones are added last to first, so they keep their order.
    const jumping = queued.findIndex((job) => !job.opts.lifo)
    const jumps = jumping === -1 ? queued.length : jumping
    if (jumps > 1) queued.splice(0, jumps, ...queued.slice(0, jumps).reverse())
    // Indexed before they are queued, so the API finds a bundled message in one place or the other
    // (`moving` until the MULTI below), and a bundle that ends at once drops its entries after: on the
    // connection the queue adds on, so Redis runs the two in this order without a round trip between.
    const index = Object.fromEntries(
      queued.flatMap((job) =>
        job.name === MESSAGE_BUNDLE_JOB_NAME
          ? (job.data as MessageBundleJob).messages.map((m) => [m.messageId, job.opts.jobId] as const)
          : [],
      ),
    )
    const queue = await lane.queue.get()
    const indexed =
      Object.keys(index).length > 0 ? (await queue.getBackend().client).hset(keys.bundled, index) : undefined
    const added = queue.addBulk(queued as Parameters<Queue<MessageJob>['addBulk']>[0])
    await Promise.all([indexed, added])
    await this.#redis
      .multi()
      .hdel(keys.moving, ...ids)
      .zrem(keys.movingAt, ...ids)
      .exec()
    return true
  }

  async stop(): Promise<void> {
    this.#stopped = true
    clearTimeout(this.#timer)
    await this.#running
  }
}
