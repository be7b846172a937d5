import Type, { type Static } from 'typebox'
import { PathId } from './ids.ts'
import { DataEnvelope, listQueryProperties } from './paging.ts'
import { SENDER_POOL_MAX_MEMBERS } from './pool-limits.ts'
import { SENDER_STATES, SenderHealth } from './senders.ts'

export { SENDER_POOL_MAX_MEMBERS }
export const SENDER_POOL_MAX_WEIGHT = 1000

const DateTime = Type.String({ format: 'date-time' })
const PoolName = Type.String({ minLength: 1, maxLength: 200, pattern: '\\S' })

/** Why a member takes no new recipients (docs/sender-pools.md, "Health: who is in rotation"). */
export const POOL_EXCLUSION_REASONS = [
  'paused',
  'needs_attention',
  'account_banned',
  'account_restricted',
  'account_disconnected',
  'quality_red',
  'flagged',
  'rate_limited',
] as const
export type PoolExclusionReason = (typeof POOL_EXCLUSION_REASONS)[number]

export const SenderPoolMemberInput = Type.Object(
  {
    senderId: Type.String({ minLength: 1, maxLength: 64, description: '`default`, or an admin sender’s id' }),
    weight: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: SENDER_POOL_MAX_WEIGHT,
        default: 1,
        description: 'Its share of new recipients among the healthy members (default 1)',
      }),
    ),
  },
  { additionalProperties: false },
)
export type SenderPoolMemberInput = Static<typeof SenderPoolMemberInput>

const Members = Type.Array(SenderPoolMemberInput, {
  minItems: 1,
  maxItems: SENDER_POOL_MAX_MEMBERS,
  description:
    'The members in order (the first is where a key bound to the pool lands when it names none); ' +
    'all of one business portfolio, each sender at most once',
})

export const CreateSenderPoolBody = Type.Object(
  { name: PoolName, members: Members },
  { additionalProperties: false },
)
export type CreateSenderPoolBody = Static<typeof CreateSenderPoolBody>

export const UpdateSenderPoolBody = Type.Object(
  {
    name: Type.Optional(PoolName),
    members: Type.Optional(Type.Array(SenderPoolMemberInput, { ...Members, minItems: 1 })),
  },
  { additionalProperties: false, minProperties: 1 },
)
export type UpdateSenderPoolBody = Static<typeof UpdateSenderPoolBody>

export const SenderPoolIdParams = Type.Object({ id: PathId("A sender pool's id") })

export const SenderPoolMemberView = Type.Object({
  senderId: Type.String(),
  position: Type.Integer({ minimum: 0 }),
  weight: Type.Integer({ minimum: 1 }),
  displayName: Type.String(),
  displayPhoneNumber: Type.Union([Type.String(), Type.Null()]),
  wabaId: Type.Union([Type.String(), Type.Null()]),
  /** Its business portfolio (`business:<id>`, `waba:<id>` or `sender:<id>`), as the messaging limit counts it. */
  portfolio: Type.String(),
  state: Type.Enum(SENDER_STATES),
  health: SenderHealth,
  /** Whether it takes new recipients now, by its row's health (a 130429 pause is not read here). */
  inRotation: Type.Boolean(),
  /** Why not, when it does not. */
  outOfRotation: Type.Union([Type.Enum(POOL_EXCLUSION_REASONS), Type.Null()]),
})
export type SenderPoolMemberView = Static<typeof SenderPoolMemberView>

export const SenderPoolView = Type.Object({
  id: Type.String({ format: 'uuid' }),
  name: Type.String(),
  /** The members' business portfolio (the first member's, should a member's have changed since). */
  portfolio: Type.String(),
  members: Type.Array(SenderPoolMemberView),
  /** API keys bound to it: it cannot be deleted while any is. */
  boundKeys: Type.Integer({ minimum: 0 }),
  createdAt: DateTime,
  updatedAt: DateTime,
})
export type SenderPoolView = Static<typeof SenderPoolView>

export const SenderPoolListQuery = Type.Object(
  {
    order: listQueryProperties.order,
    page: listQueryProperties.page,
    take: listQueryProperties.take,
    q: Type.Optional(Type.String({ maxLength: 200, description: 'A part of the name' })),
    orderField: Type.Enum(['createdAt', 'name'], { default: 'createdAt' }),
  },
  { additionalProperties: false },
)
export type SenderPoolListQuery = Static<typeof SenderPoolListQuery>

export const SenderPoolList = DataEnvelope(SenderPoolView)
export type SenderPoolList = Static<typeof SenderPoolList>

/** Redis pub/sub channel (under the queue prefix): a pool was created, changed or deleted (its id). */
export const SENDER_POOL_CHANGES_CHANNEL = 'sender-pools:changed'

/**
 * Redis pub/sub channel (under the queue prefix): a worker paused a sender for the platform's rate
 * limit (130429). Message: `<senderId> <streak start ms> <pause end ms>`.
 */
export const SENDER_RATE_LIMITS_CHANNEL = 'senders:rate-limited'
