import {
  decodeSticky,
  encodeSticky,
  poolStickyKey,
  type StickyRecord,
  stickyExpiresAt,
  stickyGeneration,
} from '@dispatch/runtime'
import { type RedisClient, turnBatched } from '@dispatch/runtime/redis'

interface Read {
  poolId: string
  recipient: string
  now: number
}

/** A record to write: the recipient now sticks to `senderId` (inbound time 0 unless they wrote to it). */
export interface StickyWrite extends StickyRecord {
  poolId: string
  recipient: string
}

/**
 * The pools' sticky records in Redis (packages/runtime/src/pool-sticky.ts for the layout): read for
 * every pooled send, gathered per turn of the event loop into one pipeline (two HMGETs per pool:
 * this generation's and the last's); written only when a recipient's number changes.
 */
export class StickyStore {
  readonly #redis: RedisClient
  readonly #prefix: string
  readonly #ttlMs: number
  readonly #read: (read: Read) => Promise<StickyRecord | undefined>

  constructor(redis: RedisClient, prefix: string, ttlMs: number) {
    this.#redis = redis
    this.#prefix = prefix
    this.#ttlMs = ttlMs
    this.#read = turnBatched((reads: Read[]) => this.#readAll(reads))
  }

  /** The recipient's record in the pool, or undefined (none, or forgotten). Rejects when Redis fails. */
  read(poolId: string, recipient: string, now: number): Promise<StickyRecord | undefined> {
    return this.#read({ poolId, recipient, now })
  }

  async #readAll(reads: Read[]): Promise<Array<StickyRecord | undefined>> {
    const now = (reads[0] as Read).now
    const generation = stickyGeneration(now, this.#ttlMs)
    const answers: Array<StickyRecord | undefined> = reads.map(() => undefined)
    const carried: StickyWrite[] = []
    // One pipeline per pool (its two generations share the pool's slot on a Cluster); a turn's
    // sends are mostly of one pool.
    await Promise.all(
      [...Map.groupBy(reads.keys(), (i) => (reads[i] as Read).poolId)].map(async ([poolId, indexes]) => {
        const fields = indexes.map((i) => (reads[i] as Read).recipient)
        const replies =
          (await this.#redis
            .pipeline()
            .hmget(poolStickyKey(this.#prefix, poolId, generation), ...fields)
            .hmget(poolStickyKey(this.#prefix, poolId, generation - 1), ...fields)
            .exec()) ?? []
        const [[currentError, current] = [], [previousError, previous] = []] = replies
        if (currentError) throw currentError
        if (previousError) throw previousError
        indexes.forEach((i, n) => {
          const record = decodeSticky((current as Array<string | null>)[n])
          if (record) {
            answers[i] = record
            return
          }
          const before = decodeSticky((previous as Array<string | null>)[n])
          if (!before) return
          answers[i] = before
          // Still in use: carried into this generation, so it outlives the last one.
          carried.push({ poolId, recipient: (reads[i] as Read).recipient, ...before })
        })
      }),
    )
    if (carried.length > 0) void this.write(carried, now).catch(() => {})
    return answers
  }

  /** Writes records into this generation's hashes (one pipeline), each hash's expiry set with it. */
  async write(records: StickyWrite[], now: number): Promise<void> {
    if (records.length === 0) return
    const generation = stickyGeneration(now, this.#ttlMs)
    const expiresAt = stickyExpiresAt(generation, this.#ttlMs)
    await Promise.all(
      [...Map.groupBy(records, (r) => r.poolId)].map(async ([poolId, group]) => {
        const key = poolStickyKey(this.#prefix, poolId, generation)
        const replies =
          (await this.#redis
            .pipeline()
            .hset(key, ...group.flatMap((r) => [r.recipient, encodeSticky(r)]))
            .pexpireat(key, expiresAt)
            .exec()) ?? []
        for (const [error] of replies) if (error) throw error
      }),
    )
  }
}
