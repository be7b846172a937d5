import Type, { type Static } from 'typebox'
import { PathId } from './ids.ts'
import { ButtonVariable, HeaderVariable, ValiditySeconds } from './messages.ts'
import { QuietHours } from './quiet-hours.ts'

/**
 * A campaign: one template sent to an uploaded audience, fed into the sender's fair queue at `low`
 * priority a window at a time, under the key's limits and the portfolio's messaging limit
 * (docs/campaigns.md).
 *
 * - `draft`: created, its audience not uploaded yet (or being replaced);
 * - `ready`: its audience is in, nothing sent; `POST …/start` starts it (now, or at `startAt`);
 * - `scheduled`: started with a `startAt` still ahead;
 * - `running`: being fed; `paused`: feeding stopped (what was fed goes on);
 * - `completed`: every recipient fed and each message at its end; `canceled`: stopped for good,
 *   what had not gone canceled.
 */
export const CAMPAIGN_STATUSES = [
  'draft',
  'ready',
  'scheduled',
  'running',
  'paused',
  'completed',
  'canceled',
] as const
export type CampaignStatus = (typeof CAMPAIGN_STATUSES)[number]

/**
 * Where a recipient of a campaign stands (CONTRACT.md): `pending` until its message goes out (fed
 * or not yet), `held` while it waits for the messaging limit or quiet hours, then its message's
 * status; `skipped` when its row was refused at upload or at feeding (`reason` says why), `canceled`
 * when the campaign was canceled before it went.
 */
export const CAMPAIGN_RECIPIENT_STATES = [
  'pending',
  'held',
  'sent',
  'delivered',
  'read',
  'failed',
  'skipped',
  'canceled',
] as const
export type CampaignRecipientState = (typeof CAMPAIGN_RECIPIENT_STATES)[number]

/** Why a row of an upload (or its send, when fed) was skipped. */
export const CAMPAIGN_SKIP_REASONS = [
  /** Neither a valid phone (E.164) nor a valid `userId`, or both. */
  'invalid_recipient',
  /** A variable the template needs is missing or empty, or a column names none of its variables. */
  'invalid_variables',
  /** The line could not be read (a CSV line with the wrong number of fields, NDJSON that is not an object). */
  'malformed_line',
  /** The same recipient on an earlier line: the first line is the one sent. */
  'duplicate',
  /** The recipient opted out (of everything, or of marketing for a marketing template). */
  'opted_out',
  /** On the suppression list of the key's tenant or of the service. */
  'suppressed',
  /** Refused when fed: the send's own error code is in `errorCode`. */
  'refused',
] as const
export type CampaignSkipReason = (typeof CAMPAIGN_SKIP_REASONS)[number]

const CampaignName = Type.String({ minLength: 1, maxLength: 200, pattern: '\\S' })

const CampaignTemplate = Type.Object(
  {
    templateId: Type.String({ minLength: 1, maxLength: 512, pattern: '\\S' }),
    language: Type.String({ pattern: '^[a-z]{2,3}(_[A-Z]{2})?$', description: 'e.g. pt_BR, en' }),
    /** The same for every recipient (the rows fill the body's variables). */
    headerVariables: Type.Optional(Type.Array(HeaderVariable, { maxItems: 10 })),
    buttonVariables: Type.Optional(Type.Array(ButtonVariable, { maxItems: 10 })),
  },
  {
    additionalProperties: false,
    description:
      "The template every recipient gets, checked against the sender's catalog; each row of the audience fills its body variables",
  },
)

export const CreateCampaignBody = Type.Object(
  {
    name: CampaignName,
    template: CampaignTemplate,
    startAt: Type.Optional(
      Type.String({
        format: 'date-time',
        description: 'Start then (at most 35 days ahead); absent: when started',
      }),
    ),
    validitySeconds: Type.Optional(ValiditySeconds),
    quietHours: Type.Optional(QuietHours),
  },
  { additionalProperties: false },
)
export type CreateCampaignBody = Static<typeof CreateCampaignBody>

/** Counts of a campaign's recipients by state: they add up to the audience's rows. */
export const CampaignCounts = Type.Object(
  Object.fromEntries(
    CAMPAIGN_RECIPIENT_STATES.map((state) => [state, Type.Integer({ minimum: 0 })]),
  ) as Record<CampaignRecipientState, ReturnType<typeof Type.Integer>>,
  { additionalProperties: false },
)
export type CampaignCounts = Static<typeof CampaignCounts>

export const CampaignAudience = Type.Object(
  {
    /** Lines read (the header of a CSV not counted). */
    rows: Type.Integer({ minimum: 0 }),
    /** Rows that will be sent. */
    taken: Type.Integer({ minimum: 0 }),
    skipped: Type.Integer({ minimum: 0 }),
    /** Skipped rows by reason (`CAMPAIGN_SKIP_REASONS`). */
    skippedByReason: Type.Record(Type.String(), Type.Integer({ minimum: 0 })),
    format: Type.Enum(['csv', 'ndjson']),
    uploadedAt: Type.String({ format: 'date-time' }),
  },
  { additionalProperties: false },
)
export type CampaignAudience = Static<typeof CampaignAudience>

