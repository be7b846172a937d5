import { join } from 'node:path'
import {
  type MessageJob,
  type PoolExclusionReason,
  recipientOf,
  SENDER_CHANGES_CHANNEL,
  SENDER_RATE_LIMITS_CHANNEL,
} from '@dispatch/contracts'
import { loadPoolMembers, type PoolMemberHealthRow, type Sql } from '@dispatch/db'
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
} from '@dispatch/runtime'
import { evalLuaScript, luaScripts } from '@dispatch/runtime/lua-scripts'
import { FAIR_ENQUEUE_SCRIPT, fairActiveKey, fairBase, fairKeys } from '@dispatch/runtime/message-handoff'
import type { RedisClient } from '@dispatch/runtime/redis'
import type { WorkerContext } from '../runtime.ts'
import type { SenderLane } from './lanes.ts'

/** Takes a waiting message into `moving`, as held-expiry.ts does (lua/takeWaitingMessage-4.lua). */
const TAKE_WAITING_SCRIPT = luaScripts(join(import.meta.dirname, 'lua'), [
  'takeWaitingMessage',
]).takeWaitingMessage

/** How often each process looks at the pools' members it serves. */
export const POOL_MOVE_INTERVAL_MS = 1000
/** Jobs read per HSCAN page. */
const PAGE = 500

interface Member extends ChoiceMember {
  hash: number
  row: PoolMemberHealthRow
}

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
 * (docs/failover.md, "Messages waiting on a fallen number"). Every POOL_MOVE_INTERVAL_MS, and at
 * once when a sender's change or a 130429 streak past the tolerance is announced, for each
 * sender this process serves that is out of rotation in a pool (its row's health, or a 130429
 * streak past POOL_RATE_LIMIT_TOLERANCE_SECONDS as workers announce it), each message of that
 * pool still waiting for admission on it moves, unless its recipient's window with the number is
 * open and the number is not gone, or no healthy member can send it (a template goes only to a
 * member of the same WABA: templates are per WABA). A move takes the message out of the fallen
 * number's lists into its `moving` set (so one process moves it), stores it on the new number as
 * a job read against its record before sending (`readmitted`), then lets it go from `moving`: a
 * process dying between leaves it to the fallen number's admitter, never lost. The record's
 * sender, the recipient's sticky number and a `message.sender_changed` event follow.
 */
