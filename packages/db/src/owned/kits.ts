import type { KitListQuery } from '@dispatch/contracts'
import type { Db } from '../client.ts'
import { listKits } from '../queries/orders.ts'
import type { Caller } from './caller.ts'
import { tenantOf } from './tenant.ts'

/** The caller's tenant's kit records (a key without a tenant, or naming another: `TenantForbidden`). */
export function ownedKits(db: Db, caller: Caller) {
  return {
    list: async (query: KitListQuery) => listKits(db, tenantOf(caller, query.tenantId), query),
  }
}
