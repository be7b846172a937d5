import {
  type MessageJob,
  type PoolExclusionReason,
  recipientOf,
  SENDER_CHANGES_CHANNEL,
  SENDER_RATE_LIMITS_CHANNEL,
} from '@dispatch/contracts'
import { loadPoolMembers, type PoolMemberHealthRow, recordSenderChange, type Sql } from '@dispatch/db'
import {
  type ChoiceMember,
  decodeSticky,
  encodeSticky,
  exclusionOf,
  GONE,
  memberHash,
  poolStickyKey,
  SERVICE_WINDOW_MS,
  spreadByWeight,
  stickyLifeMs,
} from '@dispatch/runtime'
import { evalLuaScript } from '@dispatch/runtime/lua-scripts'
import {
  FAIR_ENQUEUE_SCRIPT,
  fairActiveKey,
  fairBase,
  fairKeys,
  handOverMessageClaim,
  MESSAGE_BUNDLE_JOB_NAME,
  type MessageBundleJob,
} from '@dispatch/runtime/message-handoff'
import type { RedisClient } from '@dispatch/runtime/redis'
import type { Job } from 'bullmq'
import type { WorkerContext } from '../runtime.ts'
import type { RotationWatch } from './delivery/types.ts'
import type { SenderLane } from './lanes.ts'
import { takeWaiting } from './take-waiting.ts'

/**
 * A message of a queued job as it leaves the job: its claim's holder named (the bundle, or a
 * message's own job, `worker`), which its next job takes over, and a message's own job's attempts
 * so far counted, so that moving gives it no more attempts than the maximum (`attemptsSpent`) and
 * its record counts on (`priorAttempts`). A bundle spends no attempt of its messages' own.
 */
function carriedOver(message: MessageJob, job: Job): MessageJob {
  const bundle = job.name === MESSAGE_BUNDLE_JOB_NAME
  const made = bundle ? 0 : job.attemptsMade
  return {
    ...message,
    claimedBy: message.claimedBy ?? (bundle ? (job.id as string) : 'worker'),
    ...(made > 0
      ? {
          priorAttempts: (message.priorAttempts ?? 0) + made,
          attemptsSpent: (message.attemptsSpent ?? 0) + made,
        }
      : {}),
  }
}

/** How often each process looks at the pools' members it serves. */
export const POOL_MOVE_INTERVAL_MS = 1000
/** How far the API's clock (a message's `acceptedAt`) and this process' may differ. */
const CLOCK_MARGIN_MS = 2_000
/** Jobs read per HSCAN page. */
const PAGE = 500
/** The BullMQ states of a job no worker holds: it may be taken out of the queue and moved. */
const UNTAKEN = ['waiting', 'paused', 'prioritized', 'delayed']

interface Destination {
  to: string
  reason: PoolExclusionReason
  target: Member
  stickyKey: string
}

interface Member extends ChoiceMember {
  hash: number
  row: PoolMemberHealthRow
}

/** The pools a sender is out of rotation in: their members' health now, and the sender's own. */
type Fallen = Map<string, { members: Member[]; from: Member }>

/** One message moved: what the record and the event say. */
export interface SenderChange {
  messageId: string
  apiKeyId: string
  acceptedAt: string
  from: string
  to: string
  toPhoneNumberId: string
  reason: PoolExclusionReason
  at: Date
}

/**
 * Moves messages waiting on a pool's number that left rotation to a healthy member
 * (docs/sender-pools.md, "Messages waiting on a fallen number"). Every POOL_MOVE_INTERVAL_MS, and at
 * once when a sender's change or a 130429 streak past the tolerance is announced, for each
 * sender this process serves that is out of rotation in a pool (its row's health, or a 130429
 * streak past POOL_RATE_LIMIT_TOLERANCE_SECONDS as workers announce it), each message of that
 * pool still waiting for admission on it moves, unless its recipient's window with the number is
 * open and the number is not gone, or no healthy member can send it (a template goes only to a
 * member of the same WABA: templates are per WABA). A move takes the message out of the fallen
 * number's lists into its `moving` set (so one process moves it), stores it on the new number as
 * a job read against its record before sending (`readmitted`), then lets it go from `moving`: a
 * process dying between leaves it to the fallen number's admitter, never lost. The move on the
 * message's timeline, the record's sender, the recipient's sticky number and a
 * `message.sender_changed` event follow.
 *
 * It is also the lanes' `RotationWatch` (bundle.ts, deliver.ts): a job a worker holds on a number
 * that left rotation hands it the messages it has not sent (`handOver`), moved under the same rules.
 */
