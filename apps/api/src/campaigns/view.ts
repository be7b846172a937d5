import type { Campaign } from '@dispatch/contracts'
import type { CampaignRow, CampaignTally } from '@dispatch/db'

const iso = (at: Date | null) => (at ? at.toISOString() : null)

/** A campaign as the API answers it, with its recipients counted by state. */
export const toCampaignView = (row: CampaignRow, counted: CampaignTally): Campaign => ({
  id: row.id,
  name: row.name,
  apiKeyId: row.apiKeyId,
  senderId: row.senderId,
  template: row.template,
  status: row.status,
  startAt: iso(row.startAt),
  validitySeconds: row.validitySeconds,
  quietHours: row.quietHours,
  audience: row.audience,
  counts: counted.counts,
  failedByCode: counted.failedByCode,
  pricing: counted.pricing,
  engagement: counted.engagement,
  // Said while it is so: a paused campaign, or one past its wait, is not waiting for it.
  waitingFor:
    row.status === 'running' && row.waitingFor && row.waitingUntil && row.waitingUntil.getTime() > Date.now()
      ? { reason: row.waitingFor, until: row.waitingUntil.toISOString() }
      : null,
  createdAt: row.createdAt.toISOString(),
  startedAt: iso(row.startedAt),
  completedAt: iso(row.completedAt),
  canceledAt: iso(row.canceledAt),
})
