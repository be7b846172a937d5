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

/**
 * Replaces a campaign's audience with the rows of an upload, in one transaction: the campaign is
 * locked (a start waits for the upload), its previous rows deleted, the new ones written by COPY
 * as they are read and judged against the rows before them (a recipient on an earlier line) and
 * the suppression list, and the campaign set `ready` with what the upload came to. An upload cut
 * off halfway (the rows' iterator throws) leaves the campaign as it was, previous audience included.
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
    const [found] = await sql<{ status: CampaignStatus }[]>`
      select status from campaigns
      where id = ${campaignId} ${target.apiKeyId === undefined ? sql`` : sql`and api_key_id = ${target.apiKeyId}`}
      for update`
    if (!found) return { outcome: 'not_found' } as const
    if (!target.from.includes(found.status)) return { outcome: 'wrong_state', status: found.status } as const
    await sql`delete from campaign_recipients where campaign_id = ${campaignId}`

    // Duplicates and the suppression list are judged as the rows are read; a list too long to
    // read whole is joined to the rows once they are in.
    const entries = await blockingEntries(sql, consent, options.entriesReadWhole)
    const judging = { consent, entries, seen: new SeenRecipients() }
    const { count, skippedByReason } = await copyAudience(sql, campaignId, rows, judging)
    if (entries.plain === null) {
      for (const { reason, n } of await skipBlocked(sql, campaignId, consent))
        if (n > 0) skippedByReason[reason] = (skippedByReason[reason] ?? 0) + n
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