export class PoolMover {
  readonly #context: WorkerContext
  readonly #redis: RedisClient
  readonly #lanes: () => Iterable<SenderLane>
  readonly #limited = new Map<string, { since: number; until: number }>()
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
        this.#limited.set(senderId, { since: Number(since), until: Number(until) })
        // Judged again once its streak passes the tolerance.
        const at = Number(since) + config.POOL_RATE_LIMIT_TOLERANCE_SECONDS * 1000 - Date.now()
        if (Number(until) - Number(since) > config.POOL_RATE_LIMIT_TOLERANCE_SECONDS * 1000) this.#kick()
        else if (at > 0) setTimeout(() => this.#kick(), at + 1).unref()
      }
    })
    subscriber.subscribe(limits, changes).catch((error: Error) => {
      logger.warn({ err: error }, 'pool mover channels not subscribed yet; retries on reconnect')
    })
    this.#timer = setTimeout(() => this.#loop(), POOL_MOVE_INTERVAL_MS)
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
    const served = new Set([...this.#lanes()].map((lane) => lane.senderId))
    if (served.size === 0) return []
    const rows = await loadPoolMembers(this.#context.db)
    const tolerance = { rateLimitToleranceMs: this.#context.config.POOL_RATE_LIMIT_TOLERANCE_SECONDS * 1000 }
    const pools = new Map<string, Member[]>()
    for (const row of rows) {
      const limited = this.#limited.get(row.senderId)
      const excluded = exclusionOf(
        { ...row, rateLimitedSince: limited?.since, rateLimitedUntil: limited?.until },
        tolerance,
        now,
      )
      const list = pools.get(row.poolId) ?? []
      list.push({ senderId: row.senderId, weight: row.weight, excluded, hash: memberHash(row.senderId), row })
      pools.set(row.poolId, list)
    }
    const moved: SenderChange[] = []
    for (const senderId of served) {
      const fallen = new Map<string, { members: Member[]; from: Member }>()
      for (const [poolId, members] of pools) {
        const from = members.find((m) => m.senderId === senderId)
        if (from?.excluded) fallen.set(poolId, { members, from })
      }
      if (fallen.size > 0) moved.push(...(await this.#moveFrom(senderId, fallen, now)))
    }
    if (moved.length > 0) {
      await this.#record(moved)
      this.#context.logger.info({ moved: moved.length }, 'waiting messages moved off fallen pool numbers')
    }
    return moved
  }

  async #moveFrom(
    senderId: string,
    fallen: Map<string, { members: Member[]; from: Member }>,
    now: number,
  ): Promise<SenderChange[]> {
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
      const { members, from } = fallen.get(job.senderPoolId as string) as { members: Member[]; from: Member }
      const reason = from.excluded as PoolExclusionReason
      const recipient = recipientOf(job.message.body)
      const stickyKey = poolStickyKey(prefix, job.senderPoolId as string, recipient)
      const sticky = decodeSticky(await this.#redis.get(stickyKey))
      // A recipient in an open window with it stays, unless the number is gone.
      const windowOpen = sticky?.senderId === senderId && sticky.inboundAt + SERVICE_WINDOW_MS > now
      if (windowOpen && !GONE.has(reason)) continue
      // Templates are per WABA: a template (or a fallback template) moves only within its WABA.
      const template = job.message.type === 'template' || job.fallbackTemplate !== undefined
      const candidates = template ? members.filter((m) => m.row.wabaId === from.row.wabaId) : members
      const to = spreadByWeight(candidates, recipient)
      if (to === undefined || to === senderId) continue
      const target = members.find((m) => m.senderId === to) as Member
      const json = (await evalLuaScript(
        this.#redis,
        TAKE_WAITING_SCRIPT,
        keys.jobs,
        keys.scheduled,
        keys.moving,
        keys.movingAt,
        job.messageId,
        Date.now(),
      )) as string | null
      if (json === null) continue // Admitted or taken meanwhile.
      const at = new Date()
      const taken = JSON.parse(json) as MessageJob
      const next: MessageJob = {
        ...taken,
        senderId: to,
        readmitted: true,
        senderChanged: { from: senderId, to, at: at.toISOString(), reason },
      }
      const due = next.sendAt && Date.parse(next.sendAt) > Date.now() ? Date.parse(next.sendAt) : 0
      const targetKeys = fairKeys(prefix, to)
      await evalLuaScript(
        this.#redis,
        FAIR_ENQUEUE_SCRIPT,
        targetKeys.jobs,
        targetKeys.scheduled,
        fairBase(prefix, to),
        0,
        Date.now(),
        next.messageId,
        JSON.stringify(next),
        next.priority ?? 'normal',
        next.apiKeyId,
        due,
      )
      await this.#redis.sadd(fairActiveKey(prefix), to)
      // Stored on the new number: only now out of the fallen one's `moving`.
      await this.#redis.multi().hdel(keys.moving, job.messageId).zrem(keys.movingAt, job.messageId).exec()
      await this.#redis
        .set(
          stickyKey,
          encodeSticky({ senderId: to, inboundAt: 0 }),
          'PX',
          this.#context.config.POOL_STICKY_TTL_DAYS * 86_400_000,
        )
        .catch(() => {})
      moved.push({
        messageId: next.messageId,
        apiKeyId: next.apiKeyId,
        acceptedAt: next.acceptedAt,
        from: senderId,
        to,
        toPhoneNumberId: target.row.phoneNumberId,
        reason,
        at,
      })
    }
    return moved
  }

  /**
   * The record of each move: a listed message's row (a scheduled one) names its new sender, and its
   * key's endpoints get `message.sender_changed` (a message not listed yet is recorded with its new
   * sender when it goes).
   */
  async #record(moved: SenderChange[]): Promise<void> {
    const sql = this.#context.db.$client as Sql
    for (const move of moved) {
      const data = {
        messageId: move.messageId,
        senderChanged: { from: move.from, to: move.to, reason: move.reason, at: move.at.toISOString() },
      }
      await sql.begin(async (tx) => {
        await tx`update messages set sender_id = ${move.to}, sender_phone_number_id = ${move.toPhoneNumberId}
          where id = ${move.messageId} and accepted_at = ${move.acceptedAt} and status in ('scheduled', 'queued')`
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
  }
}
