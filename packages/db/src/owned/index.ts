import type { Db } from '../client.ts'
import { type Caller, ownerOf } from './caller.ts'
import { ownedCampaignAudience } from './campaign-audience.ts'
import { ownedCampaigns } from './campaigns.ts'
import { ownedCatalog } from './catalog.ts'
import { ownedErasures } from './erasures.ts'
import { ownedExport } from './export.ts'
import { ownedKits } from './kits.ts'
import { ownedMedia } from './media.ts'
import { ownedMessages } from './messages.ts'
import { ownedOrders } from './orders.ts'
import { ownedSender } from './sender.ts'
import { ownedSuppressions } from './suppressions.ts'
import { ownedTemplates } from './templates.ts'
import { tenantOf } from './tenant.ts'
import { ownedWebhooks } from './webhooks.ts'

/** The data access of one key route's caller: nothing of another tenant (or key) is reachable. */
export function owned(db: Db, caller: Caller) {
  return {
    owner: ownerOf(caller),
    /**
     * The caller's tenant, `requested` naming it or nothing: else `TenantForbidden`. Every
     * tenant-owned part below checks it itself; a route calls it first only to refuse before its
     * own checks of the request.
     */
    tenant: (requested?: string) => tenantOf(caller, requested),
    suppressions: ownedSuppressions(db, caller),
    exportPages: ownedExport(db, caller),
    erasures: ownedErasures(db, caller),
    webhooks: ownedWebhooks(db, caller),
    messages: ownedMessages(db, caller),
    orders: ownedOrders(db, caller),
    kits: ownedKits(db, caller),
    catalog: ownedCatalog(db, caller),
    templates: ownedTemplates(db, caller),
    media: ownedMedia(db, caller),
    sender: ownedSender(db, caller),
    campaigns: ownedCampaigns(db, caller),
    campaignAudience: ownedCampaignAudience(db, caller),
  }
}
export type Owned = ReturnType<typeof owned>

export { type Caller, ownerOf, sendersOf } from './caller.ts'
export { type CampaignStore, campaignStore } from './campaigns.ts'
export { TenantForbidden } from './tenant.ts'
