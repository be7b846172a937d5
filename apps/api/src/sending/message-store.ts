import { DEFAULT_SENDER_ID, type MessageJob, senderQueueName } from '@dispatch/contracts'
import { type DeliveryOutcome, findLoggedSent } from '@dispatch/db'
import { type KeyLayout, queuePrefix } from '@dispatch/runtime'
import { defineLuaCommand, luaCommandOf } from '@dispatch/runtime/lua-scripts'
import {
  FAIR_ENQUEUE_MAX,
  FAIR_ENQUEUE_SCRIPT,
  fairActiveKey,
  fairBase,
  fairKeys,
  type MessageBundleJob,
} from '@dispatch/runtime/message-handoff'
import { type RedisClient, turnBatched } from '@dispatch/runtime/redis'
import { type Job, Queue } from 'bullmq'
import type { ChainableCommander } from 'ioredis'

interface Pending {
  job: MessageJob
  /** How long it waits: a scheduled message's time until its `sendAt`. */
  delayMs: number
  /** Held to its key's outstanding bound: a new send is; a message accepted before (a retry) is not. */
  bounded: boolean
}

/** A flush's messages by sender, each sender's in the order they came. */
function bySender(group: Pending[]): Map<string, Pending[]> {
  const senders = new Map<string, Pending[]>()
  for (const pending of group) {
    const senderId = pending.job.senderId ?? DEFAULT_SENDER_ID
    const messages = senders.get(senderId)
    if (messages) messages.push(pending)
    else senders.set(senderId, [pending])
  }
  return senders
}

/** A sent outcome waiting in its sender's log, as the finished job it came from. */
function fromOutcome(outcome: DeliveryOutcome): QueuedMessage {
  const data = {
    messageId: outcome.id,
    apiKeyId: outcome.apiKeyId,
    acceptedAt: outcome.acceptedAt.toISOString(),
    message: { type: outcome.type, body: outcome.payload },
    ...(outcome.clientReference ? { clientReference: outcome.clientReference } : {}),
    ...(outcome.batchId ? { batchId: outcome.batchId } : {}),
    ...(outcome.sendAt ? { sendAt: outcome.sendAt.toISOString() } : {}),
    ...(outcome.expiresAt ? { expiresAt: outcome.expiresAt.toISOString() } : {}),
    ...(outcome.senderId ? { senderId: outcome.senderId } : {}),
    ...(outcome.redacted ? { discardContent: true as const } : {}),
  } as MessageJob
  const at = outcome.at.getTime()
  return {
    job: {
      data,
      attemptsMade: 1,
      timestamp: outcome.acceptedAt.getTime(),
      returnvalue: {
        platformMessageId: outcome.platformMessageId,
        ...(outcome.fallbackUsed ? { fallbackUsed: true } : {}),
      },
      finishedOn: at,
      processedOn: at,
    },
    state: 'completed',
  }
}

/** What a status lookup needs of a message still in Redis: a BullMQ job, or one waiting for admission. */
export interface QueuedJob {
  data: MessageJob
  attemptsMade: number
  timestamp: number
  returnvalue?: unknown
  failedReason?: string
  finishedOn?: number
  processedOn?: number
}

export interface QueuedMessage {
  job: QueuedJob
  /** BullMQ's state, or `waiting` / `delayed` while it waits for admission. */
  state: string
}

type FairEnqueue = (
  jobs: string,
  scheduled: string,
  base: string,
  bound: number,
  now: number,
  ...messages: Array<string | number>
) => ChainableCommander

/** What the store is told of a message: `stored`, or `refused` at its key's outstanding bound. */
export type StoreOutcome = 'stored' | 'refused'

/**
 * Where the API keeps accepted messages: in their sender's fair-admission lists
 * (packages/runtime/src/message-handoff/fair-queue.ts), from which workers admit them into the sender's queue.
 * Adds are gathered per turn of the event loop into one pipeline: under load, one round trip for
 * many requests, and a lone request waits only for the current turn. Every request waits for the
 * whole flush, so none is told 202 for a message that is not in Redis. A pipeline is not a
 * transaction: when Redis fails partway, some messages of a flush answered 503 may be stored
 * (see docs/messaging.md).
 */
