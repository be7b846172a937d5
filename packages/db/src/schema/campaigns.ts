import type { CampaignAudience, CampaignWaitReason, QuietHours } from '@dispatch/contracts'
import {
  boolean,
  customType,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  text,
  timestamp,
  uuid,
} from 'drizzle-orm/pg-core'
import { apiKeys } from './api-keys.ts'
import { campaignRecipientRowState, campaignStatus, messageStatus } from './enums.ts'

/** The template a campaign sends, as created (`CreateCampaignBody.template`). */
export interface CampaignTemplateColumn {
  templateId: string
  language: string
  headerVariables?: { type: string; value: string | null; originalMediaId: string }[]
  buttonVariables?: { buttonIndex: number; text: string; type: string }[]
}

/**
 * A key's campaign (docs/campaigns.md): one template to an uploaded audience. Its recipients are in
 * `campaign_recipients`; their messages are ordinary messages whose `batch_id` is the campaign's id,
 * so the campaign's counts read the messages' own (api_key_id, batch_id) index and cost the hot
 * path nothing.
 */
export const campaigns = pgTable(
  'campaigns',
  {
    id: uuid().primaryKey().defaultRandom(),
    apiKeyId: uuid()
      .notNull()
      .references(() => apiKeys.id),
    /** The key's tenant when it was created (null: none bound). */
    tenantId: text(),
    senderId: text().notNull(),
    name: text().notNull(),
    template: jsonb().$type<CampaignTemplateColumn>().notNull(),
    status: campaignStatus().notNull().default('draft'),
    startAt: timestamp({ withTimezone: true }),
    validitySeconds: integer(),
    quietHours: jsonb().$type<QuietHours>(),
    /** What the upload came to (rows, taken, skipped by reason); null until one is in. */
    audience: jsonb().$type<CampaignAudience>(),
    /**
     * The feeder's cursor: rows up to `fed_through` have message ids assigned; those up to
     * `confirmed_through` are stored in Redis too. A feeder that finds them apart stores the rows
     * between again under the same ids (the worker sends a message id once).
     */
    fedThrough: integer().notNull().default(0),
    confirmedThrough: integer().notNull().default(0),
    /**
     * Why the feeder feeds it nothing now, while `running`, and until when: `daily_quota` (its
     * key's daily quota is spent; until midnight UTC). Null while it is fed (0034).
     */
    waitingFor: text().$type<CampaignWaitReason>(),
    waitingUntil: timestamp({ withTimezone: true }),
    /**
     * The fencing token of the feeder holding the campaign's lease (Redis), raised by each feeder
     * that takes it: a window is assigned and confirmed only under the current one, so a feeder
     * whose turn outlived its lease changes nothing once another took it (migration 0041).
     */
    feedToken: integer().notNull().default(0),
    /**
     * Its rows counted as they change state (migration 0041), so its counts never read the rows:
     * rows ever fed (`pending` → `fed`, by `assignWindow`), of those refused when stored (`fed` →
     * `skipped`, by `confirmWindow`), and rows canceled before being fed (`cancelPendingRows`). Rows
     * not fed yet are the audience's `taken` less the fed and the canceled.
     */
    fedRows: integer().notNull().default(0),
    refusedRows: integer().notNull().default(0),
    canceledRows: integer().notNull().default(0),
    /** The last `campaign.progress` event, so one goes out at most every few seconds. */
    progressAt: timestamp({ withTimezone: true }),
    createdAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
    startedAt: timestamp({ withTimezone: true }),
    completedAt: timestamp({ withTimezone: true }),
    canceledAt: timestamp({ withTimezone: true }),
    updatedAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    index('campaigns_api_key_id_created_at_idx').on(t.apiKeyId, t.createdAt),
    index('campaigns_status_idx').on(t.status),
    // A reply's or an opt-out's campaigns (migration 0051's triggers): a sender's, started by then.
    index('campaigns_sender_id_started_at_idx').on(t.senderId, t.startedAt),
  ],
)
export type CampaignRow = typeof campaigns.$inferSelect

/**
 * A campaign's engagement, a row per recipient who replied (`replied`) or opted out of its sender
 * (`opted_out`) since it started, written by triggers on `inbound_messages` and `suppressions` as
 * each is stored (migration 0051), so counting it reads this key alone. The recipient is named by
 * the campaign's first message to them (`message_id`), never by their phone: nothing personal is
 * kept, and an erasure leaves the count as it was. `at`: the reply's or opt-out's time.
 */
export const campaignEngagement = pgTable(
  'campaign_engagement',
  {
    campaignId: uuid().notNull(),
    kind: text({ enum: ['replied', 'opted_out'] }).notNull(),
    messageId: uuid().notNull(),
    at: timestamp({ withTimezone: true }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.campaignId, t.kind, t.messageId] })],
)

