import {
  ALL_MESSAGES_SWITCH,
  DEFAULT_SENDER_ID,
  SENDER_CHANGES_CHANNEL,
  type SenderState,
  type ServiceWindowPolicy,
  senderSwitchName,
} from '@dispatch/contracts'
import { listAllSenders, listQueueControls, type SenderRow, upsertDefaultSender } from '@dispatch/db'
import { createSecretBox, lastFour, type MessagingLimit, messagingLimitOf } from '@dispatch/runtime'
import { defaultPhoneNumberId } from '@dispatch/runtime/env'
import type { WorkerContext } from '../runtime.ts'
import { servesSender } from '../shared/served-senders.ts'

/** What a worker needs of a sender to deliver through it. */
export interface SenderSettings {
  id: string
  phoneNumberId: string
  displayName: string
  ratePerSecond: number
  state: SenderState
  /** Under `enforce`, a free-form message is checked against the recipient's window before it goes. */
  serviceWindowPolicy: ServiceWindowPolicy
  /** Its portfolio's messaging limit: a template past it outside the window is held (delivery/messaging-limit.ts). */
  messagingLimit: MessagingLimit
  /** Opened from its sealed form (admins' senders) or the environment (`default`). */
  accessToken: string | undefined
  /**
   * The admins' incident switches holding its delivery (`messages`, `messages.<id>`): none, or
   * undefined when not known (Postgres unreachable at start), in which case its queue's pause is
   * left as Redis has it.
   */
  holds: string[] | undefined
}

/** The environment's sender: `WHATSAPP_*` for the Cloud API, or the sandbox's number. */
export function defaultSender(
  config: WorkerContext['config'],
  row?: SenderRow,
  holds?: string[],
): SenderSettings {
  const cloud = config.platform === 'whatsapp-cloud'
  return {
    id: DEFAULT_SENDER_ID,
    phoneNumberId: defaultPhoneNumberId(config),
    displayName: row?.displayName ?? (cloud ? 'WhatsApp (environment)' : 'Sandbox (environment)'),
    ratePerSecond: row?.ratePerSecond ?? config.PLATFORM_RATE_PER_SECOND,
    state: row?.state ?? 'active',
    serviceWindowPolicy: row?.serviceWindowPolicy ?? 'off',
    messagingLimit: messagingLimitOf(
      row ?? {
        id: DEFAULT_SENDER_ID,
        wabaId: null,
        businessId: null,
        messagingLimitTier: null,
        messagingLimitOverride: null,
        messagingLimitPolicy: 'off',
      },
    ),
    accessToken: config.WHATSAPP_ACCESS_TOKEN,
    holds,
  }
}

/** An admin's sender as a row holds it, with its token opened (the caller opens it). */
export function adminSender(
  row: SenderRow,
  accessToken: string | undefined,
  holds?: string[],
): SenderSettings {
  return {
    id: row.id,
    phoneNumberId: row.phoneNumberId,
    displayName: row.displayName,
    ratePerSecond: row.ratePerSecond,
    state: row.state,
    serviceWindowPolicy: row.serviceWindowPolicy,
    messagingLimit: messagingLimitOf(row),
    accessToken,
    holds,
  }
}

/**
 * The senders this process delivers for, kept current: read from Postgres at start, again whenever
 * the API announces a change (Redis pub/sub) and every SENDER_REFRESH_MS in case an announcement
 * was missed. A new sender is picked up without a restart. The admins' queue switches are read with
 * them, so a paused switch holds through restarts and every refresh. While Postgres is unreachable
 * the last known list stays in force (at start: the default sender alone, its pause left as it is).
 */
export class SenderRegistry {
  readonly #context: WorkerContext
  readonly #onChange: (senders: SenderSettings[], readAt: number) => Promise<void>
  readonly #box
  #timer: NodeJS.Timeout | undefined
  #running: Promise<void> = Promise.resolve()
  #again = false
  #stopped = false
  #subscriber: ReturnType<WorkerContext['redis']> | undefined

  /** `onChange` gets the senders and when their read began (ms). */
  constructor(
    context: WorkerContext,
    onChange: (senders: SenderSettings[], readAt: number) => Promise<void>,
  ) {
    this.#context = context
    this.#onChange = onChange
    this.#box = createSecretBox(context.config)
  }

