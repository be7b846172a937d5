import type { Caller } from './caller.ts'

/** A key route asked for a tenant's rows it may not read: answered `403 TENANT_FORBIDDEN`. */
export class TenantForbidden extends Error {
  readonly code = 'TENANT_FORBIDDEN'
}

/**
 * The tenant a caller acts for: always its key's own. A key bound to no tenant has none, and a
 * `tenantId` parameter naming another tenant is refused, never honoured: one tenant's key cannot
 * reach another's records. The one place this rule lives; every tenant-owned part of `owned(...)`
 * takes its filter from here.
 */
export function tenantOf(caller: Caller, requested?: string): string {
  const own = caller.tenantId
  if (!own) throw new TenantForbidden('The API key is bound to no tenant; an admin sets one at approval')
  if (requested !== undefined && requested !== own) {
    throw new TenantForbidden(`The API key may not access tenant ${JSON.stringify(requested)}`)
  }
  return own
}
