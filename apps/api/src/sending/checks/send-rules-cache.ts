import type { Db } from '@dispatch/db'
import { loadSenderSendRules, sendRulesVersions } from '@dispatch/db'
import type { Log } from '../log.ts'
import { Refresher } from '../refresher.ts'
import { type SenderRules, toSenderRules } from './send-rules.ts'

/**
 * Every sender's send rules (window policy, number, template catalog), held in this process so a
 * send is checked without Postgres. Loaded at start; one sender is reloaded as soon as a change to
 * it is announced (Redis pub/sub: a sync, a template webhook, an admin's edit), and every
 * `refreshMs` the versions of all are compared in one query in case an announcement was missed.
 * A sender this process does not know (Postgres was down at start, or it is brand new) is checked
 * by nothing, as a sender never synced: the platform decides, as before.
 */
export class SendRulesCache {
  readonly #db: Db
  readonly #log: Log
  readonly #rules = new Map<string, SenderRules>()
  readonly #versions = new Map<string, string>()
  /** Reloads under way, and senders announced again meanwhile (reloaded once more after). */
  readonly #loading = new Map<string, Promise<void>>()
  readonly #again = new Set<string>()
  readonly #refresher = new Refresher(() => this.refresh())

  constructor(db: Db, log: Log) {
    this.#db = db
    this.#log = log
  }

  get(senderId: string): SenderRules | undefined {
    return this.#rules.get(senderId)
  }

  /** The sender whose business number this is, as last loaded (a walk over a few hundred at most). */
  senderOfNumber(phoneNumberId: string): string | undefined {
    for (const [senderId, rules] of this.#rules) if (rules.phoneNumberId === phoneNumberId) return senderId
    return undefined
  }

  /**
   * Loads every sender (waiting at most `bootWaitMs`: a Postgres that does not answer must not hold
   * the API's start; the load goes on meanwhile), then keeps them current every `refreshMs`.
   * Never throws.
   */
  start(refreshMs: number, bootWaitMs = 5000): Promise<void> {
    return this.#refresher.start(refreshMs, bootWaitMs)
  }

  /** Reloads the senders whose version moved (all of them the first time). */
  async refresh(): Promise<void> {
    let versions: Map<string, string>
    try {
      versions = await sendRulesVersions(this.#db)
    } catch (error) {
      this.#log.warn({ err: error }, 'send rules not refreshed (Postgres); the last known stay in force')
      return
    }
    for (const id of this.#rules.keys()) if (!versions.has(id)) this.#rules.delete(id)
    await Promise.all(
      [...versions]
        .filter(([id, version]) => this.#versions.get(id) !== version)
        .map(([id]) => this.reload(id)),
    )
  }

  /** Reloads one sender now (a change was announced); concurrent calls for it coalesce. */
  reload(senderId: string): Promise<void> {
    const running = this.#loading.get(senderId)
    if (running) {
      this.#again.add(senderId)
      return running
    }
    const load = (async () => {
      try {
        do {
          this.#again.delete(senderId)
          // The version first: a change landing between the two reads is seen again at the next refresh.
          const version = (await sendRulesVersions(this.#db, senderId)).get(senderId)
          const loaded = await loadSenderSendRules(this.#db, senderId)
          if (loaded && version !== undefined) {
            this.#rules.set(senderId, toSenderRules(loaded))
            this.#versions.set(senderId, version)
          } else {
            this.#rules.delete(senderId)
            this.#versions.delete(senderId)
          }
        } while (this.#again.has(senderId))
      } catch (error) {
        this.#versions.delete(senderId) // Retried at the next refresh.
        this.#log.warn({ err: error, senderId }, 'send rules of a sender not reloaded (Postgres)')
      } finally {
        this.#loading.delete(senderId)
      }
    })()
    this.#loading.set(senderId, load)
    return load
  }

  stop(): void {
    this.#refresher.stop()
  }
}
