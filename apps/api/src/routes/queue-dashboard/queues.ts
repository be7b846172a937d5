import { BullMQAdapter } from '@bull-board/api/bullMQAdapter'
import { DEFAULT_SENDER_ID, QueueNames, SENDER_CHANGES_CHANNEL, senderQueueName } from '@dispatch/contracts'
import { listAllSenders } from '@dispatch/db'
import type { ReopeningQueue } from '@dispatch/runtime/queues'
import type { FastifyBaseLogger } from 'fastify'
import { type ApiDeps, reopeningProducer } from '../../deps.ts'

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
  readonly #email: ReopeningQueue
  readonly #confirmations: ReopeningQueue
  readonly #channel: string
  #timer: NodeJS.Timeout | undefined
  /** The read again after a failed one, and how long it waits (doubling while reads fail). */
  #retry: NodeJS.Timeout | undefined
  #retryMs = QUEUE_LIST_RETRY_MS
  /** The refresh running now, and whether another was asked for meanwhile. */
  #running: Promise<void> | undefined
  #again = false
  #closed = false
  /** Whether the board has been given its queues once (until then it shows none). */
  #shown = false

  constructor(deps: ApiDeps, board: Board, log: FastifyBaseLogger) {
    this.#deps = deps
    this.#board = board
    this.#log = log
    const open = (name: string, what: string) =>
      reopeningProducer({ ...deps, logger: log }, name, `${what} queue error (queue dashboard)`)
    this.#email = open(QueueNames.email, 'email')
    this.#confirmations = open(QueueNames.consentConfirmations, 'consent confirmations')
    this.#channel = `${deps.config.QUEUE_PREFIX}:${SENDER_CHANGES_CHANNEL}`
  }

  /**
   * The board's queues, each open: a queue whose opening failed (a Redis command that timed out at
   * start) stays broken for good, so it fails this call, and the retry gets a new one.
   */
  async #adapters(senders: { id: string; displayName: string }[]): Promise<BullMQAdapter[]> {
    const readOnly = { readOnlyMode: true } as const
    const others = senders
      .filter((sender) => sender.id !== DEFAULT_SENDER_ID)
      .sort((a, b) => a.displayName.localeCompare(b.displayName) || a.id.localeCompare(b.id))
    // The message store forgets a queue that failed to open, as ReopeningQueue does.
    const opened = async (senderId: string) => {
      const queue = this.#deps.messages.queue(senderId)
      await queue.waitUntilReady()
      return queue
    }
    const [email, webhooks, confirmations, main, own] = await Promise.all([
      this.#email.get(),
      this.#deps.webhookQueue.get(),
      this.#confirmations.get(),
      opened(DEFAULT_SENDER_ID),
      Promise.all(others.map(async (sender) => ({ sender, queue: await opened(sender.id) }))),
    ])
    return [
      new BullMQAdapter(email, { ...readOnly, description: 'E-mails to key owners and admins' }),
      new BullMQAdapter(webhooks, {
        ...readOnly,
        description: "Webhook deliveries to API clients' endpoints",
      }),
      new BullMQAdapter(confirmations, {
        ...readOnly,
        description: 'Texts sent back to users whose keyword (STOP, START…) opted them out or in',
      }),
      new BullMQAdapter(main, {
        ...readOnly,
        description: 'Messages through the default sender (WHATSAPP_* settings)',
      }),
      // Shown by the sender's name; the queue's own name (what the admin API's pause takes) is in
      // its description and its address.
      ...own.map(
        ({ sender, queue }) =>
          new BullMQAdapter(queue, {
            ...readOnly,
            displayName: `messages · ${sender.displayName}`,
            description: `Messages through sender "${sender.displayName}" (queue ${senderQueueName(sender.id)})`,
          }),
      ),
    ]
  }

  /**
   * Reads the senders and replaces the board's queues. Calls while one runs are folded into one more
   * run after it, so a burst of notices costs two queries. Never throws: a failure (Postgres away,
   * or a queue that could not be opened) is logged, the board keeps the queues it had, and the read
   * is tried again soon (QUEUE_LIST_RETRY_MS, doubling), not at the next minute's refresh: the
   * notice that asked for it will not come again.
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
          const senders = await listAllSenders(this.#deps.db).catch(async (error: unknown) => {
            // Until the senders can be read (Postgres away at start), the queues that always exist.
            if (!this.#shown) await this.#show([])
            throw error
          })
          await this.#show(senders)
          this.#retryMs = QUEUE_LIST_RETRY_MS
        } catch (error) {
          this.#log.warn(
            { err: error, retryInMs: this.#retryMs },
            'queue dashboard: could not read the senders or open their queues; keeping the queues shown',
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

  async #show(senders: { id: string; displayName: string }[]): Promise<void> {
    const adapters = await this.#adapters(senders)
    if (this.#closed) return
    this.#board.replaceQueues(adapters)
    this.#shown = true
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
    await Promise.all([this.#email.close(), this.#confirmations.close()]).catch(() => {})
  }
}
