import {
  SENDER_CHANGES_CHANNEL,
  SENDER_POOL_CHANGES_CHANNEL,
  SENDER_RATE_LIMITS_CHANNEL,
} from '@dispatch/contracts'
import { type Db, loadPoolMembers, type PoolMemberHealthRow } from '@dispatch/db'
import type { RedisClient } from '@dispatch/runtime/redis'
import type { Log } from '../log.ts'
import { Refresher } from '../refresher.ts'
import { type ChoiceMember, memberHash } from './choose.ts'
import { exclusionOf, type HealthRules, type MemberHealth } from './health.ts'

/** A member as the send path holds it: the choice's fields, its number, and its health. */
export interface PoolMember extends ChoiceMember {
  hash: number
  phoneNumberId: string
  health: MemberHealth
}

/** A pool as the send path holds it: its members in order. */
export interface LoadedPool {
  id: string
  members: PoolMember[]
  /**
   * Its members' numbers, each once: whose opt-outs block its keys' sends (docs/consent.md, "Sender
   * pools"). One list per load, so the send checks keep what they work out of it by its identity.
   */
  numbers: readonly string[]
}

/**
 * Every sender pool with its members' health, held in this process so a pooled send chooses its
 * number without Postgres (as `SendRulesCache` holds the senders' rules). Loaded at start, again
 * at once when a sender or a pool change is announced (`watchSenderPools`: an admin's edit, a
 * quality or account webhook, a refused token), and every `refreshMs` in case one was missed. A
 * member's exclusion is judged when it is loaded, and again when its 130429 pause is learned
 * (`rateLimited`). A pool this process does not know (Postgres down at start) sends through the
 * key's own sender, as before pools.
 */
export class SenderPoolCache {
  readonly #db: Db
  readonly #log: Log
  readonly #rules: HealthRules
  readonly #now: () => number
  #pools = new Map<string, LoadedPool>()
  /** The pools each sender is a member of. */
  #poolsOfSender = new Map<string, LoadedPool[]>()
  /** Each member number's sender (a number is one sender's). */
  #senderOfNumber = new Map<string, string>()
  /** The 130429 pauses learned (sender → its streak's start and its pause's end, ms). */
  readonly #limited = new Map<string, { since: number; until: number; timer: NodeJS.Timeout }>()
  #loading: Promise<void> | undefined
  #again = false
  readonly #refresher = new Refresher(() => this.refresh())

  constructor(db: Db, log: Log, rules: HealthRules, now: () => number = Date.now) {
    this.#db = db
    this.#log = log
    this.#rules = rules
    this.#now = now
  }

  get(poolId: string): LoadedPool | undefined {
    return this.#pools.get(poolId)
  }

  /** The pools `senderId` is a member of (none: an empty list). */
  poolsOf(senderId: string): readonly LoadedPool[] {
    return this.#poolsOfSender.get(senderId) ?? []
  }

  /** The sender of a pool member's business number, or undefined (no pool has it). */
  memberOfNumber(phoneNumberId: string): string | undefined {
    return this.#senderOfNumber.get(phoneNumberId)
  }

  /** The health rules (the 130429 tolerance) members are judged by. */
  get rules(): HealthRules {
    return this.#rules
  }

  /** Loads every pool (waiting at most `bootWaitMs`), then again every `refreshMs`. Never throws. */
  start(refreshMs: number, bootWaitMs = 5000): Promise<void> {
    return this.#refresher.start(refreshMs, bootWaitMs)
  }

