import {
  decodeSticky,
  encodeSticky,
  poolStickyKey,
  type StickyRecord,
  stickyAging,
  stickyLifeMs,
} from '@dispatch/runtime'
import {
  type RedisClient,
  type Settle,
  type TurnBatched,
  turnBatchedGet,
  turnBatchedSet,
} from '@dispatch/runtime/redis'

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
  readonly #get: TurnBatched<string, string | null>
  /** A record written, to live `stickyLifeMs` from now. */
  readonly #set: (key: string, value: string) => Promise<void>

  constructor(
    redis: RedisClient,
    prefix: string,
    ttlMs: number,
    /** The turn's batched reads, shared with the send checks' (one MGET for both). */
    read: TurnBatched<string, string | null> = turnBatchedGet(redis),
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

  /** The same read started early for a single send: `read` takes the record as it lands. */
  prefetch(read: StickyRead): void {
    this.#get.into(poolStickyKey(this.#prefix, read.poolId, read.recipient), read)
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

/**
 * A single send's sticky read, started with the request's other reads (`prefetchSticky`): it takes
 * the record as the turn's MGET lands, with no promise of its own (most sends find it there once
 * their checks' reads, made in the same MGET, are in). Never rejects: a failed read is null.
 */
export class StickyRead implements Settle<string | null> {
  readonly poolId: string
  readonly recipient: string
  /** The number the spread gives the recipient (most sends' choice), for the checks' early reads. */
  readonly likely: string
  /** Set once the read is in: `record` is then its answer. */
  settled = false
  /** The record: undefined when there is none, null when the read failed. */
  record: StickyRecord | undefined | null = undefined
  #wake: Array<(record: StickyRecord | undefined | null) => void> | undefined

  constructor(poolId: string, recipient: string, likely: string) {
    this.poolId = poolId
    this.recipient = recipient
    this.likely = likely
  }

  resolve(value: string | null): void {
    this.#settle(decodeSticky(value))
  }

  reject(): void {
    this.#settle(null)
  }

  /** The record once the read is in. */
  wait(): Promise<StickyRecord | undefined | null> {
    if (this.settled) return Promise.resolve(this.record)
    return new Promise((resolve) => {
      this.#wake ??= []
      this.#wake.push(resolve)
    })
  }

  #settle(record: StickyRecord | undefined | null): void {
    this.record = record
    this.settled = true
    if (this.#wake) for (const wake of this.#wake) wake(record)
    this.#wake = undefined
  }
}
