import { CAMPAIGN_CANCELS_CHANNEL, isDispatchId } from '@dispatch/contracts'
import { type Db, findCampaign, listCanceledCampaigns } from '@dispatch/db'
import type { RedisClient } from '@dispatch/runtime/redis'
import type { Logger } from 'pino'

/** How often the whole set is read again: the backstop for an announcement this process missed. */
export const CANCELED_CAMPAIGNS_REFRESH_MS = 30_000

/**
 * The canceled campaigns (id → its key), held in memory so delivery checks a message's campaign at
 * no round trip (`has`). Why delivery checks at all, when the cancel's sweep (lifecycle/
 * campaign-cancel.ts) cancels what waits in Redis: a message a worker holds keeps its claim, and the
 * sweep gives way to it. Held for the messaging limit (hours, for the campaigns that meet it) or
 * waiting for a retry, it would go long after the cancel was answered; and a window a feeder
 * assigned just before the cancel may be stored after the sweep's last pass. Each meets this set
 * when it next comes to delivery, and ends `canceled` (`CAMPAIGN_CANCELED`) unsent.
 *
 * Read from Postgres at start; a cancel announced by its sweep on `CAMPAIGN_CANCELS_CHANNEL` (the
 * campaign's id) is read at once; the whole set every `CANCELED_CAMPAIGNS_REFRESH_MS`, and after a
 * lost connection. A cancel is final, so the set only grows.
 */
export class CanceledCampaigns {
  readonly #keys = new Map<string, string>()
  readonly #db: Db
  readonly #subscriber: RedisClient
  readonly #channel: string
  readonly #logger: Logger
  readonly #refreshMs: number
  #timer: NodeJS.Timeout | undefined

  /** `subscriber`: a subscribed connection (it can do nothing else; the revoked keys' may be shared). */
  constructor(options: {
    db: Db
    subscriber: RedisClient
    prefix: string
    logger: Logger
    refreshMs?: number
  }) {
    this.#db = options.db
    this.#subscriber = options.subscriber
    this.#channel = `${options.prefix}:${CAMPAIGN_CANCELS_CHANNEL}`
    this.#logger = options.logger
    this.#refreshMs = options.refreshMs ?? CANCELED_CAMPAIGNS_REFRESH_MS
  }

  /** Whether the message of this batch id and key is a canceled campaign's (as this process last heard). */
  has(batchId: string | undefined, apiKeyId: string): boolean {
    return batchId !== undefined && this.#keys.get(batchId) === apiKeyId
  }

  get size(): number {
    return this.#keys.size
  }

  /** Subscribes, then reads the set (so no cancel falls between the two). */
  async start(): Promise<void> {
    this.#subscriber.on('message', this.#onMessage)
    this.#subscriber.on('ready', this.#onReady)
    await this.#subscriber.subscribe(this.#channel).catch((error: Error) => {
      this.#logger.warn({ err: error }, 'campaign-cancel channel not subscribed yet; retries on reconnect')
    })
    await this.refresh()
    this.#timer = setInterval(() => void this.refresh(), this.#refreshMs)
    this.#timer.unref()
  }

  /** Reads every canceled campaign again. */
  async refresh(): Promise<void> {
    try {
      for (const { id, apiKeyId } of await listCanceledCampaigns(this.#db)) this.#keys.set(id, apiKeyId)
    } catch (error) {
      this.#logger.warn({ err: error }, 'canceled campaigns not read; the set is read again on the next tick')
    }
  }

  close(): void {
    clearInterval(this.#timer)
    this.#subscriber.off('message', this.#onMessage)
    this.#subscriber.off('ready', this.#onReady)
  }

  /** Connected (again): what was announced while away is lost, so the set is read whole. */
  readonly #onReady = () => void this.refresh()

  readonly #onMessage = (channel: string, id: string) => {
    if (channel !== this.#channel || this.#keys.has(id) || !isDispatchId(id)) return
    // The announcement is a hint: the campaign's own row says whether it is canceled.
    findCampaign(this.#db, id).then(
      (campaign) => {
        if (campaign?.status === 'canceled') this.#keys.set(id, campaign.apiKeyId)
      },
      (error) =>
        this.#logger.warn(
          { err: error, campaignId: id },
          'canceled campaign not read; the next refresh reads it',
        ),
    )
  }
}
