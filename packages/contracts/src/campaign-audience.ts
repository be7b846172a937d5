import Type, { type Static } from 'typebox'
import { CampaignAudience } from './campaigns.ts'

/**
 * A campaign's audience upload (docs/campaigns-audience.md): a CSV (`text/csv`) or NDJSON
 * (`application/x-ndjson`) body, streamed, one recipient a row.
 */
export const CAMPAIGN_AUDIENCE_MEDIA_TYPES = { csv: 'text/csv', ndjson: 'application/x-ndjson' } as const

/** The statuses an audience may be uploaded (or replaced) in: nothing of it has gone yet. */
export const CAMPAIGN_AUDIENCE_UPLOAD_STATUSES = ['draft', 'ready'] as const

/** The most bytes an upload may hold (413 past it): a million rows of ~1 KiB and room. */
export const CAMPAIGN_AUDIENCE_MAX_BYTES = 2 * 1024 ** 3

/**
 * The longest line (a CSV record, quoted newlines in it) read whole: a longer one is skipped as
 * `malformed_line`, read no further than its next newline, so no line holds memory past this.
 */
export const CAMPAIGN_AUDIENCE_MAX_LINE_CHARS = 64 * 1024

/** A skipped line's `raw` is cut to this many characters. */
export const CAMPAIGN_AUDIENCE_RAW_CHARS = 2000

/** The CSV columns that are not template variables (matched without regard to case). */
export const CAMPAIGN_AUDIENCE_RESERVED_COLUMNS = ['phone', 'userId', 'clientReference'] as const

export const CampaignAudienceUploaded = Type.Object(
  {
    campaignId: Type.String({ format: 'uuid' }),
    status: Type.Literal('ready'),
    audience: CampaignAudience,
  },
  { additionalProperties: false },
)
export type CampaignAudienceUploaded = Static<typeof CampaignAudienceUploaded>
