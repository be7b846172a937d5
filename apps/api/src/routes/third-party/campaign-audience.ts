import { Readable } from 'node:stream'
import {
  CAMPAIGN_AUDIENCE_MAX_ROWS,
  CAMPAIGN_AUDIENCE_UPLOAD_STATUSES,
  CampaignAudienceUploaded,
  CampaignParams,
  DEFAULT_SENDER_ID,
  Scopes,
} from '@dispatch/contracts'
import { owned } from '@dispatch/db'
import { recipientHasher } from '@dispatch/runtime'
import { defaultPhoneNumberId } from '@dispatch/runtime/env'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import Type from 'typebox'
import { AUDIENCE_LIMITS, readAudience, tooManyBytes } from '../../campaigns/audience/read-audience.ts'
import { skippedReport } from '../../campaigns/audience/skipped-report.ts'
import { audienceTemplate } from '../../campaigns/audience/template-variables.ts'
import { acceptAudienceBodies, UploadBody } from '../../campaigns/audience/upload-body.ts'
import { AppError } from '../../errors.ts'
import { callerOf } from '../../http/caller.ts'
import { errorResponses } from '../../http/error-responses.ts'
import { STREAMED_BODY } from '../../plugins/openapi.ts'

const UPLOAD_DESCRIPTION =
  'Requires `manage:campaigns`. The body is the audience, streamed: CSV (`text/csv`, a header row naming ' +
  '`phone` or `userId`, optionally `clientReference` (ignored), and one column per body variable of the ' +
  'campaign\'s template) or NDJSON (`application/x-ndjson`, one `{"phone"|"userId", "variables": {…}}` a line). ' +
  `At most ${CAMPAIGN_AUDIENCE_MAX_ROWS.toLocaleString('en')} rows. Each row is judged as a send of it would be; a bad ` +
  'row is skipped with its line and reason (`invalid_recipient`, `invalid_variables`, `malformed_line`, `duplicate`, ' +
  '`opted_out`, `suppressed`), never the whole upload. A header that does not fit the template is 400. Only while ' +
  'the campaign is `draft` or `ready`; a new upload replaces the previous audience whole, and one cut off leaves it as it was.'

/** The answer before the body is read: the connection closes rather than read what is left of it. */
const refuse = (error: AppError) =>
  Object.assign(error, { headers: { ...error.headers, connection: 'close' } })

/**
 * `PUT /api/third-party/campaigns/:campaignId/audience` and the skipped lines' report. The upload
 * streams from the socket through the judge into Postgres' COPY, so it holds a chunk at a time
 * (apps/api/src/campaigns/audience/). Its own scope parses CSV and NDJSON only, as a stream.
 */
export const campaignAudienceRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { db, config, clock } = app.deps
  const hash = app.deps.recipientHash ?? recipientHasher(config)
  acceptAudienceBodies(app)

  app.put(
    '/campaigns/:campaignId/audience',
    {
      config: { scope: Scopes.manageCampaigns },
      schema: {
        operationId: 'uploadCampaignAudience',
        tags: ['campaigns'],
        summary: "Upload (or replace) a campaign's audience: CSV or NDJSON",
        description: UPLOAD_DESCRIPTION,
        params: CampaignParams,
        [STREAMED_BODY]: {
          'text/csv': { schema: Type.String() },
          'application/x-ndjson': { schema: Type.String() },
        },
        response: {
          200: CampaignAudienceUploaded,
          ...errorResponses(
            'VALIDATION_ERROR',
            'NOT_FOUND',
            'INVALID_STATE_TRANSITION',
            'PAYLOAD_TOO_LARGE',
            'UNSUPPORTED_MEDIA_TYPE',
            'TEMPLATE_NOT_FOUND',
            'TEMPLATE_NOT_APPROVED',
          ),
        },
      },
    },
    async (request) => {
      const { campaignId } = request.params
      const own = owned(db, callerOf(request))
      const campaign = await own.campaigns.find(campaignId)
      if (!campaign) throw refuse(new AppError('NOT_FOUND', `Campaign ${campaignId} not found`))
      const body = request.body as unknown
      if (!(body instanceof UploadBody)) {
        throw refuse(
          new AppError('UNSUPPORTED_MEDIA_TYPE', 'Content-Type must be text/csv or application/x-ndjson'),
        )
      }
      if (!(CAMPAIGN_AUDIENCE_UPLOAD_STATUSES as readonly string[]).includes(campaign.status)) {
        throw refuse(invalidState(campaign.status))
      }
      if (Number(request.headers['content-length'] ?? 0) > AUDIENCE_LIMITS.maxBytes) {
        throw refuse(tooManyBytes(AUDIENCE_LIMITS.maxBytes))
      }
      const rules = app.sending.rules.get(campaign.senderId)
      const template = audienceTemplate(rules, campaign.template)
      const number =
        rules?.phoneNumberId ??
        (campaign.senderId === DEFAULT_SENDER_ID ? defaultPhoneNumberId(config) : undefined)
      let replaced: Awaited<ReturnType<typeof own.campaignAudience.replace>>
      try {
        replaced = await own.campaignAudience.replace(
          campaign.id,
          readAudience(body.stream, body.format, template.expected),
          {
            format: body.format,
            consent: {
              from: number ? { phoneNumberId: number } : { senderId: campaign.senderId },
              marketing: template.marketing,
              hash,
            },
            at: clock(),
          },
        )
      } catch (error) {
        if (!request.raw.complete && error instanceof AppError) throw refuse(error)
        throw error
      }
      if (replaced.outcome === 'not_found')
        throw new AppError('NOT_FOUND', `Campaign ${campaignId} not found`)
      if (replaced.outcome === 'wrong_state') throw invalidState(replaced.status)
      const { audience } = replaced
      request.log.info(
        { campaignId, rows: audience.rows, taken: audience.taken, skipped: audience.skipped },
        'campaign audience uploaded',
      )
      return { campaignId: campaign.id, status: 'ready' as const, audience }
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
        description:
          'Requires `manage:campaigns`. A CSV of every skipped row in line order: `line`, `reason`, `detail` ' +
          '(naming the column), `raw` (the line as uploaded, cut to 2,000 characters). Streamed as it is read.',
        params: CampaignParams,
        response: {
          200: { description: 'CSV with a header row', content: { 'text/csv': { schema: Type.String() } } },
          ...errorResponses('NOT_FOUND'),
        },
      },
    },
    async (request, reply) => {
      const { campaignId } = request.params
      const own = owned(db, callerOf(request))
      const campaign = await own.campaigns.find(campaignId)
      if (!campaign) throw new AppError('NOT_FOUND', `Campaign ${campaignId} not found`)
      const stream = Readable.from(
        skippedReport((after, take) => own.campaignAudience.skippedRows(campaign, after, take)),
        { objectMode: false, highWaterMark: 64 * 1024 },
      )
      stream.on('error', (error) => request.log.error({ err: error }, 'skipped lines report cut short'))
      return reply
        .type('text/csv; charset=utf-8')
        .header('content-disposition', `attachment; filename="campaign-${campaign.id}-skipped.csv"`)
        .send(stream as never)
    },
  )
}

const invalidState = (status: string) =>
  new AppError(
    'INVALID_STATE_TRANSITION',
    `The campaign is ${status}: its audience can be uploaded only while it is draft or ready`,
  )
