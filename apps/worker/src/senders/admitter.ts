import {
  ADMIT_MODE,
  bullQueueKeys,
  FAIR_ADMIT_SCRIPT,
  fairActiveKey,
  fairKeys,
  MESSAGE_JOB_OPTIONS,
  type MessageJob,
  PRIORITY_RANK,
} from '@dispatch/contracts'
import type { RedisClient } from '@dispatch/contracts/redis'
import type { WorkerContext } from '../runtime.ts'
import type { SenderLane } from './lanes.ts'

/** Every this many ticks, every sender is looked at, not only those marked active. */
const SWEEP_EVERY = 40
/** A message taken but not confirmed in the queue after this long is handed out again. */
const STALE_MOVE_MS = 10_000
/** The most one tick moves for one sender. */
const MOST_PER_TICK = 1000

type AdmitAnswer = [number, number, number, ...string[]]

/**
 * Tops up each sender's queue from its fair-admission lists (packages/contracts/src/fair-queue.ts):
 * every ADMISSION_INTERVAL_MS, each sender with waiting messages gets up to SENDER_QUEUE_WINDOW_MS of
 * its rate into its queue, one message per key in turn, and no faster than its rate: admission is
 * where a sender's rate is kept (the script's pace), so its queue's workers take jobs unlimited. Several processes may admit for the same
 * sender: the script is atomic and counts what is already queued, so together they never overfill
 * it. A taken message is added to the queue under its id (an add of an id already there does
 * nothing) and only then dropped from `moving`; one taken by a process that died is handed out again.
 */
export class Admitter {
  readonly #context: WorkerContext
  readonly #redis: RedisClient
  readonly #lanes: () => Iterable<SenderLane>
  #timer: NodeJS.Timeout | undefined
  #tick = 0
  #running: Promise<void> | undefined
  #stopped = false

  constructor(context: WorkerContext, redis: RedisClient, lanes: () => Iterable<SenderLane>) {
    this.#context = context
    this.#redis = redis
    this.#lanes = lanes
    redis.defineCommand('dispatchFairAdmit', { numberOfKeys: 8, lua: FAIR_ADMIT_SCRIPT })
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
    this.#timer = setTimeout(loop, 0)
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
    const admitScript = (
      this.#redis as unknown as { dispatchFairAdmit: (...args: (string | number)[]) => Promise<unknown> }
    ).dispatchFairAdmit
    const [workLeft, mode, jumpCount, ...pairs] = (await admitScript.call(
      this.#redis,
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
    const jobs = []
    for (let i = 0; i < pairs.length; i += 2) {
      const id = pairs[i] as string
      const data = JSON.parse(pairs[i + 1] as string) as MessageJob
      const jump = mode === ADMIT_MODE.jump && i / 2 < jumpCount
      ids.push(id)
      jobs.push({
        name: data.message.type,
        data,
        opts: {
          ...MESSAGE_JOB_OPTIONS,
          jobId: id,
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
    // Each lifo add goes to the front: the jumping ones are added last to first, so they keep their order.
    if (mode === ADMIT_MODE.jump) jobs.splice(0, jumpCount, ...jobs.slice(0, jumpCount).reverse())
    await (await lane.queue.get()).addBulk(jobs)
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