export class PoolMover implements RotationWatch {
  readonly #context: WorkerContext
  readonly #redis: RedisClient
  readonly #lanes: () => Iterable<SenderLane>
  readonly #limited = new Map<string, { since: number; until: number }>()
  /** The pools' members as the last read found them: by pool, and by sender. */
  #byPool = new Map<string, PoolMemberHealthRow[]>()
  #bySender = new Map<string, PoolMemberHealthRow[]>()
  /** Each pool's numbers (phone number ids, in order), as the last read found them. */
  #numbers = new Map<string, readonly string[]>()
  /** The read of the pools under way (one at a time): when it started, and its end. */
  #reading: { startedAt: number; done: Promise<void> } | undefined
  /** When the last read that succeeded started, and when the last one failed (ms; 0: none yet). */
  #readStartedAt = 0
  #failedAt = 0
  #failureLogged = 0
  #subscriber: RedisClient | undefined
  #timer: NodeJS.Timeout | undefined
  #running: Promise<void> | undefined
  #stopped = false

  constructor(context: WorkerContext, redis: RedisClient, lanes: () => Iterable<SenderLane>) {
    this.#context = context
    this.#redis = redis
    this.#lanes = lanes
  }

  start(): void {
    const { config, logger } = this.#context
    const limits = `${config.QUEUE_PREFIX}:${SENDER_RATE_LIMITS_CHANNEL}`
    const changes = `${config.QUEUE_PREFIX}:${SENDER_CHANGES_CHANNEL}`
    const subscriber = this.#context.redis('pool-mover', { blocking: true })
    this.#subscriber = subscriber
    subscriber.on('message', (from: string, message: string) => {
      if (from === changes) {
        // A sender's health changed: looked at now, not at the next tick.
        this.#kick()
        return
      }
      if (from !== limits) return
      const [senderId, since, until] = message.split(' ')
      if (senderId && Number.isFinite(Number(since)) && Number.isFinite(Number(until))) {
        this.rateLimited(senderId, Number(since), Number(until))
      }
    })
    subscriber.subscribe(limits, changes).catch((error: Error) => {
      logger.warn({ err: error }, 'pool mover channels not subscribed yet; retries on reconnect')
    })
    // Read at once: delivery asks for pooled messages' numbers (`poolNumbers`) before the first sweep.
    void this.#read().catch(() => {})
    this.#timer = setTimeout(() => this.#loop(), POOL_MOVE_INTERVAL_MS)
  }

  /**
   * A pool's numbers as this process last read them, whose opt-outs stop a pooled message at
   * delivery (docs/consent.md, "Sender pools"): at no round trip once read. A pool not known yet
   * (this process just started, or the pool is newer than its last read) is read first, by a read
   * that starts after the message was accepted (one for every message asking meanwhile). Undefined,
   * the message's own number's opt-outs alone: a pool such a read did not find (deleted since), or
   * pools Postgres did not answer for in the last interval.
   */
  poolNumbers(
    poolId: string,
    acceptedAt: number,
  ): readonly string[] | Promise<readonly string[] | undefined> | undefined {
    const known = this.#numbers.get(poolId)
    if (known !== undefined) return known
    if (this.#readStartedAt > acceptedAt + CLOCK_MARGIN_MS) return undefined
    if (Date.now() - this.#failedAt < POOL_MOVE_INTERVAL_MS) return undefined
    return this.#readSince(acceptedAt).then(
      () => this.#numbers.get(poolId),
      (error) => {
        if (this.#failureLogged !== this.#failedAt) {
          this.#failureLogged = this.#failedAt
          this.#context.logger.warn(
            { err: error },
            "pools not read: pooled messages check their own number's opt-outs",
          )
        }
        return undefined
      },
    )
  }

