import {
  decodeSticky,
  encodeSticky,
  poolStickyKey,
  type StickyRecord,
  stickyAging,
  stickyLifeMs,
} from '@dispatch/runtime'
import { type RedisClient, turnBatchedGet, turnBatchedSet } from '@dispatch/runtime/redis'

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
  readonly #prefix: string
  readonly #ttlMs: number
  readonly #get: (key: string) => Promise<string | null>
  /** A record written, to live `stickyLifeMs` from now. */
  readonly #set: (key: string, value: string) => Promise<void>

  constructor(
    redis: RedisClient,
    prefix: string,
    ttlMs: number,
    /** The turn's batched reads, shared with the send checks' (one MGET for both). */
    read: (key: string) => Promise<string | null> = turnBatchedGet(redis),
  ) {
    this.#prefix = prefix
    this.#ttlMs = ttlMs
    this.#get = read
    // The records' keys are not hash-tagged: on a Cluster they spread over slots.
    this.#set = turnBatchedSet(redis, stickyLifeMs(ttlMs), { oneSlot: false })
  }

  /** The recipient's record in the pool, or undefined (none, or expired). Rejects when Redis fails. */
  read(poolId: string, recipient: string, _now?: number): Promise<StickyRecord | undefined> {
    return this.#get(poolStickyKey(this.#prefix, poolId, recipient)).then(decodeSticky)
  }

  /**
   * The same read started early for a single send: never rejects (null when Redis failed). `into`
   * is given the record as the read lands, to be taken without a wait.
   */
  prefetch(
    poolId: string,
    recipient: string,
    into?: { settled?: boolean; record?: StickyRecord | undefined | null },
  ): Promise<StickyRecord | undefined | null> {
    const read = this.#get(poolStickyKey(this.#prefix, poolId, recipient))
    if (!into) return read.then(decodeSticky, unread)
    return read.then(
      (value) => {
        const record = decodeSticky(value)
        into.settled = true
        into.record = record
        return record
      },
      () => {
        into.settled = true
        into.record = null
        return null
      },
    )
  }

  /** Whether a send that keeps `record` writes it again: `ttlMs` old or more (`stickyAging`). */
  aging(record: StickyRecord, now: number): boolean {
    return stickyAging(record, this.#ttlMs, now)
  }

  /**
   * Writes records, each expiring twice `ttlMs` from now (`stickyLifeMs`): the writes of a turn of
   * the event loop in one script call (`turnBatchedSet`), as the store gathers a turn's messages;
   * on a Cluster a SET each (the keys spread over slots).
   */
  async write(records: StickyWrite[], _now?: number): Promise<void> {
    await Promise.all(
      records.map((r) => this.#set(poolStickyKey(this.#prefix, r.poolId, r.recipient), encodeSticky(r))),
    )
  }
}
