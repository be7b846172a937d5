import type { Campaign, CampaignRecipientState } from '@dispatch/contracts'
import { api } from '../../api.ts'

export type CampaignAction = 'start' | 'pause' | 'resume' | 'cancel'

export interface RecipientsQuery {
  take: number
  after: number
  state?: CampaignRecipientState
}

/**
 * Where a campaign's page reads and acts: the key's own routes (the portal) or the admins' (the
 * console). The same page serves both; only the key uploads its audience, starts it, and sees its
 * sender's messaging limit.
 */
export interface CampaignSource {
  own: boolean
  /** The routes' prefix: the exports and the skipped report are links under it. */
  base: '/api/third-party/campaigns' | '/api/admin/campaigns'
  get: (id: string) => Promise<Campaign>
  recipients: (id: string, query: RecipientsQuery) => ReturnType<typeof keyRecipients>
  act: (id: string, action: CampaignAction) => Promise<Campaign>
}

const path = (campaignId: string) => ({ path: { campaignId } })

const keyRecipients = (campaignId: string, query: RecipientsQuery) =>
  api.GET('/api/third-party/campaigns/{campaignId}/recipients', { params: { ...path(campaignId), query } })

export const keyCampaigns: CampaignSource = {
  own: true,
  base: '/api/third-party/campaigns',
  get: (id) => api.GET('/api/third-party/campaigns/{campaignId}', { params: path(id) }),
  recipients: keyRecipients,
  act: (id, action) => {
    const init = { params: path(id) }
    if (action === 'start') return api.POST('/api/third-party/campaigns/{campaignId}/start', init)
    if (action === 'pause') return api.POST('/api/third-party/campaigns/{campaignId}/pause', init)
    if (action === 'resume') return api.POST('/api/third-party/campaigns/{campaignId}/resume', init)
    return api.POST('/api/third-party/campaigns/{campaignId}/cancel', init)
  },
}

export const adminCampaigns: CampaignSource = {
  own: false,
  base: '/api/admin/campaigns',
  get: (id) => api.GET('/api/admin/campaigns/{campaignId}', { params: path(id) }),
  recipients: (id, query) =>
    api.GET('/api/admin/campaigns/{campaignId}/recipients', { params: { ...path(id), query } }),
  act: (id, action) => {
    const init = { params: path(id) }
    if (action === 'pause') return api.POST('/api/admin/campaigns/{campaignId}/pause', init)
    if (action === 'resume') return api.POST('/api/admin/campaigns/{campaignId}/resume', init)
    if (action === 'cancel') return api.POST('/api/admin/campaigns/{campaignId}/cancel', init)
    return Promise.reject(new Error('Only the key starts its campaign.'))
  },
}