  async start(): Promise<void> {
    const { config, db, logger } = this.#context
    const fallback = defaultSender(config)
    if (fallback.accessToken) this.#context.addSecret(fallback.accessToken)
    try {
      await upsertDefaultSender(db, {
        phoneNumberId: fallback.phoneNumberId,
        displayName: fallback.displayName,
        ratePerSecond: config.PLATFORM_RATE_PER_SECOND,
        accessTokenLast4: fallback.accessToken ? lastFour(fallback.accessToken) : null,
      })
    } catch (error) {
      logger.warn({ err: error }, 'default sender not written to Postgres; retried at the next refresh')
    }
    const channel = `${config.QUEUE_PREFIX}:${SENDER_CHANGES_CHANNEL}`
    const subscriber = this.#context.redis('senders-changes', { blocking: true })
    this.#subscriber = subscriber
    subscriber.on('message', (from: string) => {
      if (from === channel) this.refresh()
    })
    // Announcements missed while disconnected: catch up on reconnect.
    subscriber.on('ready', () => this.refresh())
    // Read again once subscribed: an announcement made before the subscription took is not heard.
    subscriber.subscribe(channel).then(
      () => this.refresh(),
      (error: Error) => {
        logger.warn({ err: error }, 'sender changes channel not subscribed yet; retries on reconnect')
      },
    )
    await this.refresh(true)
    this.#timer = setInterval(() => this.refresh(), config.SENDER_REFRESH_MS)
    this.#timer.unref()
  }

  /** Reads the senders again and applies them; calls made meanwhile run once after. */
  refresh(initial = false): Promise<void> {
    if (this.#stopped) return this.#running
    if (!initial && this.#again) return this.#running
    this.#again = true
    this.#running = this.#running.then(async () => {
      this.#again = false
      if (this.#stopped) return
      try {
        const readAt = Date.now()
        await this.#onChange(await this.#load(initial), readAt)
      } catch (error) {
        this.#context.logger.warn({ err: error }, 'senders not refreshed; retried at the next refresh')
      }
    })
    return this.#running
  }

  async #load(initial: boolean): Promise<SenderSettings[]> {
    const { config, db, logger } = this.#context
    let rows: SenderRow[]
    let paused: Set<string>
    try {
      const [senders, controls] = await Promise.all([listAllSenders(db), listQueueControls(db)])
      rows = senders
      paused = new Set(controls.filter((c) => c.paused).map((c) => c.name))
    } catch (error) {
      logger.warn({ err: error }, 'senders not read from Postgres; keeping the ones in force')
      if (initial) return [defaultSender(config)].filter((s) => servesSender(config, s.id))
      throw error
    }
    const holdsOf = (id: string) => [ALL_MESSAGES_SWITCH, senderSwitchName(id)].filter((n) => paused.has(n))
    const senders: SenderSettings[] = []
    for (const row of rows) {
      if (!servesSender(config, row.id)) continue
      if (row.id === DEFAULT_SENDER_ID) {
        senders.push(defaultSender(config, row, holdsOf(row.id)))
        continue
      }
      let accessToken: string | undefined
      try {
        accessToken = row.accessTokenCiphertext ? this.#box.open(row.accessTokenCiphertext) : undefined
      } catch (error) {
        // Its messages wait: a wrong SECRETS_KEY must not send them with no token or fail them.
        logger.error(
          { err: error, senderId: row.id },
          'sender token cannot be opened (SECRETS_KEY?); not delivering for it',
        )
        continue
      }
      if (accessToken) this.#context.addSecret(accessToken)
      senders.push(adminSender(row, accessToken, holdsOf(row.id)))
    }
    if (!rows.some((row) => row.id === DEFAULT_SENDER_ID) && servesSender(config, DEFAULT_SENDER_ID)) {
      senders.unshift(defaultSender(config, undefined, holdsOf(DEFAULT_SENDER_ID)))
    }
    return senders
  }

  async stop(): Promise<void> {
    this.#stopped = true
    clearInterval(this.#timer)
    await this.#running.catch(() => {})
    this.#subscriber?.removeAllListeners('message')
  }
}
