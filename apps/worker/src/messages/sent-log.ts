import { type DeliveryOutcome, parseOutcome, pgError } from '@dispatch/db'
import { type RedisClient, turnBatched } from '@dispatch/runtime/redis'
import type { Logger } from 'pino'
import type { DeliveryRecorder, LoggedEntry } from './delivery-recorder.ts'

/**
 * A sender's sent log (docs/delivery.md, "Recording outcomes"): a Redis stream of `sent` outcomes not yet
 * in Postgres. A job appends its outcome (one XADD, as durable as the accepted message) and
 * completes without waiting for Postgres; its process's recorder writes it with the next batch and
 * deletes the entry. An entry still there after SENT_LOG_AGE_MS (its process died, or Postgres was
 * unreachable) is written by any process's sweep: at least once, and writing a `sent` row again
 * changes nothing (the record only moves forward, and an unchanged status emits no event).
 */
export const SENT_LOG_AGE_MS = 5_000
const SWEEP_EVERY_MS = 2_000
/**
 * An entry whose row Postgres still refuses after this long (a key deleted, say) is dropped. Only a
 * refusal counts: an entry that could not be written because Postgres was unreachable stays, however
 * long the outage.
 */
const GIVE_UP_MS = 3600_000

/** Postgres answered and refused the row (data or integrity: SQLSTATE classes 22 and 23). */
const isRefusal = (error: unknown) => /^2[23]/.test(pgError(error).code ?? '')
const PAGE = 1000

/** Appends a sent outcome to the sender's log; answers where it is. */
export async function logSent(
  redis: RedisClient,
  stream: string,
  outcome: DeliveryOutcome,
): Promise<LoggedEntry> {
  const id = await redis.xadd(stream, '*', 'o', JSON.stringify(outcome))
  return { stream, id: id as string }
}

/**
 * Appends to the senders' logs gathered per turn of the event loop: the sent outcomes of every
 * bundle of the turn, whatever its sender, go in one pipeline (one write; on a Redis Cluster one per
 * sender's log, as a pipeline holds one node's keys), each answered with its own entry. One writer
 * serves a process' lanes: a hundred senders cost one write a turn, not a hundred. A bundle waits
 * for its messages' entries before it completes (bundle.ts), so they are in Redis by then whatever
 * the connection; a message's own job uses `logSent`, on the connection it completes on.
 */
export function batchedLogSent(
  redis: RedisClient,
): (stream: string, outcome: DeliveryOutcome) => Promise<LoggedEntry> {
  type Append = { stream: string; outcome: DeliveryOutcome }
  const write = async (appends: Append[]) => {
    const pipeline = redis.pipeline()
    for (const { stream, outcome } of appends) pipeline.xadd(stream, '*', 'o', JSON.stringify(outcome))
    const results = (await pipeline.exec()) ?? []
    return appends.map((_, i) => results[i] ?? [new Error('pipeline cut short'), null])
  }
  const append = turnBatched(async (appends: Append[]) => {
    if (!redis.isCluster) return write(appends)
    const byStream = Map.groupBy(appends.keys(), (i) => (appends[i] as Append).stream)
    const results: Awaited<ReturnType<typeof write>> = new Array(appends.length)
    await Promise.all(
      [...byStream.values()].map(async (indexes) => {
        const written = await write(indexes.map((i) => appends[i] as Append))
        for (const [j, i] of indexes.entries()) results[i] = written[j] as (typeof results)[number]
      }),
    )
    return results
  })
  return async (stream, outcome) => {
    const [error, id] = await append({ stream, outcome })
    if (error) throw error
    return { stream, id: id as string }
  }
}

type Entries = Array<[id: string, fields: string[]]>

/** Writes what every served sender's log still holds after SENT_LOG_AGE_MS, every SWEEP_EVERY_MS. */
export class SentLogSweeper {
  readonly #redis: RedisClient
  readonly #recorder: DeliveryRecorder
  readonly #streams: () => Iterable<string>
  readonly #logger: Logger
  #timer: NodeJS.Timeout | undefined
  #running: Promise<void> | undefined
  #stopped = false

  constructor(
    redis: RedisClient,
    recorder: DeliveryRecorder,
    streams: () => Iterable<string>,
    logger: Logger,
  ) {
    this.#redis = redis
    this.#recorder = recorder
    this.#streams = streams
    this.#logger = logger
  }

  start(everyMs = SWEEP_EVERY_MS): void {
    const loop = async () => {
      if (this.#stopped) return
      this.#running = this.sweep().then(
        () => {},
        (error) => this.#logger.warn({ err: error }, 'sent log sweep failed; trying again'),
      )
      await this.#running
      if (!this.#stopped) this.#timer = setTimeout(loop, everyMs)
    }
    this.#timer = setTimeout(loop, everyMs)
  }

  /** One pass: answers how many outcomes it wrote. */
  async sweep(olderThanMs = SENT_LOG_AGE_MS): Promise<number> {
    let written = 0
    let lastError: unknown
    for (const stream of this.#streams()) {
      const until = String(Math.max(0, Date.now() - olderThanMs))
      let start = '-'
      for (;;) {
        const entries = (await this.#redis.xrange(stream, start, until, 'COUNT', PAGE)) as Entries
        if (entries.length === 0) break
        const results = await Promise.allSettled(
          entries.map(([id, fields]) =>
            this.#recorder.recordLogged(parseOutcome(fields[1] ?? ''), { stream, id }),
          ),
        )
        const failed = entries.filter((_, i) => results[i]?.status === 'rejected')
        written += entries.length - failed.length
        if (failed.length > 0) {
          lastError = (results.find((r) => r.status === 'rejected') as PromiseRejectedResult).reason
          const giveUpBefore = Date.now() - GIVE_UP_MS
          const dropped = entries.flatMap(([id], i) => {
            const result = results[i]
            const refused = result?.status === 'rejected' && isRefusal(result.reason)
            return refused && Number(id.split('-')[0]) < giveUpBefore ? [id] : []
          })
          if (dropped.length > 0) {
            this.#logger.error(
              { err: lastError, stream, entries: dropped.length },
              'sent outcomes refused by Postgres for an hour; dropped from the log',
            )
            await this.#redis.xdel(stream, ...dropped)
          }
        }
        if (entries.length < PAGE) break
        start = `(${entries[entries.length - 1]?.[0]}`
      }
    }
    if (written > 0) this.#logger.info({ written }, 'sent outcomes left in the log written to Postgres')
    // What could not be written stays for the next pass (Postgres down, say).
    if (lastError !== undefined) throw lastError
    return written
  }

  async stop(): Promise<void> {
    this.#stopped = true
    clearTimeout(this.#timer)
    await this.#running
  }
}
