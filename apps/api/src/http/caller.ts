import { DEFAULT_SENDER_ID } from '@dispatch/contracts'
import type { Caller } from '@dispatch/db'
import type { FastifyRequest } from 'fastify'

/**
 * Who a key route acts for, as the owned data layer takes it (`owned(db, callerOf(request))`): the
 * key, its tenant and its sender. Key routes reach rows through that layer only, which also holds
 * the tenant rule (`owned(...).tenant()`: a key without a tenant, or a `tenantId` naming another,
 * is `403 TENANT_FORBIDDEN`).
 */
export const callerOf = (request: FastifyRequest): Caller => ({
  apiKeyId: request.apiKey.id,
  tenantId: request.apiKey.tenantId,
  senderId: request.apiKey.senderId ?? DEFAULT_SENDER_ID,
})
