import { CAMPAIGN_AUDIENCE_UPLOAD_STATUSES } from '@dispatch/contracts'
import { findCampaign, recordAdminAction, replaceCampaignAudience, skippedAudienceRows } from '@dispatch/db'
import { suppressionOwner } from '@dispatch/runtime'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import {
  AUDIENCE_UPLOAD_DESCRIPTION,
  audienceUploadSchema,
  SKIPPED_REPORT_DESCRIPTION,
  skippedReportSchema,
} from '../../campaigns/audience/route-schemas.ts'
import { skippedReport } from '../../campaigns/audience/skipped-report.ts'
import { audienceRoutesOf, uploadAudience } from '../../campaigns/audience/upload.ts'
import { AppError } from '../../errors.ts'
import { sendDownload } from '../../http/download.ts'

/**
 * The audience routes of any key's campaign, for admins (`/api/admin/campaigns/:campaignId/…`):
 * judged as its key's upload would be (its tenant's suppression entries block), and audited.
 */
export const adminCampaignAudienceRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { db } = app.deps
  const deps = audienceRoutesOf(app)

  app.put(
    '/campaigns/:campaignId/audience',
    {
      schema: {
        operationId: 'adminUploadCampaignAudience',
        tags: ['campaigns'],
        summary: "Upload (or replace) any campaign's audience: CSV or NDJSON",
        description: `${AUDIENCE_UPLOAD_DESCRIPTION} Judged against the suppression entries of the campaign's key's tenant. Audited.`,
        ...audienceUploadSchema,
      },
    },
    async (request) => {
      const { campaignId } = request.params
      const campaign = await findCampaign(db, campaignId)
      const owner = campaign && suppressionOwner({ apiKeyId: campaign.apiKeyId, tenantId: campaign.tenantId })
      const uploaded = await uploadAudience(deps, request, campaignId, campaign, (rows, options) =>
        replaceCampaignAudience(db, { campaignId, from: CAMPAIGN_AUDIENCE_UPLOAD_STATUSES }, rows, {
          ...options,
          consent: { ...options.consent, owner: owner ?? '' },
        }),
      )
      const { rows, taken, skipped, format } = uploaded.audience
      await recordAdminAction(db, {
        actor: request.adminName,
        action: 'campaign.audience.upload',
        targetType: 'campaign',
        targetId: campaignId,
        details: { rows, taken, skipped, format },
      })
      return uploaded
    },
  )

  app.get(
    '/campaigns/:campaignId/skipped',
    {
      schema: {
        operationId: 'adminGetCampaignSkippedLines',
        tags: ['campaigns'],
        summary: "The skipped lines of any campaign's audience (CSV)",
        description: `${SKIPPED_REPORT_DESCRIPTION} Audited.`,
        ...skippedReportSchema,
      },
    },
    async (request, reply) => {
      const { campaignId } = request.params
      const campaign = await findCampaign(db, campaignId)
      if (!campaign) throw new AppError('NOT_FOUND', `Campaign ${campaignId} not found`)
      // The report holds the lines as uploaded (phones, variables): who read it is recorded.
      await recordAdminAction(db, {
        actor: request.adminName,
        action: 'campaign.skipped.read',
        targetType: 'campaign',
        targetId: campaignId,
      })
      return sendDownload(reply, request.log, {
        text: skippedReport((after, take) => skippedAudienceRows(db, campaign.id, after, take)),
        type: 'text/csv; charset=utf-8',
        filename: `campaign-${campaign.id}-skipped.csv`,
        what: 'skipped lines report',
      })
    },
  )
}
