import {
  ALL_MESSAGES_SWITCH,
  DEFAULT_SENDER_ID,
  type EmailJob,
  parseSwitchName,
  type QueueCounts,
  QueueNames,
  type QueueView,
  type SwitchKind,
  senderQueueName,
  senderSwitchName,
  type WebhookJob,
} from '@dispatch/contracts'
import {
  findSender,
  listAllSenders,
  listQueueControls,
  type QueueControlRow,
  type SenderRow,
} from '@dispatch/db'
import { queuePrefix } from '@dispatch/runtime'
import { fairKeys } from '@dispatch/runtime/message-handoff'
import { Queue } from 'bullmq'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { ApiDeps } from './deps.ts'

type Deps = Pick<ApiDeps, 'db' | 'redis' | 'redisQueues' | 'messages' | 'config'>

declare module 'fastify' {
  interface FastifyInstance {
    /** The one switchboard of this API instance: the queue routes and the console's overview. */
    queueSwitchboard: QueueSwitchboard
  }
}

const COUNTED = ['waiting', 'active', 'delayed', 'failed', 'prioritized'] as const

/** A switch by name, resolved: what it is, and for a sender's, the sender (null: unknown). */
export interface SwitchTarget {
  name: string
  kind: SwitchKind
  sender: Pick<SenderRow, 'id' | 'state'> | null
}

/**
 * The incident switches as admins see and turn them (docs/operations.md). Message
 * delivery (`messages`, `messages.<senderId>`) is held by the workers' lanes, which read the
 * switches from Postgres with the senders; `email` and `webhooks` are paused in BullMQ itself.
 */
export class QueueSwitchboard {
  readonly #deps: Deps
  readonly #queues = new Map<'email' | 'webhooks', Queue<EmailJob | WebhookJob>>()

  constructor(deps: Deps) {
    this.#deps = deps
  }

