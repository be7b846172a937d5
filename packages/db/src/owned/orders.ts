import type { OrderListQuery } from '@dispatch/contracts'
import type { Db } from '../client.ts'
import { type CreateOrderInput, createOrder } from '../queries/create-order.ts'
import { findOrder, listOrders } from '../queries/orders.ts'
import type { Caller } from './caller.ts'
import { tenantOf } from './tenant.ts'

/**
 * The caller's tenant's orders: listed, read and placed for that tenant only (another tenant's
 * order is as absent as a missing one), a new one recorded under the key. Every call refuses a key
 * without a tenant, and a `tenantId` naming another (`TenantForbidden`).
 */
export function ownedOrders(db: Db, caller: Caller) {
  return {
    list: async (query: OrderListQuery) => listOrders(db, tenantOf(caller, query.tenantId), query),
    find: async (orderId: string) => findOrder(db, tenantOf(caller), orderId),
    /** Placed with every check of `createOrder` (references, stock, serials, idempotency). */
    create: async (input: Omit<CreateOrderInput, 'tenantId' | 'apiKeyId'>) =>
      createOrder(db, { ...input, tenantId: tenantOf(caller), apiKeyId: caller.apiKeyId }),
  }
}
