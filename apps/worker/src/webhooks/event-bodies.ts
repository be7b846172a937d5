import { webhookEventBody } from '@dispatch/contracts'
import { type Db, findWebhookEvents } from '@dispatch/db'

/** An event as a delivery sends it: its type and the exact body that is signed. */
export interface EventToSend {
  type: string
  body: string
}

export interface EventBodiesOptions {
  /**
   * How long an event read is reused. The relay makes one bundle per endpoint of the same events, so
   * a key with several endpoints has its events asked for again within moments; a change to a stored
   * event (an erasure, a timed redaction) shows in what is sent within this time.
   */
  ttlMs: number
  /** Events held at most; the oldest reads go first. */
  maxEntries: number
}

export const DEFAULT_EVENT_BODIES_OPTIONS: EventBodiesOptions = { ttlMs: 1000, maxEntries: 20_000 }

/** One read of some events, shared by each of their ids. */
interface Entry {
  read: Promise<Map<string, EventToSend>>
  /** When the read ended, plus the time to live; infinite while it runs. */
  until: number
}

/**
 * The events bundles send, read from Postgres once for every endpoint they go to: a bundle asks
 * for its events by id, and those read (or being read) for another endpoint's bundle are shared,
 * so one read and one body serve the fan-out. An event gone (retention) is not among the answer and
 * is never held; a read that fails is not held either, so the next asks Postgres again.
 */
export class EventBodies {
  readonly #db: Db
  readonly #options: EventBodiesOptions
  /** By event id, in the order they were read (so the oldest are first). */
  readonly #entries = new Map<string, Entry>()

  constructor(db: Db, options: EventBodiesOptions = DEFAULT_EVENT_BODIES_OPTIONS) {
    this.#db = db
    this.#options = options
  }

  /** The events of these ids as they are now, by id; those gone are absent. */
  async of(ids: readonly string[]): Promise<Map<string, EventToSend>> {
    const now = Date.now()
    this.#evict(now)
    // A read still running has an infinite `until`: it is waited on, not made again.
    const missing = ids.filter((id) => (this.#entries.get(id)?.until ?? 0) <= now)
    if (missing.length > 0) this.#read(missing)
    // Taken before waiting: another call may evict them meanwhile.
    const reads = await Promise.all(ids.map((id) => (this.#entries.get(id) as Entry).read))
    const found = new Map<string, EventToSend>()
    ids.forEach((id, i) => {
      const event = reads[i]?.get(id)
      if (event) found.set(id, event)
    })
    return found
  }

  #read(ids: string[]) {
    const entry = { until: Number.POSITIVE_INFINITY } as Entry
    entry.read = findWebhookEvents(this.#db, ids).then(
      (rows) => {
        entry.until = Date.now() + this.#options.ttlMs
        const events = new Map(
          rows.map((row) => [row.id, { type: row.type, body: webhookEventBody(row.payload) }]),
        )
        // One gone is not held: the next ask reads again.
        for (const id of ids) if (!events.has(id)) this.#forget(id, entry)
        return events
      },
      (error: unknown) => {
        for (const id of ids) this.#forget(id, entry)
        throw error
      },
    )
    // Whoever waits on it hears a failure; nobody waiting is no unhandled rejection.
    entry.read.catch(() => {})
    for (const id of ids) {
      // Deleted first, so the map's order stays the order of reads.
      this.#entries.delete(id)
      this.#entries.set(id, entry)
    }
  }

  #forget(id: string, entry: Entry) {
    if (this.#entries.get(id) === entry) this.#entries.delete(id)
  }

  /** Drops expired reads from the oldest on, and the oldest beyond the bound. */
  #evict(now: number) {
    for (const [id, entry] of this.#entries) {
      if (entry.until > now && this.#entries.size <= this.#options.maxEntries) break
      this.#entries.delete(id)
    }
  }
}