  /**
   * Runs `work` on the BullMQ queue behind `email` or `webhooks`. A queue whose first connection
   * step failed (BullMQ keeps that failure for good) is dropped on any error and built anew on the
   * next call, so one slow Redis moment does not break the switch for the process's life.
   */
  async withQueue<T>(kind: 'email' | 'webhooks', work: (queue: Queue) => Promise<T>): Promise<T> {
    let queue = this.#queues.get(kind)
    if (!queue) {
      queue = new Queue(QueueNames[kind], {
        connection: this.#deps.redisQueues,
        prefix: queuePrefix(this.#deps.config, QueueNames[kind]),
      })
      queue.on('error', () => {})
      this.#queues.set(kind, queue)
    }
    try {
      return await work(queue)
    } catch (error) {
      if (this.#queues.get(kind) === queue) {
        this.#queues.delete(kind)
        queue.close().catch(() => {})
      }
      throw error
    }
  }

  /** The switch a name stands for, or undefined (an unknown name, or a sender that does not exist). */
  async resolve(name: string): Promise<SwitchTarget | undefined> {
    const parsed = parseSwitchName(name)
    if (!parsed) return undefined
    if (parsed.kind !== 'sender') return { name, kind: parsed.kind, sender: null }
    const id = parsed.senderId as string
    const row = await findSender(this.#deps.db, id)
    if (row) return { name, kind: 'sender', sender: row }
    // The default sender's row is written by the first worker to start; it is always a sender.
    return id === DEFAULT_SENDER_ID ? { name, kind: 'sender', sender: { id, state: 'active' } } : undefined
  }

  /** Every switch: `messages`, each sender's (the default first), `email`, `webhooks`. */
  async list(): Promise<QueueView[]> {
    const [senders, controls] = await Promise.all([listAllSenders(this.#deps.db), this.#controls()])
    const ordered = [
      senders.find((s) => s.id === DEFAULT_SENDER_ID) ?? { id: DEFAULT_SENDER_ID, state: 'active' as const },
      ...senders.filter((s) => s.id !== DEFAULT_SENDER_ID).sort((a, b) => a.id.localeCompare(b.id)),
    ]
    const targets: SwitchTarget[] = [
      { name: ALL_MESSAGES_SWITCH, kind: 'messages', sender: null },
      ...ordered.map((sender) => ({ name: senderSwitchName(sender.id), kind: 'sender' as const, sender })),
      { name: 'email', kind: 'email', sender: null },
      { name: 'webhooks', kind: 'webhooks', sender: null },
    ]
    const senderIds = ordered.map((s) => s.id)
    return Promise.all(targets.map((target) => this.#view(target, controls, senderIds)))
  }

  async view(target: SwitchTarget): Promise<QueueView> {
    const senderIds = target.kind === 'messages' ? (await listAllSenders(this.#deps.db)).map((s) => s.id) : []
    if (target.kind === 'messages' && !senderIds.includes(DEFAULT_SENDER_ID))
      senderIds.unshift(DEFAULT_SENDER_ID)
    return this.#view(target, await this.#controls(), senderIds)
  }

  async #controls(): Promise<Map<string, QueueControlRow>> {
    return new Map((await listQueueControls(this.#deps.db)).map((row) => [row.name, row]))
  }

  async #view(
    target: SwitchTarget,
    controls: Map<string, QueueControlRow>,
    senderIds: string[],
  ): Promise<QueueView> {
    const control = controls.get(target.name)
    const paused = control?.paused ?? false
    const allPaused = controls.get(ALL_MESSAGES_SWITCH)?.paused ?? false
    let held = paused
    let counts: QueueCounts
    if (target.kind === 'email' || target.kind === 'webhooks') {
      // What holds for the workers is BullMQ's own flag, in Redis.
      ;[held, counts] = await this.withQueue(target.kind, (queue) =>
        Promise.all([queue.isPaused(), countsOf(queue)]),
      )
    } else if (target.kind === 'sender') {
      const sender = target.sender as NonNullable<SwitchTarget['sender']>
      held = paused || allPaused || sender.state !== 'active'
      counts = await this.#senderCounts(sender.id)
    } else {
      counts = sum(await Promise.all(senderIds.map((id) => this.#senderCounts(id))))
    }
    return {
      name: target.name,
      kind: target.kind,
      senderId: target.sender?.id ?? null,
      queue:
        target.kind === 'messages'
          ? null
          : target.kind === 'sender'
            ? senderQueueName((target.sender as { id: string }).id)
            : target.kind,
      paused,
      held,
      switchedBy: control?.actor ?? null,
      reason: control?.reason ?? null,
      switchedAt: control?.updatedAt.toISOString() ?? null,
      counts,
    }
  }

  async #senderCounts(senderId: string): Promise<QueueCounts> {
    const [counts, waitingAdmission] = await Promise.all([
      countsOf(this.#deps.messages.queue(senderId)),
      this.#deps.redis.hlen(fairKeys(this.#deps.config.QUEUE_PREFIX, senderId).jobs),
    ])
    return { ...counts, waitingAdmission }
  }

  async close(): Promise<void> {
    await Promise.all([...this.#queues.values()].map((queue) => queue.close().catch(() => {})))
  }
}

async function countsOf(queue: Queue): Promise<QueueCounts> {
  const counts = await queue.getJobCounts(...COUNTED)
  const n = (state: (typeof COUNTED)[number]) => counts[state] ?? 0
  return {
    waiting: n('waiting'),
    active: n('active'),
    delayed: n('delayed'),
    failed: n('failed'),
    prioritized: n('prioritized'),
  }
}

function sum(all: QueueCounts[]): QueueCounts {
  const total: Required<QueueCounts> = {
    waiting: 0,
    active: 0,
    delayed: 0,
    failed: 0,
    prioritized: 0,
    waitingAdmission: 0,
  }
  for (const counts of all) {
    for (const key of Object.keys(total) as (keyof QueueCounts)[]) total[key] += counts[key] ?? 0
  }
  return total
}

/** One switchboard per API instance, closed with it. */
export const queueSwitchboard = fp(
  async (app: FastifyInstance) => {
    const switchboard = new QueueSwitchboard(app.deps)
    app.decorate('queueSwitchboard', switchboard)
    app.addHook('onClose', () => switchboard.close())
  },
  { name: 'queue-switchboard' },
)
