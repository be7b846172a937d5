import { CAMPAIGN_AUDIENCE_UPLOAD_STATUSES } from '@dispatch/contracts'
import type { Db } from '../client.ts'
import {
  type AudienceBatch,
  type AudienceConsent,
  replaceCampaignAudience,
  skippedAudienceRows,
} from '../queries/campaign-audience.ts'
import type { CampaignRow } from '../schema/campaigns.ts'
import type { Caller } from './caller.ts'
import { ownerOf } from './caller.ts'

/**
 * A key's campaigns' audiences: uploaded to its own campaigns only (another key's id is not found),
 * judged against its own tenant's suppression entries besides the recipients' own and the service's.
 */
export function ownedCampaignAudience(db: Db, caller: Caller) {
  return {
    replace: (
      campaignId: string,
      rows: AsyncIterable<AudienceBatch>,
      options: {
        format: 'csv' | 'ndjson'
        consent: Omit<AudienceConsent, 'owner'>
        at: Date
      },
    ) =>
      replaceCampaignAudience(
        db,
        { campaignId, apiKeyId: caller.apiKeyId, from: CAMPAIGN_AUDIENCE_UPLOAD_STATUSES },
        rows,
        { ...options, consent: { ...options.consent, owner: ownerOf(caller) } },
      ),
    /** A campaign's skipped rows (`campaigns.find`'s row; another key's has none here). */
    skippedRows: async (campaign: CampaignRow, after: number, take: number) =>
      campaign.apiKeyId === caller.apiKeyId ? skippedAudienceRows(db, campaign.id, after, take) : [],
  }
}
