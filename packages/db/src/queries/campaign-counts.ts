import type { CampaignCounts, CampaignRecipientState, MessageStatus } from '@dispatch/contracts'
import { and, eq, type SQL, sql } from 'drizzle-orm'
import type { Db } from '../client.ts'
import { type CampaignRow, campaignRecipients } from '../schema/campaigns.ts'
import { messages } from '../schema/messages.ts'

const emptyCounts = (): CampaignCounts => ({
  pending: 0,
  held: 0,
  sent: 0,
  delivered: 0,
  read: 0,
  failed: 0,
  skipped: 0,
  canceled: 0,
})

/** A recipient's state from its message's status: `queued`, `sending` are still pending. */
export const recipientStateOf = (status: MessageStatus): CampaignRecipientState => {
  switch (status) {
    case 'scheduled':
      return 'held'
    case 'queued':
    case 'sending':
      return 'pending'
    case 'expired':
      return 'failed'
    default:
      return status
  }
}

/** A campaign's recipients counted by state, its failures by code, and what the platform bills. */
export interface CampaignTally {
  counts: CampaignCounts
  failedByCode: Record<string, number>
  /** Messages the platform's statuses called billable, in all and by pricing category. */
  pricing: {
    billable: number
    byCategory: Record<string, number>
    /** Its fallback SMS the provider took, and their price by currency; absent: none went. */
    sms?: { sent: number; priceByCurrency: Record<string, string> }
  }
  /** Recipients fed who wrote back since it started, and who opted out of its sender since. */
  engagement: { replied: number; optedOut: number }
}

/** How many of a campaign's fed messages have not reached an end (sent or later, failed, expired, canceled). */
export const unfinished = (counts: CampaignCounts) => counts.pending + counts.held

/** The campaign's rows by their own state, from what the upload and the row counters say. */
interface RowStates {
  /** Rows not fed yet. */
  pending: number
  fed: number
  skipped: number
  canceled: number
}

interface MessageGroup {
  status: MessageStatus
  code: string | null
  billable: boolean | null
  category: string | null
  n: number
}

/** The tally: the row states with the messages' groups; a fed row with no message yet is pending. */
function tallyOf(rows: RowStates, groups: MessageGroup[]): Omit<CampaignTally, 'engagement'> {
  const counts = emptyCounts()
  const failedByCode: Record<string, number> = {}
  const pricing: CampaignTally['pricing'] = { billable: 0, byCategory: {} }
  counts.pending = rows.pending
  counts.skipped = rows.skipped
  counts.canceled = rows.canceled
  let recorded = 0
  for (const { status, code, billable, category, n } of groups) {
    if (billable) {
      pricing.billable += n
      const name = category ?? 'unknown'
      pricing.byCategory[name] = (pricing.byCategory[name] ?? 0) + n
    }
    const state = recipientStateOf(status)
    counts[state] += n
    recorded += n
    if (state === 'failed') {
      const key = code ?? (status === 'expired' ? 'EXPIRED' : 'UNKNOWN')
      failedByCode[key] = (failedByCode[key] ?? 0) + n
    }
  }
  // Fed, not recorded yet: waiting in Redis (or past a record that went astray: still pending).
  counts.pending += Math.max(0, rows.fed - recorded)
  return { counts, failedByCode, pricing }
}

/**
 * Folds the moves the triggers on `messages` appended (`campaign_tally_moves`) into
 * `campaign_tallies` and deletes them, every campaign's at once, in one transaction: the counts
 * read the same before and after, and the moves a read scans stay a few seconds' worth. Skipped
 * (0) while another fold runs. Answers how many moves it folded.
 */
export async function foldCampaignTallies(db: Db): Promise<number> {
  const [row] = await db.execute<{ folded: number }>(sql`select dispatch_campaign_tally_fold() as folded`)
  return row?.folded ?? 0
}

