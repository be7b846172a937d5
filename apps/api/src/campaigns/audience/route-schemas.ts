import { CAMPAIGN_AUDIENCE_MAX_ROWS, CampaignAudienceUploaded, CampaignParams } from '@dispatch/contracts'
import Type from 'typebox'
import { errorResponses } from '../../http/error-responses.ts'
import { STREAMED_BODY } from '../../plugins/openapi.ts'

/** What the upload routes (a key's, an admin's) say of the body. */
export const AUDIENCE_UPLOAD_DESCRIPTION =
  'The body is the audience, streamed: CSV (`text/csv`, a header row naming `phone` or `userId`, ' +
  "optionally `clientReference` (ignored), and one column per body variable of the campaign's template) or " +
  'NDJSON (`application/x-ndjson`, one `{"phone"|"userId", "variables": {…}}` a line). ' +
  `At most ${CAMPAIGN_AUDIENCE_MAX_ROWS.toLocaleString('en')} rows. Each row is judged as a send of it would be; a bad ` +
  'row is skipped with its line and reason (`invalid_recipient`, `invalid_variables`, `malformed_line`, `duplicate`, ' +
  '`opted_out`, `suppressed`), never the whole upload. A header that does not fit the template is 400. Only while ' +
  'the campaign is `draft` or `ready`; a new upload replaces the previous audience whole, and one cut off leaves it as it was.'

export const audienceUploadSchema = {
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
}

export const SKIPPED_REPORT_DESCRIPTION =
  'A CSV of every skipped row in line order: `line`, `reason`, `detail` (naming the column), `raw` (the line ' +
  'as uploaded, cut to 2,000 characters). Streamed as it is read.'

export const skippedReportSchema = {
  params: CampaignParams,
  response: {
    200: { description: 'CSV with a header row', content: { 'text/csv': { schema: Type.String() } } },
    ...errorResponses('NOT_FOUND'),
  },
}
