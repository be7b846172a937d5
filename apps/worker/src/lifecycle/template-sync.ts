import { listSendersToSync } from '@dispatch/db'
import { syncSenderTemplates, TemplateFetchError, TemplateSyncRefused } from '@dispatch/templates'
import { type WorkerContext, whenReady } from '../runtime.ts'
import { servesSender } from '../shared/served-senders.ts'

/** How often the schedule looks for a sender due a sync (a due one waits at most this long). */
const CHECK_EVERY_MS = 60_000

/**
 * Keeps every template catalog current: each sender with a WhatsApp Business Account id (and
 * credentials) this process serves is synced when it never was, or when its last sync is older
 * than TEMPLATE_SYNC_INTERVAL_MS. Several processes may run the schedule: a sync holds its sender's
 * lock, and a process that gets the lock after another's sync finished finds it fresh and skips
 * it, so a catalog is read once per interval, not once per process.
 */
export class TemplateSyncSchedule {
  readonly #context: WorkerContext
  readonly #redis
  #timer: NodeJS.Timeout | undefined
  #running: Promise<void> = Promise.resolve()
  #stopped = false

  constructor(context: WorkerContext) {
    this.#context = context
    this.#redis = context.redis('template-sync', { blocking: false })
  }

  start(): void {
    const interval = this.#context.config.TEMPLATE_SYNC_INTERVAL_MS
    if (interval === 0) return
    const loop = async () => {
      this.#running = this.runOnce().then(
        () => {},
        (error) => this.#context.logger.warn({ err: error }, 'template sync schedule failed; trying again'),
      )
      await this.#running
      if (!this.#stopped) this.#timer = setTimeout(loop, Math.min(interval, CHECK_EVERY_MS))
    }
    // The first pass once this process's connection is up.
    whenReady(this.#redis, () => {
      if (!this.#stopped) this.#timer = setTimeout(loop, 0)
    })
  }

  /** One pass: syncs each due sender of this process; answers how many it synced. */
  async runOnce(now = new Date()): Promise<number> {
    const { config, db, logger } = this.#context
    const staleBefore = new Date(now.getTime() - config.TEMPLATE_SYNC_INTERVAL_MS)
    let synced = 0
    for (const senderId of await listSendersToSync(db, staleBefore)) {
      if (this.#stopped) break
      if (!servesSender(config, senderId)) continue
      try {
        const result = await syncSenderTemplates(
          { db, redis: this.#redis, config, timeoutMs: config.PLATFORM_TIMEOUT_MS },
          senderId,
          { staleBefore },
        )
        if (!result) continue
        synced++
        logger.info(result, 'sender templates synced')
      } catch (error) {
        if (error instanceof TemplateSyncRefused) {
          // Busy: another process is syncing it. No credentials: nothing to read (the sandbox).
          if (error.reason !== 'busy' && error.reason !== 'no-credentials') {
            logger.warn({ senderId, reason: error.reason }, error.message)
          }
        } else if (error instanceof TemplateFetchError) {
          logger.warn(
            { senderId, code: error.code, kind: error.kind },
            'template sync refused by the platform',
          )
        } else {
          throw error
        }
      }
    }
    return synced
  }

  async stop(): Promise<void> {
    this.#stopped = true
    clearTimeout(this.#timer)
    await this.#running
  }
}
