import type { RedisClient } from '@dispatch/runtime/redis'
import type { Logger } from 'pino'

/** How often the whole set is read again: the backstop for an announcement this process missed. */
export const ANNOUNCED_SET_REFRESH_MS = 30_000

export interface AnnouncedSetOptions<V> {
  /** What the set holds, for its log lines ("revoked keys"). */
  name: string
  /** A subscribed connection (it can do nothing else; sets may share one, each reads its own channel). */
  subscriber: RedisClient
  /** The channel, with its prefix. */
  channel: string
  logger: Logger
  refreshMs?: number | undefined
  /** Every entry, from Postgres. */
  readAll: () => Promise<Iterable<readonly [string, V]>>
  /** The id an announcement names (undefined: not one of ours). */
  idOf: (message: string) => string | undefined
  /** The entry of an announced id, read from its own row; undefined while the row says otherwise. */
  confirm: (id: string) => Promise<V | undefined>
}

/**
 * A set that only grows (revoked keys, canceled campaigns: neither is ever undone), held in memory
 * so delivery checks a message against it at no round trip. Read from Postgres at start; an id
 * announced on its channel is confirmed from its own row (the announcement is a hint) and added at
 * once; the whole set is read every `refreshMs`, and after a lost connection (what was announced
 * while away is gone).
 */
export class AnnouncedSet<V> {
  readonly #entries = new Map<string, V>()
  readonly #options: AnnouncedSetOptions<V>
  #timer: NodeJS.Timeout | undefined

  constructor(options: AnnouncedSetOptions<V>) {
    this.#options = options
  }

  /** The entry of `id`, as this process last heard. */
  get(id: string): V | undefined {
    return this.#entries.get(id)
  }

  get size(): number {
    return this.#entries.size
  }

  /** Subscribes, then reads the set (so nothing announced falls between the two). */
  async start(): Promise<void> {
    const { subscriber, channel, logger, name } = this.#options
    subscriber.on('message', this.#onMessage)
    subscriber.on('ready', this.#onReady)
    await subscriber.subscribe(channel).catch((error: Error) => {
      logger.warn({ err: error, channel }, `${name}: channel not subscribed yet; retries on reconnect`)
    })
    await this.refresh()
    this.#timer = setInterval(() => void this.refresh(), this.#options.refreshMs ?? ANNOUNCED_SET_REFRESH_MS)
    this.#timer.unref()
  }

  /** Reads the whole set again. */
  async refresh(): Promise<void> {
    try {
      for (const [id, value] of await this.#options.readAll()) this.#entries.set(id, value)
    } catch (error) {
      this.#options.logger.warn({ err: error }, `${this.#options.name} not read; read again on the next tick`)
    }
  }

  close(): void {
    clearInterval(this.#timer)
    this.#options.subscriber.off('message', this.#onMessage)
    this.#options.subscriber.off('ready', this.#onReady)
  }

  /** Connected (again): what was announced while away is lost, so the set is read whole. */
  readonly #onReady = () => void this.refresh()

  readonly #onMessage = (channel: string, message: string) => {
    if (channel !== this.#options.channel) return
    const id = this.#options.idOf(message)
    if (id === undefined || this.#entries.has(id)) return
    this.#options.confirm(id).then(
      (value) => {
        if (value !== undefined) this.#entries.set(id, value)
      },
      (error) =>
        this.#options.logger.warn(
          { err: error, id },
          `${this.#options.name}: announced id not read; the next refresh reads it`,
        ),
    )
  }
}