/**
 * A row's variables as JSON text (0042): an upload writes a million of them by COPY, and Postgres
 * parsing each into jsonb cost a quarter of the COPY; nothing queries inside them, they are
 * parsed when read.
 */
const variablesText = customType<{ data: Record<string, string>; driverData: string }>({
  dataType: () => 'text',
  toDriver: (value) => JSON.stringify(value),
  fromDriver: (value) => JSON.parse(value) as Record<string, string>,
})

/**
 * One row of a campaign's audience, by its line in the upload. `state` is the row's own: `pending`
 * (not fed yet), `fed` (its message, `message_id`, says the rest), `skipped` (refused at upload or
 * when fed: `reason`, `detail`, the line as uploaded in `raw`), `canceled` (the campaign was
 * canceled before it was fed).
 */
/**
 * An audience's rows. Partitioned by campaign_id (migration 0044, which drizzle does not model):
 * a campaign's first upload makes a table of its own, fills it, builds its key and attaches it
 * (queries/campaign-audience.ts); rows of a campaign without its table go to the DEFAULT partition.
 */
export const campaignRecipients = pgTable(
  'campaign_recipients',
  {
    // No foreign key (0033): its check ran as a trigger per row of a million-row COPY, half the
    // upload's time; rows are written only by an upload that holds its campaign's row locked, and
    // campaigns are never deleted.
    campaignId: uuid().notNull(),
    line: integer().notNull(),
    phone: text(),
    userId: text(),
    /** The template's body variables from this row (JSON text); null for a skipped row. */
    variables: variablesText(),
    state: campaignRecipientRowState().notNull(),
    reason: text(),
    detail: text(),
    /**
     * A skipped line as uploaded (cut to 2,000 characters), for the skipped rows' report; null for
     * a row taken (unless the suppression list was joined in SQL after the upload).
     */
    raw: text(),
    messageId: uuid(),
    /** A row refused when fed: the send's error code. */
    errorCode: text(),
    /**
     * A block (migration 0049): the `lines` lines from `line` on, each a recipient an upload took,
     * kept as the CSV lines they came as (`block`, a newline between them) instead of a row
     * each, `blockFields` naming each field (`phone`, a variable's name, or '' for a field not
     * kept). A block is `pending` (or `canceled` whole by a cancel); it is expanded into a row per
     * line when it is fed or erased (`dispatch_campaign_block_rows`); readers of lines expand it as they read
     * (the view `campaign_recipient_lines`, `campaignRecipientsPage`). Null for a row of one line.
     */
    lines: integer(),
    block: text(),
    blockFields: text().array(),
  },
  (t) => [primaryKey({ columns: [t.campaignId, t.line] })],
)
export type CampaignRecipientRow = typeof campaignRecipients.$inferSelect

/**
 * A campaign's messages counted by what its counts read of them (status; the error code of a failed
 * or expired one; billable and the pricing category of a billable one), so the counts are a sum of a
 * few rows, never a read of its million messages. Written only by the fold
 * (`dispatch_campaign_tally_fold()`, migration 0045), which moves `campaign_tally_moves` in: the
 * counts are this table's rows plus the moves not folded yet.
 */
export const campaignTallies = pgTable(
  'campaign_tallies',
  {
    campaignId: uuid().notNull(),
    status: messageStatus().notNull(),
    /** A failed or expired message's `last_error_code`; '' otherwise, or when it has none. */
    errorCode: text().notNull(),
    billable: boolean().notNull(),
    /** A billable message's pricing category ('unknown' when none); '' when not billable. */
    category: text().notNull(),
    n: integer().notNull(),
  },
  (t) => [primaryKey({ columns: [t.campaignId, t.status, t.errorCode, t.billable, t.category] })],
)

/**
 * What each write of a campaign's messages changed in its counts, appended by the triggers on
 * `messages` (migrations 0041, 0045, 0047): a statement's inserted messages as one row per group (`n`
 * of them, no `from_*`), an update that changes what the counts read as one row (from its old
 * group to its new one). Append-only, no index, no row any writer waits on: the cheapest write a
 * status update can carry. Folded into `campaign_tallies` and deleted by the fold, so it stays a
 * few seconds' worth of writes.
 */
export const campaignTallyMoves = pgTable('campaign_tally_moves', {
  campaignId: uuid().notNull(),
  fromStatus: messageStatus(),
  fromErrorCode: text(),
  fromBillable: boolean(),
  fromCategory: text(),
  status: messageStatus().notNull(),
  errorCode: text().notNull(),
  billable: boolean().notNull(),
  category: text().notNull(),
  n: integer().notNull(),
})
