import type { ChannelListQuery, ProductListQuery, ProjectListQuery } from '@dispatch/contracts'
import type { Db } from '../client.ts'
import { listChannels, listProducts, listProjects } from '../queries/catalog.ts'
import type { Caller } from './caller.ts'
import { tenantOf } from './tenant.ts'

/**
 * The catalog a key reads: its tenant's projects and products, and the channels, which are shared
 * reference data (CONTRACT.md): any key lists them, and a `tenantId` filter (those its tenant's
 * projects use) may only name the caller's own tenant, the filter then taken from the caller.
 */
export function ownedCatalog(db: Db, caller: Caller) {
  return {
    channels: async (query: ChannelListQuery) =>
      listChannels(
        db,
        query.tenantId === undefined ? query : { ...query, tenantId: tenantOf(caller, query.tenantId) },
      ),
    projects: async (query: ProjectListQuery) => listProjects(db, tenantOf(caller, query.tenantId), query),
    products: async (query: ProductListQuery) => listProducts(db, tenantOf(caller, query.tenantId), query),
  }
}
