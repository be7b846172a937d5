import { join } from 'node:path'
import {
  decodeSticky,
  encodeSticky,
  poolStickyKey,
  type StickyRecord,
  stickyAging,
  stickyLifeMs,
} from '@dispatch/runtime'
import { defineLuaCommand, type LuaCall, luaScripts } from '@dispatch/runtime/lua-scripts'
import { type RedisClient, turnBatched, turnBatchedGet } from '@dispatch/runtime/redis'

const SET_RECORDS = luaScripts(join(import.meta.dirname, 'lua'), ['setStickyRecords']).setStickyRecords

const unread = () => null

/** A record to write: the recipient now sticks to `senderId` (inbound time 0 unless they wrote to it). */
export interface StickyWrite extends StickyRecord {
  poolId: string
  recipient: string
}

/**
 * The pools' sticky records in Redis (packages/runtime/src/pool-sticky.ts for the layout): read for
 * every pooled send, every read of a turn of the event loop in one MGET (a GET each on a Cluster);
 * written only when a recipient's number changes, they reply, or a send finds it
 * POOL_STICKY_TTL_DAYS old.
 */
export class StickyStore {
  readonly #redis: RedisClient
  readonly #prefix: string
  readonly #ttlMs: number
  /** A record's life from its write (`stickyLifeMs`). */
  readonly #lifeMs: number
  readonly #get: (key: string) => Promise<string | null>
  readonly #setRecords: LuaCall | undefined

  constructor(
    redis: RedisClient,
    prefix: string,
    ttlMs: number,
    /** The turn's batched reads, shared with the send checks' (one MGET for both). */
    read: (key: string) => Promise<string | null> = turnBatchedGet(redis),
  ) {
    this.#redis = redis
    this.#prefix = prefix
    this.#ttlMs = ttlMs
    this.#lifeMs = stickyLifeMs(ttlMs)
    this.#get = read
    this.#setRecords = redis.isCluster ? undefined : defineLuaCommand(redis, SET_RECORDS)
  }

  /** The recipient's record in the pool, or undefined (none, or expired). Rejects when Redis fails. */
  read(poolId: string, recipient: string, _now?: number): Promise<StickyRecord | undefined> {
    return this.#get(poolStickyKey(this.#prefix, poolId, recipient)).then(decodeSticky)
  }

  /** The same read started early for a single send: never rejects (null when Redis failed). */
  prefetch(poolId: string, recipient: string): Promise<StickyRecord | undefined | null> {
    return this.#get(poolStickyKey(this.#prefix, poolId, recipient)).then(decodeSticky, unread)
  }

  /** Whether a send that keeps `record` writes it again: `ttlMs` old or more (`stickyAging`). */
  aging(record: StickyRecord, now: number): boolean {
    return stickyAging(record, this.#ttlMs, now)
  }

  /**
   * Writes records, each expiring twice `ttlMs` from now (`stickyLifeMs`): the writes of a turn of
   * the event loop in one script call (lua/setStickyRecords.lua), as the store gathers a turn's
   * messages; on a Cluster a SET each (the keys spread over slots).
   */
  async write(records: StickyWrite[], _now?: number): Promise<void> {
    if (records.length === 1) await this.#write(records[0] as StickyWrite)
    else if (records.length > 1) await Promise.all(records.map((r) => this.#write(r)))
  }

  readonly #write = turnBatched(async (records: StickyWrite[]): Promise<undefined[]> => {
    const set = (r: StickyWrite) =>
      this.#redis.set(poolStickyKey(this.#prefix, r.poolId, r.recipient), encodeSticky(r), 'PX', this.#lifeMs)
    if (this.#setRecords === undefined) {
      await Promise.all(records.map(set))
    } else {
      // One command for the turn's records (lua/setStickyRecords.lua), not a SET each.
      await this.#setRecords(
        records.length,
        ...records.map((r) => poolStickyKey(this.#prefix, r.poolId, r.recipient)),
        this.#lifeMs,
        ...records.map((r) => encodeSticky(r)),
      )
    }
    return records.map(() => undefined)
  })
}