/** Why a running campaign's feeder waits (`Campaign.waitingFor`). */
export const CAMPAIGN_WAIT_REASONS = ['daily_quota'] as const
export type CampaignWaitReason = (typeof CAMPAIGN_WAIT_REASONS)[number]

export const Campaign = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    name: Type.String(),
    apiKeyId: Type.String({ format: 'uuid' }),
    /**
     * Its key's client name, on the admin routes (`/api/admin/campaigns…`) only, as a message's
     * there: so a person tells keys apart without opening each.
     */
    clientName: Type.Optional(Type.String()),
    senderId: Type.String(),
    template: CampaignTemplate,
    status: Type.Enum(CAMPAIGN_STATUSES),
    startAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
    validitySeconds: Type.Union([Type.Integer(), Type.Null()]),
    quietHours: Type.Union([QuietHours, Type.Null()]),
    audience: Type.Union([CampaignAudience, Type.Null()]),
    /** Recipients by state; every row of the audience is in exactly one. */
    counts: CampaignCounts,
    /** Failed recipients by the platform's (or Dispatch's) error code. */
    failedByCode: Type.Record(Type.String(), Type.Integer({ minimum: 0 })),
    /**
     * What the platform bills for it, as its status webhooks said (`pricing` on each message):
     * billable messages in all and by pricing category (`marketing`, `utility`…).
     */
    pricing: Type.Object(
      {
        billable: Type.Integer({ minimum: 0 }),
        byCategory: Type.Record(Type.String(), Type.Integer({ minimum: 0 })),
        /**
         * Its channel fallback's SMS (docs/fallback.md), once one went: how many the provider took,
         * and what its reports said they cost, summed by currency (decimal strings).
         */
        sms: Type.Optional(
          Type.Object(
            {
              sent: Type.Integer({ minimum: 0 }),
              priceByCurrency: Type.Record(Type.String(), Type.String()),
            },
            { additionalProperties: false },
          ),
        ),
      },
      { additionalProperties: false },
    ),
    /**
     * Beside the states: recipients it reached who wrote back since it started, and who opted out
     * of the sender since (each counted once).
     */
    engagement: Type.Object(
      { replied: Type.Integer({ minimum: 0 }), optedOut: Type.Integer({ minimum: 0 }) },
      { additionalProperties: false },
    ),
    /**
     * Why a `running` campaign is fed nothing now, and until when: `daily_quota`, its key's daily
     * quota is spent (it goes on after midnight UTC, or once the quota is raised). Null while fed.
     */
    waitingFor: Type.Union([
      Type.Object(
        { reason: Type.Enum(CAMPAIGN_WAIT_REASONS), until: Type.String({ format: 'date-time' }) },
        { additionalProperties: false },
      ),
      Type.Null(),
    ]),
    createdAt: Type.String({ format: 'date-time' }),
    startedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
    completedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
    canceledAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  },
  { additionalProperties: false },
)
export type Campaign = Static<typeof Campaign>

export const CampaignParams = Type.Object({ campaignId: PathId('A campaign id, as created') })

export const CampaignList = Type.Object({ data: Type.Array(Campaign) }, { additionalProperties: false })

/** One row of the audience and where it stands. */
export const CampaignRecipient = Type.Object(
  {
    /** The row's line in the upload (1 is the first line; a CSV's header is line 1). */
    line: Type.Integer({ minimum: 1 }),
    phone: Type.Union([Type.String(), Type.Null()]),
    userId: Type.Union([Type.String(), Type.Null()]),
    state: Type.Enum(CAMPAIGN_RECIPIENT_STATES),
    /** Why it was skipped or held. */
    reason: Type.Union([Type.String(), Type.Null()]),
    /** For `skipped` rows: what was wrong, naming the column. */
    detail: Type.Union([Type.String(), Type.Null()]),
    messageId: Type.Union([Type.String({ format: 'uuid' }), Type.Null()]),
    errorCode: Type.Union([Type.String(), Type.Null()]),
    /** The template's body variables this row gives (null for a skipped row, or one erased). */
    variables: Type.Union([Type.Record(Type.String(), Type.String()), Type.Null()]),
  },
  { additionalProperties: false },
)
export type CampaignRecipient = Static<typeof CampaignRecipient>

export const CampaignRecipientsQuery = Type.Object(
  {
    state: Type.Optional(Type.Enum(CAMPAIGN_RECIPIENT_STATES)),
    /** The last line of the previous page: the next page starts after it. */
    after: Type.Optional(Type.Integer({ minimum: 0 })),
    take: Type.Integer({ minimum: 1, maximum: 1000, default: 100 }),
  },
  { additionalProperties: false },
)

export const CampaignRecipientPage = Type.Object(
  {
    data: Type.Array(CampaignRecipient),
    /** Pass as `after` for the next page; null at the end. */
    next: Type.Union([Type.Integer(), Type.Null()]),
  },
  { additionalProperties: false },
)

export const CampaignExportQuery = Type.Object(
  {
    format: Type.Enum(['csv', 'ndjson'], { default: 'csv' }),
    state: Type.Optional(Type.Enum(CAMPAIGN_RECIPIENT_STATES)),
  },
  { additionalProperties: false },
)

/** How many rows an upload may hold: a million recipients and room. */
export const CAMPAIGN_AUDIENCE_MAX_ROWS = 2_000_000
