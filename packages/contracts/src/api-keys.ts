import Type, { type Static } from 'typebox'
import { PathId } from './ids.ts'
import { DataEnvelope, listQueryProperties } from './paging.ts'
import { QuietHours } from './quiet-hours.ts'
import { ContentRetention } from './redaction.ts'
import { SCOPE_PATTERN } from './scopes.ts'

export const API_KEY_STATUSES = ['pending', 'approved', 'rejected', 'revoked'] as const
export const ApiKeyStatus = Type.Enum(API_KEY_STATUSES)
export type ApiKeyStatus = (typeof API_KEY_STATUSES)[number]

export const APP_ENVS = ['development', 'production'] as const
export type AppEnv = (typeof APP_ENVS)[number]

const Id = Type.String({ format: 'uuid' })
const DateTime = Type.String({ format: 'date-time' })
const TenantId = Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9][A-Za-z0-9._-]*$' })
const Scope = Type.String({
  pattern: SCOPE_PATTERN,
  maxLength: 100,
  description: '`verb:noun`, such as `send:template`. No wildcard: `send:*` does not exist.',
})
const ClientName = Type.String({ minLength: 1, maxLength: 200, pattern: '\\S' })
const Email = Type.String({ format: 'email', maxLength: 254 })
const Reason = Type.String({ minLength: 1, maxLength: 1000, pattern: '\\S' })

export const ApiKeyRequestBody = Type.Object(
  {
    clientName: ClientName,
    email: Email,
    scopes: Type.Array(Scope, { minItems: 1, maxItems: 50, uniqueItems: true }),
    tenantId: Type.Optional(TenantId),
  },
  { additionalProperties: false },
)
export type ApiKeyRequestBody = Static<typeof ApiKeyRequestBody>

/** The answer to a key request: the only time the key value is ever shown. */
export const ApiKeyCreated = Type.Object({
  id: Id,
  key: Type.String({ description: 'The secret key. Shown this once; store it now.' }),
  status: Type.Literal('pending'),
  clientName: Type.String(),
  email: Type.String(),
  scopes: Type.Array(Type.String()),
  tenantId: Type.Null({ description: 'The bound tenant: none until an admin binds one at approval.' }),
  requestedTenantId: Type.Union([Type.String(), Type.Null()], {
    description: 'The tenant asked for; an admin decides at approval whether to bind it.',
  }),
  createdAt: DateTime,
})
export type ApiKeyCreated = Static<typeof ApiKeyCreated>

/** What an admin sets on a key at `PATCH /api/admin/api-keys/:id`; null falls back to the default. */
export const ApiKeyLimits = Type.Object({
  /** The sender its messages go out through; null: the default sender. */
  senderId: Type.Union([Type.String(), Type.Null()]),
  /** Messages per second; null: the service's MESSAGE_RATE_PER_SECOND. */
  ratePerSecond: Type.Union([Type.Integer(), Type.Null()]),
  /** Messages per UTC day; null: no quota. */
  dailyQuota: Type.Union([Type.Integer(), Type.Null()]),
  /** May send with `priority: "high"`. */
  transactional: Type.Boolean(),
  /** Its messages wait out the recipient's quiet hours (a send's own `quietHours` replaces these); null: none. */
  quietHours: Type.Union([QuietHours, Type.Null()]),
  /** How long its messages' content is kept in Postgres: `retain`, `discard` or hours (docs/operations.md). */
  contentRetention: ContentRetention,
})
export type ApiKeyLimits = Static<typeof ApiKeyLimits>

const KeyFields = {
  id: Id,
  clientName: Type.String(),
  keyPrefix: Type.String(),
  scopes: Type.Array(Type.String()),
  tenantId: Type.Union([Type.String(), Type.Null()]),
  status: ApiKeyStatus,
  environment: Type.String(),
  createdAt: DateTime,
}

/** What the calling key learns about itself at `GET /api/api-keys/me`. */
export const ApiKeySelf = Type.Object({
  ...KeyFields,
  limits: Type.Object({
    ...ApiKeyLimits.properties,
    /** The rate in force: the key's own, or the service's default. */
    effectiveRatePerSecond: Type.Integer(),
  }),
  usage: Type.Object({
    /** Messages accepted today (UTC), counted against `dailyQuota`. */
    today: Type.Integer({ minimum: 0 }),
    /** Null without a quota. */
    remainingToday: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()]),
    /** When today's count starts again: the next midnight UTC. */
    resetsAt: DateTime,
  }),
})
export type ApiKeySelf = Static<typeof ApiKeySelf>

