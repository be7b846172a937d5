import { recordSmsPrice, type Sql, takeDuePriceChecks } from '@dispatch/db'
import type { Logger } from 'pino'
import type { SmsProvider } from '../platforms/sms/types.ts'
import { Periodic } from '../shared/periodic.ts'

/** How many SMS one pass asks about, one after the other (a pass is a handful of GETs a minute). */
const PER_PASS = 50

/**
 * Asks the SMS provider for the price of each SMS whose delivery ended (docs/fallback.md,
 * "Prices"): Twilio's status callbacks carry none, its Message resource does, a while after. Off
 * the hot path: every `messages` worker runs a pass every SMS_PRICE_CHECK_MS; a pass takes the due
 * checks in one statement (stamped, so two workers never ask for the same SMS at once) and records
 * each price found, summed then with its campaign's pricing. One not there yet is asked again later,
 * twice as long after each time, at most SMS_PRICE_CHECKS times. A failed pass (Postgres, the
 * provider) is logged and the next one goes on.
 */
export class SmsPriceSweeper {
  readonly #sql: Sql
  readonly #sms: SmsProvider
  readonly #everyMs: number
  readonly #logger: Logger
  readonly #every: Periodic

  constructor(sql: Sql, sms: SmsProvider, options: { everyMs: number }, logger: Logger) {
    this.#sql = sql
    this.#sms = sms
    this.#everyMs = options.everyMs
    this.#logger = logger
    this.#every = new Periodic(
      () => this.sweep(),
      options.everyMs,
      (error) => logger.warn({ err: error }, 'sms price checks failed; trying again'),
    )
  }

  start(): void {
    this.#every.start()
  }

  /** One pass: the message ids whose SMS price was recorded. */
  async sweep(now = new Date()): Promise<string[]> {
    const price = this.#sms.price?.bind(this.#sms)
    if (!price) return []
    const due = await takeDuePriceChecks(this.#sql, { now, spacingMs: this.#everyMs, limit: PER_PASS })
    const priced: string[] = []
    for (const { messageId, providerMessageId } of due) {
      if (this.#every.stopped) break
      try {
        const found = await price(providerMessageId)
        if (found && (await recordSmsPrice(this.#sql, { messageId, price: found, at: new Date() }))) {
          priced.push(messageId)
        }
      } catch (error) {
        // Asked again at its next turn (the check was counted).
        this.#logger.warn({ err: error, messageId }, 'sms price not read; asking again later')
      }
    }
    return priced
  }

  stop(): Promise<void> {
    return this.#every.stop()
  }
}