/**
 * Where each recipient stands, counted: the rows' own states (not fed, skipped, canceled) from the
 * campaign's row counters, and, for the rows fed, their messages' statuses from `campaign_tallies`
 * and the moves not folded into it yet (both appended by triggers on `messages`, migrations 0041
 * and 0045), all in one statement, so one snapshot: a row is counted fed before its message can be
 * recorded, and a move is counted once whether or not a fold took it. So the counts always add up
 * to the audience's rows, and reading them costs the same for ten recipients as for a million. The
 * moves are folded first, so the read scans few. Its engagement is read from `campaign_engagement`
 * (a row per recipient who replied or opted out, written as each is stored) in the same statement.
 */
export async function campaignCounts(db: Db, campaign: CampaignRow): Promise<CampaignTally> {
  await foldCampaignTallies(db)
  const result = await db.execute<{
    audience: { taken: number; skipped: number } | null
    fedRows: number
    refusedRows: number
    canceledRows: number
    groups: Array<{ status: MessageStatus; code: string; billable: boolean; category: string; n: number }>
    replied: number
    optedOut: number
  }>(sql`
    select c.audience, c.fed_rows as "fedRows", c.refused_rows as "refusedRows", c.canceled_rows as "canceledRows",
      (select count(*)::int from campaign_engagement e where e.campaign_id = c.id and e.kind = 'replied') as replied,
      (select count(*)::int from campaign_engagement e where e.campaign_id = c.id and e.kind = 'opted_out') as "optedOut",
      coalesce((select json_agg(g) from (
        select status, error_code as code, billable, category, sum(n)::int as n from (
          select status, error_code, billable, category, n from campaign_tallies where campaign_id = c.id
          union all
          select status, error_code, billable, category, n from campaign_tally_moves where campaign_id = c.id
          union all
          select from_status, from_error_code, from_billable, from_category, -n from campaign_tally_moves
          where campaign_id = c.id and from_status is not null) t
        group by status, error_code, billable, category having sum(n) <> 0) g), '[]') as groups
    from campaigns c where c.id = ${campaign.id}`)
  const [row] = [...result]
  const taken = row?.audience?.taken ?? 0
  const rows: RowStates = row
    ? {
        pending: Math.max(0, taken - row.fedRows - row.canceledRows),
        fed: row.fedRows - row.refusedRows,
        skipped: (row.audience?.skipped ?? 0) + row.refusedRows,
        canceled: row.canceledRows,
      }
    : { pending: 0, fed: 0, skipped: 0, canceled: 0 }
  const groups = (row?.groups ?? []).map((g) => ({
    status: g.status,
    code: g.code === '' ? null : g.code,
    billable: g.billable,
    category: g.billable ? g.category : null,
    n: g.n,
  }))
  const tally = tallyOf(rows, groups)
  const engagement = { replied: row?.replied ?? 0, optedOut: row?.optedOut ?? 0 }
  if (rows.fed === 0) return { ...tally, engagement }
  return withSms(db, campaign, { ...tally, engagement })
}

/** The fallback SMS of its fed messages, with their prices, beside the rest of the tally. */
async function withSms(db: Db, campaign: CampaignRow, tally: CampaignTally): Promise<CampaignTally> {
  const sms = await smsOf(db, campaign)
  return sms ? { ...tally, pricing: { ...tally.pricing, sms } } : tally
}

/**
 * Counts a campaign's engagement again from every reply and opt-out since it started, adding what
 * the triggers did not write (a reply stored before its campaign message's record, as after a
 * Postgres outage). Run once, when the campaign completes; it reads the campaign's messages.
 */
export async function recountCampaignEngagement(db: Db, campaignId: string): Promise<void> {
  await db.execute(sql`select dispatch_campaign_engagement_recount(${campaignId}::uuid)`)
}

/**
 * Its messages' fallback SMS the provider took, and their prices summed by currency (an SMS not
 * priced yet counts, at no price). Fallbacks are few, and found by the campaign's id.
 */
async function smsOf(db: Db, campaign: CampaignRow): Promise<CampaignTally['pricing']['sms']> {
  const rows = await db.execute<{ unit: string | null; sent: number; price: string | null }>(sql`
    select price_unit as unit, count(*)::int as sent, sum(price)::text as price from message_fallbacks
    where batch_id = ${campaign.id} and api_key_id = ${campaign.apiKeyId} and state = 'sent'
    group by price_unit`)
  const groups = [...rows]
  if (groups.length === 0) return undefined
  const priceByCurrency: Record<string, string> = {}
  for (const { unit, price } of groups) if (unit && price) priceByCurrency[unit] = price
  return { sent: groups.reduce((n, g) => n + g.sent, 0), priceByCurrency }
}

