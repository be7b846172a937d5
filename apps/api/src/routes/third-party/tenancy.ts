import { DEFAULT_SENDER_ID } from '@dispatch/contracts'
import type { Caller } from '@dispatch/db'
import type { FastifyRequest, preValidationHookHandler } from 'fastify'
import { COMMA_LISTS } from '../../plugins/openapi-describe.ts'

/**
 * Array parameters accept `a=1&a=2` and `a=1,2` alike: commas are split before validation. The hook
 * names its parameters (`COMMA_LISTS`), so the OpenAPI document describes them as comma lists.
 */
export const splitCommaLists = (...names: string[]): preValidationHookHandler => {
  const split: preValidationHookHandler = async (request) => {
    const query = request.query as Record<string, unknown>
    for (const name of names) {
      const value = query[name]
      if (value === undefined) continue
      query[name] = (Array.isArray(value) ? value : [value])
        .flatMap((v) => String(v).split(','))
        .filter(Boolean)
    }
  }
  return Object.assign(split, { [COMMA_LISTS]: names })
}

export const security = [{ apiKey: [] }]

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
