import {
  OPT_OUT_ANNOUNCEMENTS_KEEP_MS,
  OPT_OUTS_RESET,
  optOutAnnouncement,
  optOutsStream,
} from '@dispatch/runtime'
import type { RedisClient } from '@dispatch/runtime/redis'
import type { Logger } from 'pino'

/**
 * Clocks of the API that stamped `acceptedAt` and of Redis (the stream's ids) may differ by this
 * much, and an accept's own opt-out read lands this close to its stamp.
 */
const CLOCK_MARGIN_MS = 2_000
/** How far back the watch trusts the stream: well inside what it keeps. */
const HORIZON_MS = OPT_OUT_ANNOUNCEMENTS_KEEP_MS - 5 * 60_000
/** The longest one read of the stream waits for a new announcement. */
const BLOCK_MS = 2_000
const PAGE = 1_000

type Entries = Array<[id: string, fields: string[]]>
const msOf = (id: string) => Number(id.slice(0, id.indexOf('-')))

/**
 * The opt-outs announced lately (`optOutsStream`), so delivery reads a recipient's entry only when an
 * opt-out of it may have come after the message was accepted. Every message was checked against the
 * copy at accept; what delivery adds is an opt-out made since. Every opt-out written to the copy is
 * announced once written, so the read is skipped when the watch has followed the stream, without a
 * gap, since before the message was accepted (less CLOCK_MARGIN_MS) and found nothing of this
 * recipient. Otherwise it reads: while the watch catches up (starting, after a lost connection), a
 * message accepted before its horizon (HORIZON_MS back; a scheduled one, a long backlog), a
 * recipient announced, a copy rebuilt since (`OPT_OUTS_RESET`).
 *
 * The one difference from reading every time: an opt-out written in the moment between its entry
 * and its announcement reaching this process (a round trip) is not seen by a delivery in that
 * moment, as one written a moment later would not be either.
 */
export class OptOutWatch {
  readonly #redis: RedisClient
  readonly #stream: string
  readonly #logger: Logger
  /** Since when (Redis ms) every announcement is known; undefined while catching up. */
  #since: number | undefined
  /** Announced recipients (`optOutAnnouncement`) → when (Redis ms). */
  readonly #heard = new Map<string, number>()
  #last = '0'
  #stopped = false

  /** `redis`: a blocking connection of its own (the watch waits on the stream). */
  constructor(redis: RedisClient, prefix: string, logger: Logger) {
    this.#redis = redis
    this.#stream = optOutsStream(prefix)
    this.#logger = logger
  }

  start(): void {
    void this.#follow()
  }

  /**
   * Whether delivery must read the recipient's entry: an opt-out of it may have been written since
   * the message was accepted (ms) without the watch knowing of it.
   */
  mustRead(phoneNumberId: string, recipientHash: string, acceptedAt: number): boolean {
    if (this.#since === undefined || acceptedAt < this.#since + CLOCK_MARGIN_MS) return true
    return this.#heard.has(optOutAnnouncement(phoneNumberId, recipientHash))
  }

  /** Resolves once caught up, or after `ms` (still catching up: every delivery reads meanwhile). */
  async caughtUp(ms: number): Promise<void> {
    const until = Date.now() + ms
    while (this.#since === undefined && !this.#stopped && Date.now() < until) {
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
  }

  /** Stops following; a read in progress ends with its connection, closed by the process. */
  close(): void {
    this.#stopped = true
    this.#since = undefined
  }

  async #follow(): Promise<void> {
    let failures = 0
    while (!this.#stopped) {
      try {
        if (this.#since === undefined) await this.#catchUp()
        const read = (await this.#redis.xread(
          'COUNT',
          PAGE,
          'BLOCK',
          BLOCK_MS,
          'STREAMS',
          this.#stream,
          this.#last,
        )) as Array<[string, Entries]> | null
        this.#take(read?.[0]?.[1] ?? [])
        this.#forget()
        failures = 0
      } catch (error) {
        // A gap may have opened: every delivery reads until the watch has caught up again.
        this.#since = undefined
        if (this.#stopped) return
        if (failures++ % 100 === 0) {
          this.#logger.warn(
            { err: error, failures },
            'opt-out announcements not followed; every delivery reads',
          )
        }
        await new Promise((resolve) => setTimeout(resolve, Math.min(2_000, 50 * 2 ** Math.min(failures, 6))))
      }
    }
  }

  /** Reads what the stream holds since the horizon; from then on, every announcement is known. */
  async #catchUp(): Promise<void> {
    this.#heard.clear()
    const [seconds, micros] = (await this.#redis.time()).map(Number) as [number, number]
    const horizon = seconds * 1000 + Math.floor(micros / 1000) - HORIZON_MS
    this.#last = String(horizon)
    let since = horizon
    for (;;) {
      const page = (await this.#redis.xrange(this.#stream, `(${this.#last}`, '+', 'COUNT', PAGE)) as Entries
      since = Math.max(since, this.#take(page))
      if (page.length < PAGE) break
    }
    this.#since = since
  }

  /** Takes announcements in order; answers when the latest rebuilt copy began (0: none here). */
  #take(entries: Entries): number {
    let reset = 0
    for (const [id, fields] of entries) {
      this.#last = id
      const announced = fields[1] ?? ''
      if (announced === OPT_OUTS_RESET) {
        reset = msOf(id)
        this.#heard.clear()
        if (this.#since !== undefined) this.#since = Math.max(this.#since, reset)
      } else {
        this.#heard.set(announced, msOf(id))
      }
    }
    return reset
  }

  /**
   * Once a minute, drops what was announced before the horizon and moves `since` up to it: a message
   * accepted since then was accepted after those opt-outs were written, so its accept saw them. On
   * this process' clock, less the margin for Redis' clock.
   */
  #forget(): void {
    if (this.#since === undefined) return
    const horizon = Date.now() - HORIZON_MS - CLOCK_MARGIN_MS
    if (this.#since >= horizon - 60_000) return
    this.#since = horizon
    for (const [recipient, at] of this.#heard) if (at < horizon) this.#heard.delete(recipient)
  }
}