/** `PATCH /api/admin/api-keys/:id`: any of the limits; null resets one to the service's default. */
export const UpdateApiKeyBody = Type.Object(
  {
    senderId: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 64 }), Type.Null()])),
    senderPoolId: Type.Optional(
      Type.Union([Type.String({ format: 'uuid' }), Type.Null()], {
        description:
          "The sender pool the key is bound to (docs/sender-pools.md); null: none. The key's `senderId` " +
          'must be a member: binding a pool without naming a sender moves a key whose sender is not one to ' +
          "the pool's first member.",
      }),
    ),
    ratePerSecond: Type.Optional(Type.Union([Type.Integer({ minimum: 1, maximum: 100_000 }), Type.Null()])),
    dailyQuota: Type.Optional(
      Type.Union([Type.Integer({ minimum: 1, maximum: 1_000_000_000 }), Type.Null()]),
    ),
    transactional: Type.Optional(Type.Boolean()),
    quietHours: Type.Optional(Type.Union([QuietHours, Type.Null()])),
    contentRetention: Type.Optional(ContentRetention),
  },
  { additionalProperties: false, minProperties: 1 },
)
export type UpdateApiKeyBody = Static<typeof UpdateApiKeyBody>

export const ApiKeyAuditEntry = Type.Object({
  actor: Type.String(),
  fromStatus: ApiKeyStatus,
  toStatus: ApiKeyStatus,
  reason: Type.Union([Type.String(), Type.Null()]),
  /** A limits change (`PATCH`): each changed field's value before and after; null for a decision. */
  changes: Type.Union([
    Type.Record(Type.String(), Type.Object({ from: Type.Unknown(), to: Type.Unknown() })),
    Type.Null(),
  ]),
  createdAt: DateTime,
})

/** An API key as admins see it: everything but the secret and its hash. */
export const ApiKeyAdminView = Type.Object({
  ...KeyFields,
  ...ApiKeyLimits.properties,
  /** The sender pool it is bound to (admin-only: a key does not see it); null: none. */
  senderPoolId: Type.Union([Type.String({ format: 'uuid' }), Type.Null()]),
  requestedTenantId: Type.Union([Type.String(), Type.Null()], {
    description: 'The tenant the requester asked for; `tenantId` is the one an admin bound.',
  }),
  email: Type.String(),
  statusReason: Type.Union([Type.String(), Type.Null()]),
  decidedBy: Type.Union([Type.String(), Type.Null()]),
  decidedAt: Type.Union([DateTime, Type.Null()]),
  updatedAt: DateTime,
})
export type ApiKeyAdminView = Static<typeof ApiKeyAdminView>

export const ApiKeyAdminDetail = Type.Object({
  ...ApiKeyAdminView.properties,
  history: Type.Array(ApiKeyAuditEntry),
  /** Today's usage, as the key itself sees it in `GET /api/api-keys/me`. */
  usage: ApiKeySelf.properties.usage,
})
export type ApiKeyAdminDetail = Static<typeof ApiKeyAdminDetail>

export const API_KEY_ORDER_FIELDS = ['createdAt', 'updatedAt', 'clientName', 'status'] as const

export const ApiKeyListQuery = Type.Object(
  {
    ...listQueryProperties,
    orderField: Type.Enum(API_KEY_ORDER_FIELDS, { default: 'createdAt' }),
    status: Type.Optional(ApiKeyStatus),
    // `tenantId` (from the common parameters) filters on the bound tenant; this one on the request.
    requestedTenantId: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  },
  { additionalProperties: false },
)
export type ApiKeyListQuery = Static<typeof ApiKeyListQuery>

export const ApiKeyList = DataEnvelope(ApiKeyAdminView)
export type ApiKeyList = Static<typeof ApiKeyList>

export const ApiKeyIdParams = Type.Object({ id: PathId('The key id') })

/** Approval binds the key to `tenantId` when the admin names one; without it, to no tenant. */
export const ApproveApiKeyBody = Type.Object(
  { tenantId: Type.Optional(TenantId) },
  { additionalProperties: false },
)
export type ApproveApiKeyBody = Static<typeof ApproveApiKeyBody>

export const RejectApiKeyBody = Type.Object({ reason: Reason }, { additionalProperties: false })
export type RejectApiKeyBody = Static<typeof RejectApiKeyBody>

export const RevokeApiKeyBody = Type.Object(
  { reason: Type.Optional(Reason) },
  { additionalProperties: false },
)
export type RevokeApiKeyBody = Static<typeof RevokeApiKeyBody>

/** The only transitions the spec allows; anything else is `INVALID_STATE_TRANSITION`. */
export const API_KEY_TRANSITIONS = {
  approve: { from: 'pending', to: 'approved' },
  reject: { from: 'pending', to: 'rejected' },
  revoke: { from: 'approved', to: 'revoked' },
} as const satisfies Record<string, { from: ApiKeyStatus; to: ApiKeyStatus }>
export type ApiKeyDecision = keyof typeof API_KEY_TRANSITIONS

/** Daily quotas run per UTC day: the moment the current one ends. */
export function nextUtcMidnight(now: Date): Date {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1))
}
