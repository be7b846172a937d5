import type { CampaignRecipientState, CampaignStatus } from '@dispatch/contracts'
import type { Db } from '../client.ts'
import { campaignCounts } from '../queries/campaign-counts.ts'
import {
  campaignRecipientChunks,
  campaignRecipientsPage,
  cancelCampaign,
  createCampaign,
  findCampaign,
  listCampaigns,
  type NewCampaign,
  startCampaign,
  transitionCampaign,
} from '../queries/campaigns.ts'
import type { CampaignRow, campaigns } from '../schema/campaigns.ts'
import type { Caller } from './caller.ts'

/**
 * Campaigns as their controls and reads take them: one key's (`apiKeyId`: another key's id is not
 * found, as an unknown one), or every key's (an admin's, `apiKeyId` undefined).
 */
export function campaignStore(db: Db, apiKeyId: string | undefined) {
  return {
    find: (id: string) => findCampaign(db, id, apiKeyId),
    transition: (
      id: string,
      from: readonly CampaignStatus[],
      to: CampaignStatus,
      at: Date,
      set?: Partial<typeof campaigns.$inferInsert>,
    ) => transitionCampaign(db, id, from, to, at, { apiKeyId, ...(set ? { set } : {}) }),
    /** Starts (or resumes) the campaign from one of `from`; see `startCampaign`. */
    start: (id: string, from: readonly CampaignStatus[], at: Date) =>
      startCampaign(db, id, from, at, apiKeyId),
    cancel: (id: string, at: Date) => cancelCampaign(db, id, at, apiKeyId),
    counts: (campaign: CampaignRow) => campaignCounts(db, campaign),
    recipients: (
      campaign: CampaignRow,
      options: { state?: CampaignRecipientState | undefined; after?: number | undefined; take: number },
    ) => campaignRecipientsPage(db, campaign, options),
    recipientChunks: (campaign: CampaignRow, state?: CampaignRecipientState) =>
      campaignRecipientChunks(db, campaign, state),
  }
}
export type CampaignStore = ReturnType<typeof campaignStore>

/**
 * A key's campaigns: created in its name (its tenant and sender recorded), read and changed only by
 * it. Another key's campaign id is not found, as an unknown one.
 */
export function ownedCampaigns(db: Db, caller: Caller) {
  return {
    ...campaignStore(db, caller.apiKeyId),
    create: (entry: Omit<NewCampaign, 'apiKeyId' | 'tenantId' | 'senderId'>, at: Date) =>
      createCampaign(
        db,
        { ...entry, apiKeyId: caller.apiKeyId, tenantId: caller.tenantId, senderId: caller.senderId },
        at,
      ),
    list: (status?: CampaignStatus) =>
      listCampaigns(db, { apiKeyId: caller.apiKeyId, ...(status ? { status } : {}) }),
  }
}
