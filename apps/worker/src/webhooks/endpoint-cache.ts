import { type Db, type DeliverableEndpoint, findWebhookEndpointForDelivery } from '@dispatch/db'

/** How long an endpoint read from Postgres is reused: a change (url, secret, disabled) shows within it. */
export const DEFAULT_ENDPOINT_CACHE_MS = 1000

interface Entry {
  endpoint: Promise<DeliverableEndpoint | undefined>
  /** When the read ended, plus the time to live; infinite while it runs. */
  until: number
}

/**
 * The endpoints deliveries go to, read from Postgres once for every delivery asking within
 * `ttlMs`: a read running is shared by all that ask meanwhile (a bundle per endpoint at once made as
 * many reads of it), and a read that failed is not kept. Bounded: cleared past 10,000 endpoints.
 */
export class EndpointCache {
  readonly #db: Db
  readonly #ttlMs: number
  readonly #entries = new Map<string, Entry>()

  constructor(db: Db, ttlMs: number) {
    this.#db = db
    this.#ttlMs = ttlMs
  }

  get(id: string): Promise<DeliverableEndpoint | undefined> {
    const cached = this.#entries.get(id)
    if (cached && cached.until > Date.now()) return cached.endpoint
    if (this.#entries.size > 10_000) this.#entries.clear()
    const entry: Entry = {
      endpoint: findWebhookEndpointForDelivery(this.#db, id),
      until: Number.POSITIVE_INFINITY,
    }
    this.#entries.set(id, entry)
    entry.endpoint.then(
      () => {
        entry.until = Date.now() + this.#ttlMs
      },
      () => this.#forget(id, entry),
    )
    return entry.endpoint
  }

  /** Forgets the endpoint, so the next delivery reads it again (its health just changed). */
  forget(id: string) {
    this.#entries.delete(id)
  }

  #forget(id: string, entry: Entry) {
    if (this.#entries.get(id) === entry) this.#entries.delete(id)
  }
}
