import { Scopes } from '@dispatch/contracts'
import { owned } from '@dispatch/db'
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
import { callerOf } from '../../http/caller.ts'
import { sendDownload } from '../../http/download.ts'

/**
 * `PUT /api/third-party/campaigns/:campaignId/audience` and the skipped lines' report, on the key's
 * own campaigns. The upload streams from the socket through the judge into Postgres' COPY, so it
 * holds a chunk at a time (apps/api/src/campaigns/audience/). Its scope parses CSV and NDJSON only.
 */
export const campaignAudienceRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { db } = app.deps
  const deps = audienceRoutesOf(app)

  app.put(
    '/campaigns/:campaignId/audience',
    {
      config: { scope: Scopes.manageCampaigns },
      schema: {
        operationId: 'uploadCampaignAudience',
        tags: ['campaigns'],
        summary: "Upload (or replace) a campaign's audience: CSV or NDJSON",
        description: `Requires \`manage:campaigns\`. ${AUDIENCE_UPLOAD_DESCRIPTION}`,
        ...audienceUploadSchema,
      },
    },
    async (request) => {
      const { campaignId } = request.params
      const own = owned(db, callerOf(request))
      const campaign = await own.campaigns.find(campaignId)
      return uploadAudience(deps, request, campaignId, campaign, (rows, options) =>
        own.campaignAudience.replace(campaignId, rows, options),
      )
    },
  )

  app.get(
    '/campaigns/:campaignId/skipped',
    {
      config: { scope: Scopes.manageCampaigns },
      schema: {
        operationId: 'getCampaignSkippedLines',
        tags: ['campaigns'],
        summary: "The skipped lines of a campaign's audience (CSV)",
        description: `Requires \`manage:campaigns\`. ${SKIPPED_REPORT_DESCRIPTION}`,
        ...skippedReportSchema,
      },
    },
    async (request, reply) => {
      const { campaignId } = request.params
      const own = owned(db, callerOf(request))
      const campaign = await own.campaigns.find(campaignId)
      if (!campaign) throw new AppError('NOT_FOUND', `Campaign ${campaignId} not found`)
      return sendDownload(reply, request.log, {
        text: skippedReport((after, take) => own.campaignAudience.skippedRows(campaign, after, take)),
        type: 'text/csv; charset=utf-8',
        filename: `campaign-${campaign.id}-skipped.csv`,
        what: 'skipped lines report',
      })
    },
  )
}
