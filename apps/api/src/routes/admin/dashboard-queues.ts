import { BullMQAdapter } from '@bull-board/api/bullMQAdapter'
import {
  DEFAULT_SENDER_ID,
  QueueNames,
  queuePrefix,
  SENDER_CHANGES_CHANNEL,
  senderQueueName,
} from '@dispatch/contracts'
import { listAllSenders } from '@dispatch/db'
import { Queue } from 'bullmq'
import type { FastifyBaseLogger } from 'fastify'
import type { ApiDeps } from '../../deps.ts'

/** How often the list of senders is read again, should a change notice have been missed. */
export const QUEUE_LIST_REFRESH_MS = 60_000
/** After a failed read, the next is this soon, doubling on each failure up to QUEUE_LIST_REFRESH_MS. */
export const QUEUE_LIST_RETRY_MS = 1_000

/** What the board needs of Bull Board: its queues replaced as a whole. */
export interface Board {
  replaceQueues(queues: readonly BullMQAdapter[]): void
}

/**
 * Every queue the service uses, as Bull Board adapters: `email`, `webhooks`, `consent-confirmations`,
 * and one per sender (`messages` for the default sender, `messages.<id>` for each row of `senders`).
 * Each is read-only
 * (see the dashboard's plugin). The queues are producers on the API's command connection: reading
 * needs no blocking connection and no worker.
 *
 * The senders are read when the API is ready, again on each notice on the senders channel (an
 * admin added, changed or removed one; a worker marked one as needing attention), after the
 * subscriber reconnects, every `QUEUE_LIST_REFRESH_MS` in case a notice was lost, and soon again
 * after a read that failed.
 */
export class DashboardQueues {
  readonly #deps: ApiDeps
  readonly #board: Board
  readonly #log: FastifyBaseLogger
  readonly #email: Queue
  readonly #confirmations: Queue
  readonly #channel: string
  #timer: NodeJS.Timeout | undefined
  /** The read again after a failed one, and how long it waits (doubling while reads fail). */
  #retry: NodeJS.Timeout | undefined
  #retryMs = QUEUE_LIST_RETRY_MS
  /** The refresh running now, and whether another was asked for meanwhile. */
  #running: Promise<void> | undefined
  #again = false
  #closed = false

  constructor(deps: ApiDeps, board: Board, log: FastifyBaseLogger) {
    this.#deps = deps
    this.#board = board
    this.#log = log
    this.#email = new Queue(QueueNames.email, {
      connection: deps.redisQueues,
      prefix: queuePrefix(deps.config, QueueNames.email),
    })
    this.#email.on('error', (error) => log.warn({ err: error }, 'email queue error (queue dashboard)'))
    this.#confirmations = new Queue(QueueNames.consentConfirmations, {
      connection: deps.redisQueues,
      prefix: queuePrefix(deps.config, QueueNames.consentConfirmations),
    })
    this.#confirmations.on('error', (error) =>
      log.warn({ err: error }, 'consent confirmations queue error (queue dashboard)'),
    )
    this.#channel = `${deps.config.QUEUE_PREFIX}:${SENDER_CHANGES_CHANNEL}`
    // Until the senders are read, the board shows the queues that always exist.
    board.replaceQueues(this.#adapters([]))
  }

  #adapters(senders: { id: string; displayName: string }[]): BullMQAdapter[] {
    const readOnly = { readOnlyMode: true } as const
    const others = senders
      .filter((sender) => sender.id !== DEFAULT_SENDER_ID)
      .sort((a, b) => a.displayName.localeCompare(b.displayName) || a.id.localeCompare(b.id))
    return [
      new BullMQAdapter(this.#email, { ...readOnly, description: 'E-mails to key owners and admins' }),
      new BullMQAdapter(this.#deps.webhookQueue, {
        ...readOnly,
        description: "Webhook deliveries to API clients' endpoints",
      }),
      new BullMQAdapter(this.#confirmations, {
        ...readOnly,
        description: 'Texts sent back to users whose keyword (STOP, START…) opted them out or in',
      }),
      new BullMQAdapter(this.#deps.messages.queue(DEFAULT_SENDER_ID), {
        ...readOnly,
        description: 'Messages through the default sender (WHATSAPP_* settings)',
      }),
      // Shown by the sender's name; the queue's own name (what the admin API's pause takes) is in
      // its description and its address.
      ...others.map(
        (sender) =>
          new BullMQAdapter(this.#deps.messages.queue(sender.id), {
            ...readOnly,
            displayName: `messages · ${sender.displayName}`,
            description: `Messages through sender "${sender.displayName}" (queue ${senderQueueName(sender.id)})`,
          }),
      ),
    ]
  }

  /**
   * Reads the senders and replaces the board's queues. Calls while one runs are folded into one more
   * run after it, so a burst of notices costs two queries. Never throws: a failure is logged, the
   * board keeps the queues it had, and the read is tried again soon (QUEUE_LIST_RETRY_MS, doubling),
   * not at the next minute's refresh: the notice that asked for it will not come again.
   */
  refresh(): Promise<void> {
    if (this.#running) {
      this.#again = true
      return this.#running
    }
    if (this.#closed) return Promise.resolve()
    this.#running = (async () => {
      do {
        this.#again = false
        try {
          const senders = await listAllSenders(this.#deps.db)
          if (this.#closed) return
          this.#board.replaceQueues(this.#adapters(senders))
          this.#retryMs = QUEUE_LIST_RETRY_MS
        } catch (error) {
          this.#log.warn(
            { err: error, retryInMs: this.#retryMs },
            'queue dashboard: could not read the senders; keeping the queues shown',
          )
          if (!this.#retry && !this.#closed) {
            this.#retry = setTimeout(() => {
              this.#retry = undefined
              void this.refresh()
            }, this.#retryMs).unref()
            this.#retryMs = Math.min(this.#retryMs * 2, QUEUE_LIST_REFRESH_MS)
          }
        }
      } while (this.#again && !this.#closed)
    })().finally(() => {
      this.#running = undefined
    })
    return this.#running
  }

  readonly #onMessage = (channel: string) => {
    if (channel === this.#channel) void this.refresh()
  }
  /** Notices published while the subscriber was disconnected are lost: read the senders again. */
  readonly #onReady = () => void this.refresh()

  /**
   * Subscribes and reads the senders, without waiting for either: the API does not wait for the
   * dashboard to be ready (a Postgres away at boot would hold it), and until the first read the
   * board shows the queues that always exist.
   */
  start(): void {
    const subscriber = this.#deps.redisSubscriber
    subscriber.on('message', this.#onMessage)
    subscriber.on('ready', this.#onReady)
    // Read again once subscribed: a notice published before the subscription took is not heard, and
    // the first read may have run before it (CI once waited here for the minute's refresh).
    subscriber.subscribe(this.#channel).then(
      () => void this.refresh(),
      (error: Error) => {
        this.#log.warn(
          { err: error },
          'queue dashboard: senders channel not subscribed yet; retries on reconnect',
        )
      },
    )
    this.#timer = setInterval(() => void this.refresh(), QUEUE_LIST_REFRESH_MS).unref()
    void this.refresh()
  }

  /** Stops listening; a read still running is left to end on its own (it changes nothing then). */
  async close(): Promise<void> {
    this.#closed = true
    clearInterval(this.#timer)
    clearTimeout(this.#retry)
    this.#deps.redisSubscriber.off('message', this.#onMessage)
    this.#deps.redisSubscriber.off('ready', this.#onReady)
    await this.#email.close().catch(() => {})
    await this.#confirmations.close().catch(() => {})
  }
}
