import { DEFAULT_SENDER_ID } from '@dispatch/contracts'
import type { Caller } from '@dispatch/db'
import type { FastifyRequest } from 'fastify'
import type { SenderPoolCache } from '../sending/pools/pool-cache.ts'

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

/**
 * `callerOf`, with a pooled key's pool's members as this process has the pool loaded: for what
 * holds its sends on every member (its tenant's opt-outs there, which it lists, lifts and exports;
 * the members' template catalogs, which it lists).
 */
export const pooledCallerOf = (request: FastifyRequest, pools: SenderPoolCache): Caller => {
  const caller = callerOf(request)
  const poolId = request.apiKey.senderPoolId
  const pool = poolId ? pools.get(poolId) : undefined
  return pool ? { ...caller, poolSenderIds: pool.members.map((m) => m.senderId) } : caller
}
