import Type, { type Static } from 'typebox'

/**
 * The incident switches (`POST /api/admin/queues/:name/pause` and `/resume`), by name:
 * - `messages`: every message delivery, on every sender, whatever the queue layout;
 * - `messages.<senderId>`: one sender's delivery (`messages.default` for the environment's sender,
 *   whose BullMQ queue is historically called `messages`);
 * - `email` and `webhooks`: those BullMQ queues.
 * Accepting goes on while a switch is off: messages stay `queued`.
 */
export const ALL_MESSAGES_SWITCH = 'messages'
export const SWITCH_KINDS = ['messages', 'sender', 'email', 'webhooks'] as const
export type SwitchKind = (typeof SWITCH_KINDS)[number]

const SENDER_SWITCH_PREFIX = 'messages.'
export const senderSwitchName = (senderId: string) => `${SENDER_SWITCH_PREFIX}${senderId}`

/** What a switch name stands for, or undefined for a name that is none. */
export function parseSwitchName(name: string): { kind: SwitchKind; senderId: string | null } | undefined {
  if (name === 'messages' || name === 'email' || name === 'webhooks') return { kind: name, senderId: null }
  if (name.startsWith(SENDER_SWITCH_PREFIX) && name.length > SENDER_SWITCH_PREFIX.length) {
    return { kind: 'sender', senderId: name.slice(SENDER_SWITCH_PREFIX.length) }
  }
  return undefined
}

export const QueueNameParams = Type.Object({ name: Type.String({ maxLength: 100 }) })

export const QueueSwitchBody = Type.Object(
  {
    reason: Type.Optional(
      Type.String({ minLength: 1, maxLength: 500, description: 'Kept in the audit log' }),
    ),
  },
  { additionalProperties: false },
)
export type QueueSwitchBody = Static<typeof QueueSwitchBody>

const Count = Type.Integer({ minimum: 0 })
/** BullMQ's job counts (for `messages`, summed over every sender's queue). */
export const QueueCounts = Type.Object({
  waiting: Count,
  active: Count,
  delayed: Count,
  failed: Count,
  prioritized: Count,
  /** Messages accepted and waiting for their turn into the sender's queue (fair admission). */
  waitingAdmission: Type.Optional(Count),
})
export type QueueCounts = Static<typeof QueueCounts>

export const QueueView = Type.Object({
  name: Type.String(),
  kind: Type.Enum(SWITCH_KINDS),
  /** The sender, for a sender's queue. */
  senderId: Type.Union([Type.String(), Type.Null()]),
  /** The BullMQ queue's name (`null` for `messages`, which spans every sender's). */
  queue: Type.Union([Type.String(), Type.Null()]),
  /** The switch: paused by an admin. */
  paused: Type.Boolean(),
  /** Whether delivery from this queue is held now, by this switch or another (`messages`, the sender's state). */
  held: Type.Boolean(),
  /** Who last switched it, why and when (null: never switched). */
  switchedBy: Type.Union([Type.String(), Type.Null()]),
  reason: Type.Union([Type.String(), Type.Null()]),
  switchedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  counts: QueueCounts,
})
export type QueueView = Static<typeof QueueView>

export const QueueList = Type.Object({ data: Type.Array(QueueView) }, { additionalProperties: false })
export type QueueList = Static<typeof QueueList>
