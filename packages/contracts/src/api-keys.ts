import Type, { type Static } from 'typebox'
import { DataEnvelope, listQueryProperties } from './paging.ts'
import { SCOPE_PATTERN } from './scopes.ts'

export const API_KEY_STATUSES = ['pending', 'approved', 'rejected', 'revoked'] as const
export const ApiKeyStatus = Type.Enum(API_KEY_STATUSES)
export type ApiKeyStatus = (typeof API_KEY_STATUSES)[number]

export const APP_ENVS = ['development', 'production'] as const
export type AppEnv = (typeof APP_ENVS)[number]

const Id = Type.String({ format: 'uuid' })
const DateTime = Type.String({ format: 'date-time' })
const TenantId = Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9][A-Za-z0-9._-]*$' })
const Scope = Type.String({ pattern: SCOPE_PATTERN, maxLength: 100 })
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

/** What the calling key learns about itself at `GET /api/api-keys/me`. */
export const ApiKeySelf = Type.Object({
  id: Id,
  clientName: Type.String(),
  keyPrefix: Type.String(),
  scopes: Type.Array(Type.String()),
  tenantId: Type.Union([Type.String(), Type.Null()]),
  status: ApiKeyStatus,
  environment: Type.String(),
  createdAt: DateTime,
})
export type ApiKeySelf = Static<typeof ApiKeySelf>

export const ApiKeyAuditEntry = Type.Object({
  actor: Type.String(),
  fromStatus: ApiKeyStatus,
  toStatus: ApiKeyStatus,
  reason: Type.Union([Type.String(), Type.Null()]),
  createdAt: DateTime,
})

/** An API key as admins see it: everything but the secret and its hash. */
export const ApiKeyAdminView = Type.Object({
  ...ApiKeySelf.properties,
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

export const ApiKeyIdParams = Type.Object({ id: Type.String() })

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