  /** Reloads every pool now; calls made while a load runs coalesce into one more load after it. */
  refresh(): Promise<void> {
    if (this.#loading) {
      this.#again = true
      return this.#loading
    }
    this.#loading = (async () => {
      try {
        do {
          this.#again = false
          this.#install(await loadPoolMembers(this.#db))
        } while (this.#again)
      } catch (error) {
        this.#log.warn({ err: error }, 'sender pools not reloaded (Postgres); the last known stay in force')
      } finally {
        this.#loading = undefined
      }
    })()
    return this.#loading
  }

  #install(rows: PoolMemberHealthRow[]) {
    const now = this.#now()
    const pools = new Map<string, LoadedPool>()
    const ofSender = new Map<string, LoadedPool[]>()
    const ofNumber = new Map<string, string>()
    for (const row of rows) {
      ofNumber.set(row.phoneNumberId, row.senderId)
      let pool = pools.get(row.poolId)
      if (!pool) {
        pool = { id: row.poolId, members: [], numbers: [] }
        pools.set(row.poolId, pool)
      }
      const health: MemberHealth = {
        state: row.state,
        accountStatus: row.accountStatus,
        qualityRating: row.qualityRating,
        rateLimitedUntil: this.#limited.get(row.senderId)?.until,
        rateLimitedSince: this.#limited.get(row.senderId)?.since,
      }
      pool.members.push({
        senderId: row.senderId,
        weight: row.weight,
        hash: memberHash(row.senderId),
        phoneNumberId: row.phoneNumberId,
        health,
        excluded: exclusionOf(health, this.#rules, now),
      })
      if (!pool.numbers.includes(row.phoneNumberId)) (pool.numbers as string[]).push(row.phoneNumberId)
      const list = ofSender.get(row.senderId)
      if (list) list.push(pool)
      else ofSender.set(row.senderId, [pool])
    }
    this.#pools = pools
    this.#poolsOfSender = ofSender
    this.#senderOfNumber = ofNumber
  }

  /**
   * A member's 130429 pause as a worker announced it (its streak's start, its end; ms): its
   * exclusion is judged again in every pool it is in, now and when the pause ends.
   */
  rateLimited(senderId: string, since: number, until: number): void {
    const known = this.#limited.get(senderId)
    if (known) clearTimeout(known.timer)
    this.#limited.delete(senderId)
    const left = until - this.#now()
    if (left > 0) {
      const timer = setTimeout(() => {
        if (this.#limited.get(senderId)?.timer !== timer) return
        this.#limited.delete(senderId)
        this.#judgeAgain(senderId)
      }, left + 1)
      timer.unref()
      this.#limited.set(senderId, { since, until, timer })
    }
    this.#judgeAgain(senderId)
  }

  #judgeAgain(senderId: string) {
    const now = this.#now()
    const limited = this.#limited.get(senderId)
    for (const pool of this.poolsOf(senderId)) {
      for (const member of pool.members) {
        if (member.senderId !== senderId) continue
        member.health = {
          ...member.health,
          rateLimitedUntil: limited?.until,
          rateLimitedSince: limited?.since,
        }
        member.excluded = exclusionOf(member.health, this.#rules, now)
      }
    }
  }

  stop(): void {
    this.#refresher.stop()
    for (const { timer } of this.#limited.values()) clearTimeout(timer)
  }
}

/**
 * Keeps the pools current: reloaded the moment a sender (`senders:changed`: its health, its
 * state) or a pool (`sender-pools:changed`) is announced changed, and after the subscriber
 * reconnects; a member's 130429 pauses as workers announce them (`senders:rate-limited`). Answers
 * the function that stops watching.
 */
export async function watchSenderPools(
  pools: SenderPoolCache,
  subscriber: RedisClient,
  prefix: string,
  log: Log,
): Promise<() => void> {
  const channels = new Set(
    [SENDER_CHANGES_CHANNEL, SENDER_POOL_CHANGES_CHANNEL].map((name) => `${prefix}:${name}`),
  )
  const limits = `${prefix}:${SENDER_RATE_LIMITS_CHANNEL}`
  const onMessage = (channel: string, message: string) => {
    if (channels.has(channel)) void pools.refresh()
    else if (channel === limits) {
      const [senderId, since, until] = message.split(' ')
      if (senderId && Number.isFinite(Number(since)) && Number.isFinite(Number(until))) {
        pools.rateLimited(senderId, Number(since), Number(until))
      }
    }
  }
  let connectedBefore = false
  const onReady = () => {
    if (connectedBefore) void pools.refresh()
    connectedBefore = true
  }
  subscriber.on('message', onMessage)
  subscriber.on('ready', onReady)
  await subscriber.subscribe(...channels, limits).catch((error: Error) => {
    log.warn({ err: error }, 'sender pool change channels not subscribed yet; retries on reconnect')
  })
  return () => {
    subscriber.off('message', onMessage)
    subscriber.off('ready', onReady)
  }
}