  /** A read of the pools that started after `at` (ms): the one under way if so, else the next. */
  async #readSince(at: number): Promise<void> {
    const reading = this.#reading
    if (reading && reading.startedAt > at) return reading.done
    if (reading) await reading.done.catch(() => {})
    return this.#read()
  }

  /** Reads every pool's members (one read at a time: a caller meanwhile shares it). */
  #read(): Promise<void> {
    if (this.#reading) return this.#reading.done
    const startedAt = Date.now()
    const done = loadPoolMembers(this.#context.db).then(
      (rows) => {
        this.#load(rows)
        this.#readStartedAt = startedAt
        this.#reading = undefined
      },
      (error) => {
        this.#failedAt = Date.now()
        this.#reading = undefined
        throw error
      },
    )
    this.#reading = { startedAt, done }
    return done
  }

  /**
   * A 130429 streak, as a worker announces it (`senders:rate-limited`), this process' own lanes
   * first, before they publish it: their bundles then know at once whether the number fell.
   */
  rateLimited(senderId: string, since: number, until: number): void {
    const known = this.#limited.get(senderId)
    if (known?.since === since && known.until === until) return
    this.#limited.set(senderId, { since, until })
    // Judged again once its streak passes the tolerance.
    const tolerance = this.#context.config.POOL_RATE_LIMIT_TOLERANCE_SECONDS * 1000
    const at = since + tolerance - Date.now()
    if (until - since > tolerance) this.#kick()
    else if (at > 0) setTimeout(() => this.#kick(), at + 1).unref()
  }

  #again = false

  async #loop(): Promise<void> {
    if (this.#stopped) return
    clearTimeout(this.#timer)
    do {
      this.#again = false
      this.#running = this.sweep().then(
        () => {},
        (error) => this.#context.logger.warn({ err: error }, 'pool move sweep failed; trying again'),
      )
      await this.#running
    } while (this.#again && !this.#stopped)
    this.#running = undefined
    if (!this.#stopped) this.#timer = setTimeout(() => this.#loop(), POOL_MOVE_INTERVAL_MS)
  }

  /** A sweep now (once more after the one running, if any). */
  #kick(): void {
    if (this.#running) this.#again = true
    else void this.#loop()
  }

  /** One pass; answers the messages moved. */
  async sweep(now = Date.now()): Promise<SenderChange[]> {
    const served = new Map([...this.#lanes()].map((lane) => [lane.senderId, lane]))
    if (served.size === 0) return []
    await this.#read()
    const moved: SenderChange[] = []
    for (const [senderId, lane] of served) {
      const fallen = this.#fallenFor(senderId, now)
      if (fallen.size === 0) continue
      moved.push(...(await this.#moveFrom(senderId, fallen, now)))
      moved.push(...(await this.#moveQueued(lane, fallen, now)))
    }
    if (moved.length > 0) {
      await this.#record(moved)
      this.#context.logger.info({ moved: moved.length }, 'waiting messages moved off fallen pool numbers')
    }
    return moved
  }

  #load(rows: PoolMemberHealthRow[]): void {
    const byPool = new Map<string, PoolMemberHealthRow[]>()
    const bySender = new Map<string, PoolMemberHealthRow[]>()
    const add = (map: Map<string, PoolMemberHealthRow[]>, id: string, row: PoolMemberHealthRow) => {
      const list = map.get(id)
      if (list) list.push(row)
      else map.set(id, [row])
    }
    for (const row of rows) {
      add(byPool, row.poolId, row)
      add(bySender, row.senderId, row)
    }
    this.#byPool = byPool
    this.#bySender = bySender
    this.#numbers = new Map(
      [...byPool].map(([poolId, members]) => [poolId, members.map((m) => m.phoneNumberId)]),
    )
  }

  /** Why a member is out of rotation now (its row's health, an announced 130429 streak), or null. */
  #exclusion(row: PoolMemberHealthRow, now: number): PoolExclusionReason | null {
    const limited = this.#limited.get(row.senderId)
    return exclusionOf(
      { ...row, rateLimitedSince: limited?.since, rateLimitedUntil: limited?.until },
      { rateLimitToleranceMs: this.#context.config.POOL_RATE_LIMIT_TOLERANCE_SECONDS * 1000 },
      now,
    )
  }

  /** The pools `senderId` is out of rotation in now, with their members' health. */
  #fallenFor(senderId: string, now: number): Fallen {
    const fallen: Fallen = new Map()
    for (const { poolId } of this.#bySender.get(senderId) ?? []) {
      const members = (this.#byPool.get(poolId) ?? []).map((row) => ({
        senderId: row.senderId,
        weight: row.weight,
        excluded: this.#exclusion(row, now),
        hash: memberHash(row.senderId),
        row,
      }))
      const from = members.find((m) => m.senderId === senderId)
      if (from?.excluded) fallen.set(poolId, { members, from })
    }
    return fallen
  }

  /**
   * Whether `senderId` is out of rotation in one of its pools, as this process knows it now (the
   * rows of its last sweep, the 130429 streaks announced since): one Map read for a number in no pool.
   */
  leftRotation(senderId: string, now = Date.now()): boolean {
    const rows = this.#bySender.get(senderId)
    return rows?.some((row) => this.#exclusion(row, now) !== null) === true
  }

  /**
   * Moves messages a job (a bundle, a message's own) holds on a fallen number and has not sent (refused by the platform, or
   * never tried) to a healthy member, under the rules of a waiting one (`#destination`); answers the
   * ids moved. Each is first written to the number's `moving` under its new claim's name, then its
   * claim is renamed from the job's (`holder`) to that name, then it is stored on the new number
   * and leaves `moving`. A process killed before the rename leaves it to the bundle's rerun (the
   * copy in `moving`, handed out again, finds the claim another's and sends nothing); after it, to
   * the admitter, which hands that copy out again (the bundle's rerun finds the claim another's). A
   * claim a cancel holds stays where it is, and the bundle records the cancel.
   */
  async handOver(senderId: string, messages: MessageJob[], holder: string): Promise<Set<string>> {
    const now = Date.now()
    const fallen = this.#fallenFor(senderId, now)
    const handed = new Set<string>()
    if (fallen.size === 0) return handed
    const { config } = this.#context
    const keys = fairKeys(config.QUEUE_PREFIX, senderId)
    // Each message's steps in order; the messages side by side (a bundle's twenty in a few round trips).
    const handing = messages.map(async (message): Promise<SenderChange | undefined> => {
      const move = await this.#destination(message, senderId, fallen, now)
      if (move === undefined) return undefined
      const id = message.messageId
      const claimant = `moved-${move.to}-${now}`
      const next: MessageJob = { ...message, readmitted: true, claimedBy: claimant }
      await this.#redis
        .multi()
        .hset(keys.moving, id, JSON.stringify(next))
        .zadd(keys.movingAt, now, id)
        .exec()
      const from = message.claimedBy === undefined ? [holder] : [holder, message.claimedBy]
      if (!(await handOverMessageClaim(this.#redis, config.QUEUE_PREFIX, message, from, claimant))) {
        await this.#redis.multi().hdel(keys.moving, id).zrem(keys.movingAt, id).exec()
        return undefined
      }
      const change = await this.#place(next, senderId, move)
      handed.add(id)
      // The API finds it on its new number now, not in the bundle.
      await this.#redis.multi().hdel(keys.bundled, id).hdel(keys.moving, id).zrem(keys.movingAt, id).exec()
      return change
    })
    const moved = (await Promise.all(handing)).filter((change) => change !== undefined)
    if (moved.length > 0) {
      await this.#record(moved)
      this.#context.logger.info(
        { moved: moved.length, senderId, jobId: holder },
        'messages a worker held handed off a fallen pool number',
      )
    }
    return handed
  }

  async #moveFrom(senderId: string, fallen: Fallen, now: number): Promise<SenderChange[]> {
    const prefix = this.#context.config.QUEUE_PREFIX
    const keys = fairKeys(prefix, senderId)
    const waiting: MessageJob[] = []
    let cursor = '0'
    do {
      const [next, entries] = await this.#redis.hscan(keys.jobs, cursor, 'COUNT', PAGE)
      for (let i = 1; i < entries.length; i += 2) {
        const job = JSON.parse(entries[i] as string) as MessageJob
        if (job.senderPoolId && fallen.has(job.senderPoolId)) waiting.push(job)
      }
      cursor = next
    } while (cursor !== '0')
    const moved: SenderChange[] = []
    for (const job of waiting) {
      const move = await this.#destination(job, senderId, fallen, now)
      if (move === undefined) continue
      // Stored on the new number before it leaves the fallen one's `moving` (not there: admitted or
      // taken meanwhile).
      await takeWaiting(this.#redis, keys, job.messageId, async (taken) => {
        moved.push(await this.#place(taken, senderId, move))
      })
    }
    return moved
  }

  /**
   * Where a message waiting on a fallen number goes, or nothing when it stays: a recipient in an
   * open window with it stays, unless the number is gone; a template (or a fallback template)
   * goes only to a member of the same WABA (templates are per WABA); the member is the spread's
   * for the recipient over the healthy ones.
   */
  async #destination(
    job: MessageJob,
    senderId: string,
    fallen: Fallen,
    now: number,
  ): Promise<Destination | undefined> {
    const pool = job.senderPoolId ? fallen.get(job.senderPoolId) : undefined
    if (pool === undefined) return undefined
    const { members, from } = pool
    const reason = from.excluded as PoolExclusionReason
    const recipient = recipientOf(job.message.body)
    const stickyKey = poolStickyKey(this.#context.config.QUEUE_PREFIX, job.senderPoolId as string, recipient)
    const sticky = decodeSticky(await this.#redis.get(stickyKey))
    const windowOpen = sticky?.senderId === senderId && sticky.inboundAt + SERVICE_WINDOW_MS > now
    if (windowOpen && !GONE.has(reason)) return undefined
    const template = job.message.type === 'template' || job.fallbackTemplate !== undefined
    const candidates = template ? members.filter((m) => m.row.wabaId === from.row.wabaId) : members
    const to = spreadByWeight(candidates, recipient)
    if (to === undefined || to === senderId) return undefined
    return { to, reason, target: members.find((m) => m.senderId === to) as Member, stickyKey }
  }

  /**
   * Stores a message taken off a fallen number on its new one, as a job read against its record
   * before it is sent (`readmitted`), and sticks its recipient there. The caller then lets it go
   * from the fallen number's `moving`.
   */
  async #place(taken: MessageJob, senderId: string, move: Destination): Promise<SenderChange> {
    const { to, reason, target, stickyKey } = move
    const at = new Date()
    const next: MessageJob = {
      ...taken,
      senderId: to,
      readmitted: true,
      senderChanged: { from: senderId, to, at: at.toISOString(), reason },
    }
    await this.#enqueue(to, next)
    await this.#redis
      .set(
        stickyKey,
        encodeSticky({ senderId: to, inboundAt: 0, writtenAt: at.getTime() }),
        'PX',
        stickyLifeMs(this.#context.config.POOL_STICKY_TTL_DAYS * 86_400_000),
      )
      .catch(() => {})
    return {
      messageId: next.messageId,
      apiKeyId: next.apiKeyId,
      acceptedAt: next.acceptedAt,
      from: senderId,
      to,
      toPhoneNumberId: target.row.phoneNumberId,
      reason,
      at,
    }
  }

  /** Onto its sender's fair-admission lists (due at its `sendAt`, if scheduled). */
  async #enqueue(senderId: string, job: MessageJob): Promise<void> {
    const prefix = this.#context.config.QUEUE_PREFIX
    const due = job.sendAt && Date.parse(job.sendAt) > Date.now() ? Date.parse(job.sendAt) : 0
    const keys = fairKeys(prefix, senderId)
    await evalLuaScript(
      this.#redis,
      FAIR_ENQUEUE_SCRIPT,
      keys.jobs,
      keys.scheduled,
      fairBase(prefix, senderId),
      0,
      Date.now(),
      job.messageId,
      JSON.stringify(job),
      job.priority ?? 'normal',
      job.apiKeyId,
      due,
    )
    await this.#redis.sadd(fairActiveKey(prefix), senderId)
  }

  /**
   * Moves the messages already admitted into a fallen number's queue that no worker holds (a
   * paused, held or rate-limited number's queue keeps them): each job (a message's, or a bundle's)
   * with one that may move is first written to the number's `moving` (so a process dying from here
   * on leaves it to the admitter, read against its record), then removed from the queue, which
   * BullMQ refuses for a job a worker took meanwhile (it stays, and is delivered there: never
   * both). A removed job's messages that move go to their new number; a bundle's others go back to
   * the fallen number's lists, read against their record. Each names the job whose claim its next job
   * takes over, and carries the attempts its own job spent (`carriedOver`). A job that kept a send it
   * could not record (its platform id on the job) stays, and records it when it runs.
   */
  async #moveQueued(lane: SenderLane, fallen: Fallen, now: number): Promise<SenderChange[]> {
    const senderId = lane.senderId
    const keys = fairKeys(this.#context.config.QUEUE_PREFIX, senderId)
    const queue = await lane.queue.get()
    const jobs = (await queue.getJobs(['wait', 'prioritized', 'delayed'], 0, -1)) as Job[]
    const moved: SenderChange[] = []
    for (const job of jobs) {
      if (!job?.id) continue
      const progress = (job.progress ?? {}) as { settled?: string[]; platformMessageId?: string }
      // Sent by an earlier run that could not record it (the id kept on the job): it stays, and its
      // next run records it.
      if (progress.platformMessageId) continue
      const settled = new Set(progress.settled ?? [])
      const bundle = job.name === MESSAGE_BUNDLE_JOB_NAME
      const messages = (
        bundle ? (job.data as MessageBundleJob).messages.filter((m) => !settled.has(m.messageId)) : [job.data]
      ).map((message) => carriedOver(message as MessageJob, job))
      const plans = await Promise.all(
        messages.map(async (message) => ({
          message,
          move: await this.#destination(message, senderId, fallen, now),
        })),
      )
      if (!plans.some((plan) => plan.move !== undefined)) continue
      const ids = messages.map((m) => m.messageId)
      const taking = this.#redis.multi()
      for (const message of messages)
        taking.hset(keys.moving, message.messageId, JSON.stringify({ ...message, readmitted: true }))
      await taking.zadd(keys.movingAt, ...ids.flatMap((id) => [Date.now(), id])).exec()
      const removed = await this.#removeUntaken(job)
      if (!removed) {
        // A worker took it meanwhile: delivered on this number, not moved.
        await this.#redis
          .multi()
          .hdel(keys.moving, ...ids)
          .zrem(keys.movingAt, ...ids)
          .exec()
        continue
      }
      for (const { message, move } of plans) {
        if (move) moved.push(await this.#place(message, senderId, move))
        else await this.#enqueue(senderId, { ...message, readmitted: true })
      }
      // The API finds them on their lists (or a new number's queue) now, not in the bundle's index.
      if (bundle) await this.#redis.hdel(keys.bundled, ...ids)
      await this.#redis
        .multi()
        .hdel(keys.moving, ...ids)
        .zrem(keys.movingAt, ...ids)
        .exec()
    }
    return moved
  }

  /** Takes a job out of its queue if no worker holds it; answers whether it did. */
  async #removeUntaken(job: Job): Promise<boolean> {
    const state = await job.getState()
    if (!UNTAKEN.includes(state)) return false
    try {
      await job.remove()
      return true
    } catch {
      return false // Locked: a worker holds it.
    }
  }

  /**
   * The record of each move, in one transaction: a row on the message's timeline
   * (`message_attempts`, outcome `sender_changed`), whatever its key's endpoints and whether or not
   * the message has its record yet (its view and timelines read it); a listed message's row (a
   * scheduled one, or one between its attempts) names its new sender; and its key's endpoints get
   * `message.sender_changed` (a message not listed yet is recorded with its new sender when it goes;
   * a record keeps the sender it first had).
   */
  async #record(moved: SenderChange[]): Promise<void> {
    const sql = this.#context.db.$client as Sql
    for (const move of moved) {
      const data = {
        messageId: move.messageId,
        senderChanged: { from: move.from, to: move.to, reason: move.reason, at: move.at.toISOString() },
      }
      await sql.begin(async (tx) => {
        await recordSenderChange(tx, move)
        await tx`update messages set sender_id = ${move.to}, sender_phone_number_id = ${move.toPhoneNumberId}
          where id = ${move.messageId} and accepted_at = ${move.acceptedAt}
            and status in ('scheduled', 'queued', 'sending')`
        await tx`select dispatch_emit_webhook_event(${move.apiKeyId}, 'message.sender_changed', ${move.messageId},
          ${JSON.stringify(data)}::jsonb, ${move.at.toISOString()}::timestamptz)`
      })
    }
  }

  async stop(): Promise<void> {
    this.#stopped = true
    clearTimeout(this.#timer)
    await this.#subscriber?.unsubscribe().catch(() => {})
    await this.#running
    // A read delivery asked for ends before the process closes Postgres.
    await this.#reading?.done.catch(() => {})
  }
}