export class MessageStore {
  readonly #redis: RedisClient
  /** The sender queues' connection (BullMQ's scripts kept off `#redis`: see ApiDeps.redisQueues). */
  readonly #queueConnection: RedisClient
  readonly #layout: KeyLayout
  readonly #prefix: string
  readonly #queues = new Map<string, Queue<MessageJob>>()
  readonly #logger: { warn(context: object, message: string): void } | undefined
  /** A key's most messages waiting on its sender (queued + scheduled); 0: no bound. */
  readonly #outstandingMax: number
  /** Stores what a turn gathered; every add of the turn waits for the whole of it. */
  readonly #add = turnBatched(async (batch: Pending[]) => {
    const refused = await this.#store(batch)
    return batch.map((pending): StoreOutcome => (refused.has(pending) ? 'refused' : 'stored'))
  })

  constructor(
    redis: RedisClient,
    layout: KeyLayout & { MESSAGE_OUTSTANDING_MAX?: number },
    logger?: { warn(context: object, message: string): void },
    queueConnection: RedisClient = redis,
  ) {
    this.#redis = redis
    this.#queueConnection = queueConnection
    this.#layout = layout
    this.#prefix = layout.QUEUE_PREFIX
    this.#logger = logger
    this.#outstandingMax = layout.MESSAGE_OUTSTANDING_MAX ?? 0
    defineLuaCommand(redis, FAIR_ENQUEUE_SCRIPT)
  }

  /**
   * Stores a message, or refuses it when its key already has MESSAGE_OUTSTANDING_MAX messages
   * waiting on its sender: counted by the same script call that stores it, so the bound costs no
   * round trip. A refused message is not in Redis.
   */
  add(job: MessageJob, delayMs = 0, options: { bounded?: boolean } = {}): Promise<StoreOutcome> {
    return this.#add({ job, delayMs, bounded: options.bounded ?? true })
  }

  /** Stores a turn's messages; answers those refused at their key's outstanding bound. */
  async #store(batch: Pending[]): Promise<Set<Pending>> {
    const refused = new Set<Pending>()
    const cluster = this.#redis.isCluster
    const senders = bySender(batch)
    // One pipeline per sender on a cluster, where a pipeline must stay on one node (each sender's
    // keys share its hash tag); one for the whole turn on a single server.
    const pipelines = cluster ? [...senders].map((entry) => [entry]) : [[...senders]]
    const active = fairActiveKey(this.#prefix)
    const now = Date.now()
    await Promise.all(
      pipelines.map(async (group) => {
        const pipeline = this.#redis.pipeline()
        const enqueue = luaCommandOf(pipeline, FAIR_ENQUEUE_SCRIPT) as FairEnqueue
        // One script call per sender (and per FAIR_ENQUEUE_MAX messages): a batch of 100 costs
        // three commands, not three per message.
        const calls: Pending[][] = []
        for (const [senderId, messages] of group) {
          const keys = fairKeys(this.#prefix, senderId)
          const bounded = messages.filter((m) => m.bounded)
          const slices: Array<[Pending[], number]> = []
          for (let i = 0; i < bounded.length; i += FAIR_ENQUEUE_MAX)
            slices.push([bounded.slice(i, i + FAIR_ENQUEUE_MAX), this.#outstandingMax])
          // Messages accepted before (an admin's retry) are stored whatever the count: never lost.
          const unbounded = bounded.length === messages.length ? [] : messages.filter((m) => !m.bounded)
          for (let i = 0; i < unbounded.length; i += FAIR_ENQUEUE_MAX)
            slices.push([unbounded.slice(i, i + FAIR_ENQUEUE_MAX), 0])
          for (const [slice, bound] of slices) {
            const args = slice.flatMap(({ job, delayMs }) => [
              job.messageId,
              JSON.stringify(job),
              job.priority ?? 'normal',
              job.apiKeyId,
              delayMs > 0 ? now + delayMs : 0,
            ])
            const base = fairBase(this.#prefix, senderId)
            enqueue(keys.jobs, keys.scheduled, base, bound, now, ...args)
            calls.push(slice)
          }
        }
        // After the messages: an admitter that sees the sender idle and drops it re-checks after.
        if (!cluster) pipeline.sadd(active, ...senders.keys())
        const results = (await pipeline.exec()) ?? []
        const failed = results.find(([error]) => error)
        const expected = calls.length + (cluster ? 0 : 1)
        if (failed || results.length !== expected) throw failed?.[0] ?? new Error('pipeline cut short')
        for (const [call, slice] of calls.entries()) {
          for (const index of (results[call]?.[1] ?? []) as number[]) refused.add(slice[index] as Pending)
        }
      }),
    )
    // On a cluster the set may sit on another node: marked once the messages are stored.
    if (cluster) await this.#redis.sadd(active, ...senders.keys())
    return refused
  }

  /** The sender's BullMQ queue, for looking up admitted jobs; made again when opening it failed. */
  queue(senderId: string): Queue<MessageJob> {
    const known = this.#queues.get(senderId)
    if (known) return known
    const name = senderQueueName(senderId)
    const queue = new Queue<MessageJob>(name, {
      connection: this.#queueConnection,
      prefix: queuePrefix(this.#layout, name),
    })
    queue.on('error', (error) => this.#logger?.warn({ err: error }, 'messages queue error'))
    this.#queues.set(senderId, queue)
    // Opened while Redis dropped the connection, a BullMQ queue stays broken for good (see
    // ReopeningQueue): forgotten, so the next lookup makes a new one.
    queue.waitUntilReady().catch(() => {
      if (this.#queues.get(senderId) === queue) this.#queues.delete(senderId)
      queue.close().catch(() => {})
    })
    return queue
  }

  /**
   * A message still in Redis, by id: waiting for admission, being admitted, or a job in the
   * sender's queue. Looked for in the order a message moves, so a message moving meanwhile is
   * still found. Throws when Redis cannot be reached.
   */
  async find(senderId: string, messageId: string): Promise<QueuedMessage | undefined> {
    const keys = fairKeys(this.#prefix, senderId)
    const [waiting, due] = await Promise.all([
      this.#redis.hget(keys.jobs, messageId),
      this.#redis.zscore(keys.scheduled, messageId),
    ])
    const admitting = waiting ?? (await this.#redis.hget(keys.moving, messageId))
    if (admitting) {
      const data = JSON.parse(admitting) as MessageJob
      return {
        job: { data, attemptsMade: 0, timestamp: Date.parse(data.acceptedAt) },
        state: waiting && due !== null && Number(due) > Date.now() ? 'delayed' : 'waiting',
      }
    }
    const queue = this.queue(senderId)
    const own = await this.#ownJob(queue, messageId)
    if (own) return own
    const bundleId = await this.#redis.hget(keys.bundled, messageId)
    const inBundle = bundleId ? await this.#fromBundle(queue, bundleId, messageId) : undefined
    // A message's own job is removed as it completes (MESSAGE_JOB_OPTIONS): a sent one waits in
    // the sent log until its row lands, as a finished bundle's messages do.
    const found = inBundle ?? (await this.#fromSentLog(keys.sentLog, messageId))
    if (found) return found
    // Handed on by its bundle between the reads (a retry, a hold): its own job was added before
    // the bundle ended and left the index, so it is there now.
    return this.#ownJob(queue, messageId)
  }

  /** A message's own job, unless it left the message to a bundle (a bundle made again after an admitter died). */
  async #ownJob(queue: Queue<MessageJob>, messageId: string): Promise<QueuedMessage | undefined> {
    const job: Job<MessageJob> | undefined = await queue.getJob(messageId)
    if (!job || (job.returnvalue as { outcome?: string } | null)?.outcome === 'elsewhere') return undefined
    const state = await job.getState()
    // Finished between the two reads: read it again, so its result and attempts match its state.
    const finished = state === 'completed' || state === 'failed'
    return { job: (finished && (await queue.getJob(messageId))) || job, state }
  }

  /**
   * A message of a finished bundle (removed as it ends) whose record is not in Postgres yet: its
   * sent outcome waits in the sender's sent log (the worker's other outcomes are recorded before
   * the bundle ends). The log holds what Postgres has not taken yet: little, but for an outage.
   */
  async #fromSentLog(stream: string, messageId: string): Promise<QueuedMessage | undefined> {
    const outcome = await findLoggedSent(this.#redis, stream, messageId)
    return outcome && fromOutcome(outcome)
  }

  /** A message in a bundle's job (message-bundles.ts), as a job of its own would show it. */
  async #fromBundle(
    queue: Queue<MessageJob>,
    bundleId: string,
    messageId: string,
  ): Promise<QueuedMessage | undefined> {
    const bundle = (await queue.getJob(bundleId)) as Job<MessageBundleJob> | undefined
    const data = bundle?.data.messages?.find((m) => m.messageId === messageId)
    if (!bundle || !data) return undefined
    const bundleState = await bundle.getState()
    // A bundle is removed as it ends; one found finished (failed: its payload refused) answers for
    // none of its messages: being sent, as far as it knows (a recorded one is found in Postgres).
    const state = bundleState === 'completed' || bundleState === 'failed' ? 'active' : bundleState
    return {
      job: {
        data,
        attemptsMade: 0,
        timestamp: bundle.timestamp,
        ...(bundle.processedOn ? { processedOn: bundle.processedOn } : {}),
      },
      state,
    }
  }

  /**
   * Makes a scheduled message due at once (a cancel: the worker then records it without waiting
   * for its time). Nothing happens to a message that is not scheduled.
   */
  async promote(senderId: string, messageId: string): Promise<void> {
    await this.#redis.zadd(fairKeys(this.#prefix, senderId).scheduled, 'XX', 0, messageId)
    // A scheduled job queued before fair admission existed waits in the queue as a delayed job.
    const job = await this.queue(senderId).getJob(messageId)
    if (job && (await job.isDelayed())) await job.promote()
  }

  async close(): Promise<void> {
    await Promise.all([...this.#queues.values()].map((q) => q.close().catch(() => {})))
  }
}