/** The messages of a campaign: its key's, with its id as `batch_id`, accepted since it started. */
const messagesOf = (campaign: CampaignRow) =>
  and(
    eq(messages.apiKeyId, campaign.apiKeyId),
    eq(messages.batchId, campaign.id),
    // Its messages are accepted once it runs: the bound keeps the read to the periods since.
    sql`${messages.acceptedAt} >= ${new Date((campaign.startedAt ?? campaign.createdAt).getTime() - 60_000).toISOString()}::timestamptz`,
  )

/**
 * The same counts read from every row of the campaign and every message of it (a second at a
 * million): what `campaignCounts` must always equal. Its engagement is read from the replies and
 * opt-outs as they stand, so it differs where the kept rows are right to: an opt-out taken back
 * since (still counted by the rows) and a reply before its recipient's message (never counted by
 * the trigger). For tests and the counts benchmark only.
 */
export async function recountCampaign(db: Db, campaign: CampaignRow): Promise<CampaignTally> {
  const states = await db
    .select({
      state: campaignRecipients.state,
      n: sql<number>`sum(coalesce(${campaignRecipients.lines}, 1))::int`,
    })
    .from(campaignRecipients)
    .where(eq(campaignRecipients.campaignId, campaign.id))
    .groupBy(campaignRecipients.state)
  const rows: RowStates = { pending: 0, fed: 0, skipped: 0, canceled: 0 }
  for (const { state, n } of states) rows[state] += n
  if (rows.fed === 0) return { ...tallyOf(rows, []), engagement: { replied: 0, optedOut: 0 } }
  const groups = await db
    .select({
      status: messages.status,
      code: messages.lastErrorCode,
      billable: messages.pricingBillable,
      category: messages.pricingCategory,
      n: sql<number>`count(*)::int`,
    })
    .from(messages)
    .where(messagesOf(campaign))
    .groupBy(messages.status, messages.lastErrorCode, messages.pricingBillable, messages.pricingCategory)
  return withSms(db, campaign, { ...tallyOf(rows, groups), engagement: await engagementOf(db, campaign) })
}

/**
 * The recipients who replied (an inbound message routed to the campaign's key since it started)
 * and who opted out of its sender since (their own opt-out: a keyword, a preference, a block), each
 * counted once, among those its messages went to: read from every reply and opt-out since the
 * start, each matched to a message of the campaign (~150 ms a campaign at 10 M messages). What
 * `campaign_engagement` must hold, for the recount.
 */
async function engagementOf(db: Db, campaign: CampaignRow): Promise<CampaignTally['engagement']> {
  const since = (campaign.startedAt ?? campaign.createdAt).toISOString()
  const acceptedSince = new Date((campaign.startedAt ?? campaign.createdAt).getTime() - 60_000).toISOString()
  const ofCampaign = (phone: SQL) => sql`exists (select 1 from messages m where m.phone = ${phone}
    and m.batch_id = ${campaign.id} and m.api_key_id = ${campaign.apiKeyId} and m.accepted_at >= ${acceptedSince}::timestamptz)`
  const [row] = await db.execute<{ replied: number; opted_out: number }>(sql`
    select
      (select count(distinct i.phone)::int from inbound_messages i
        where i.api_key_id = ${campaign.apiKeyId} and i.received_at >= ${since}::timestamptz
          and ${ofCampaign(sql`i.phone`)}) as replied,
      (select count(distinct s.recipient)::int from suppressions s
        where s.sender_id = ${campaign.senderId} and s.owner = '' and s.created_at >= ${since}::timestamptz
          and ${ofCampaign(sql`s.recipient`)}) as opted_out`)
  return { replied: row?.replied ?? 0, optedOut: row?.opted_out ?? 0 }
}
