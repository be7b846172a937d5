import type { CampaignAudience, CampaignStatus } from '@dispatch/contracts'
import { and, eq, gt } from 'drizzle-orm'
import type { Db } from '../client.ts'
import { campaignRecipients } from '../schema/campaigns.ts'
import { type AudienceBatch, copyAudience } from './campaign-audience-copy.ts'
import { type AudienceConsent, blockingEntries, skipBlocked } from './campaign-audience-judge.ts'
import { SeenRecipients } from './campaign-audience-seen.ts'

export type { AudienceBatch, AudienceRow } from './campaign-audience-copy.ts'
export type { AudienceConsent } from './campaign-audience-judge.ts'
export { PlainRows } from './campaign-audience-plain.ts'

export interface AudienceTarget {
  campaignId: string
  /** The key the campaign must be of (a key's upload); none: an admin's. */
  apiKeyId?: string | undefined
  /** The statuses an upload may replace the audience in. */
  from: readonly CampaignStatus[]
}

export type ReplacedAudience =
  | { outcome: 'replaced'; audience: CampaignAudience }
  | { outcome: 'not_found' }
  | { outcome: 'wrong_state'; status: CampaignStatus }

/** A campaign's own table of rows, a partition of campaign_recipients (migration 0044). */
export const ownRecipientsTable = (campaignId: string) =>
  `campaign_recipients_${campaignId.replaceAll('-', '')}`

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

/**
 * Replaces a campaign's audience with the rows of an upload, in one transaction: the campaign is
 * locked (a start waits for the upload), the new rows written by COPY as they are read and judged
 * against the rows before them (a recipient on an earlier line) and the suppression list, and the
 * campaign set `ready` with what the upload came to. An upload cut off halfway (the rows'
 * iterator throws) leaves the campaign as it was, previous audience included.
 *
 * A campaign's first upload writes into a table of its own, made here with no index: its key is
 * built once the rows are in (one sorted pass, not an entry per row as it is written) and the
 * table attached as the campaign's partition of campaign_recipients, as the transaction's last
 * step. A later upload deletes the rows of that table and writes the new ones into it. A first
 * upload deletes the campaign's rows in the default partition (rows written by hand) just before
 * it attaches.
 *
 * A skipped row is kept with its raw line (for the report); a taken one without it, unless the
 * number's list is too long to read whole and is joined in SQL after the COPY (which may still
 * skip it).
 */
export async function replaceCampaignAudience(
  db: Db,
  target: AudienceTarget,
  rows: AsyncIterable<AudienceBatch>,
  options: {
    format: CampaignAudience['format']
    consent: AudienceConsent
    at: Date
    /** The most blocking entries read whole (`ENTRIES_READ_WHOLE`; a test's smaller one). */
    entriesReadWhole?: number
  },
): Promise<ReplacedAudience> {
  const { campaignId } = target
  const { consent, at } = options
  return db.$client.begin(async (sql) => {
    const [found] = await sql<{ status: CampaignStatus; id: string }[]>`
      select status, id::text as id from campaigns
      where id = ${campaignId} ${target.apiKeyId === undefined ? sql`` : sql`and api_key_id = ${target.apiKeyId}`}
      for update`
    if (!found) return { outcome: 'not_found' } as const
    if (!target.from.includes(found.status)) return { outcome: 'wrong_state', status: found.status } as const
    if (!UUID.test(found.id)) throw new Error(`campaign id ${found.id} is not a uuid`)
    const table = ownRecipientsTable(found.id)
    const [{ own } = { own: false }] = await sql<
      { own: boolean }[]
    >`select to_regclass(${table}) is not null as own`
    if (own) await sql`delete from campaign_recipients where campaign_id = ${campaignId}`
    else {
      await sql`
        create table ${sql(table)} (like campaign_recipients including defaults including constraints,
          constraint ${sql(`${table}_campaign`)} check (campaign_id = ${sql.unsafe(`'${found.id}'`)}))`
    }

    // Duplicates and the suppression list are judged as the rows are read; a list too long to
    // read whole is joined to the rows once they are in.
    const entries = await blockingEntries(sql, consent, options.entriesReadWhole)
    const judging = { consent, entries, seen: new SeenRecipients() }
    const into = own ? undefined : { table, created: true }
    const { count, skippedByReason } = await copyAudience(sql, campaignId, rows, judging, into)
    if (entries.plain === null) {
      for (const { reason, n } of await skipBlocked(sql, campaignId, consent, into?.table))
        if (n > 0) skippedByReason[reason] = (skippedByReason[reason] ?? 0) + n
    }
    if (!own) {
      await sql`alter table ${sql(table)} add constraint ${sql(`${table}_pkey`)} primary key (campaign_id, line)`
      // The attach locks campaign_recipients, then its default partition, until the commit. The
      // campaign's rows there (written by hand) are deleted only now, under the first of those
      // locks: an upload holding the default partition while it waits for campaign_recipients
      // would deadlock with another one attaching. The check made with the table lets the attach
      // skip scanning the rows; the default partition is scanned (for none of the campaign's).
      await sql`lock table campaign_recipients in share update exclusive mode`
      await sql`delete from campaign_recipients_default where campaign_id = ${campaignId}`
      await sql`alter table campaign_recipients attach partition ${sql(table)} for values in (${sql.unsafe(`'${found.id}'`)})`
    }

    const skipped = Object.values(skippedByReason).reduce((sum, n) => sum + n, 0)
    const audience: CampaignAudience = {
      rows: count,
      taken: count - skipped,
      skipped,
      skippedByReason,
      format: options.format,
      uploadedAt: at.toISOString(),
    }
    await sql`
      update campaigns set audience = ${JSON.stringify(audience)}::jsonb, status = 'ready', updated_at = ${at.toISOString()}::timestamptz
      where id = ${campaignId}`
    return { outcome: 'replaced', audience } as const
  })
}

/** A campaign's skipped rows in line order after `after`, `take` at most (the skipped lines' report). */
export async function skippedAudienceRows(db: Db, campaignId: string, after: number, take: number) {
  const r = campaignRecipients
  return db
    .select({ line: r.line, reason: r.reason, detail: r.detail, raw: r.raw })
    .from(r)
    .where(and(eq(r.campaignId, campaignId), gt(r.line, after), eq(r.state, 'skipped')))
    .orderBy(r.line)
    .limit(take)
}
