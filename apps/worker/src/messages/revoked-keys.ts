import { API_KEY_INVALIDATION_CHANNEL } from '@dispatch/contracts'
import { type Db, findApiKeyById, listRevokedApiKeyIds } from '@dispatch/db'
import type { RedisClient } from '@dispatch/runtime/redis'
import type { Logger } from 'pino'

/** How often the whole set is read again: the backstop for an announcement this process missed. */
export const REVOKED_KEYS_REFRESH_MS = 30_000

/**
 * The ids of revoked keys, held in memory so delivery checks a message's key at no round trip
 * (`has`, a Set lookup). Read from Postgres at start; a key's change announced on the API's
 * key-invalidation channel (`<instance> <key id>`, published by the API after a decision and by
 * the revocation's sweep) is read again at once; the whole set every `REVOKED_KEYS_REFRESH_MS`,
 * and after a lost connection (announcements made meanwhile are gone). A key is never un-revoked,
 * so the set only grows, and an id once in it stays.
 */
export class RevokedKeys {
  readonly #ids = new Set<string>()
  readonly #db: Db
  readonly #subscriber: RedisClient
  readonly #channel: string
  readonly #logger: Logger
  readonly #refreshMs: number
  #timer: NodeJS.Timeout | undefined

  /** `subscriber`: a connection of its own (a subscribed connection can do nothing else). */
  constructor(options: {
    db: Db
    subscriber: RedisClient
    prefix: string
    logger: Logger
    refreshMs?: number
  }) {
    this.#db = options.db
    this.#subscriber = options.subscriber
    this.#channel = `${options.prefix}:${API_KEY_INVALIDATION_CHANNEL}`
    this.#logger = options.logger
    this.#refreshMs = options.refreshMs ?? REVOKED_KEYS_REFRESH_MS
  }

  /** Whether the key was revoked (as this process last heard). */
  has(apiKeyId: string): boolean {
    return this.#ids.has(apiKeyId)
  }

  get size(): number {
    return this.#ids.size
  }

  /** Subscribes, then reads the set (so no revocation falls between the two); a failed read is retried. */
  async start(): Promise<void> {
    this.#subscriber.on('message', this.#onMessage)
    this.#subscriber.on('ready', this.#onReady)
    await this.#subscriber.subscribe(this.#channel).catch((error: Error) => {
      this.#logger.warn({ err: error }, 'key-change channel not subscribed yet; retries on reconnect')
    })
    await this.refresh()
    this.#timer = setInterval(() => void this.refresh(), this.#refreshMs)
    this.#timer.unref()
  }

  /** Reads every revoked key again. */
  async refresh(): Promise<void> {
    try {
      for (const id of await listRevokedApiKeyIds(this.#db)) this.#ids.add(id)
    } catch (error) {
      this.#logger.warn({ err: error }, 'revoked keys not read; the set is read again on the next tick')
    }
  }

  /** Marks a key revoked in this process at once (the revocation's sweep, before it announces it). */
  add(apiKeyId: string): void {
    this.#ids.add(apiKeyId)
  }

  close(): void {
    clearInterval(this.#timer)
    this.#subscriber.off('message', this.#onMessage)
    this.#subscriber.off('ready', this.#onReady)
  }

  /** Connected (again): what was announced while away is lost, so the set is read whole. */
  readonly #onReady = () => void this.refresh()

  readonly #onMessage = (channel: string, message: string) => {
    if (channel !== this.#channel) return
    const id = message.split(' ')[1]
    if (!id || this.#ids.has(id)) return
    findApiKeyById(this.#db, id).then(
      (key) => {
        if (key?.status === 'revoked') this.#ids.add(id)
      },
      (error) =>
        this.#logger.warn({ err: error, apiKeyId: id }, 'changed key not read; the next refresh reads it'),
    )
  }
}
