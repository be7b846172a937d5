import type { Writable } from 'node:stream'
import { finished } from 'node:stream/promises'
import {
  CAMPAIGN_AUDIENCE_RAW_CHARS,
  type CampaignAudience,
  type CampaignSkipReason,
  type CampaignStatus,
} from '@dispatch/contracts'
import type { SuppressionOwner } from '@dispatch/runtime'
import { and, eq, gt } from 'drizzle-orm'
import type { Db } from '../client.ts'
import { campaignRecipients } from '../schema/campaigns.ts'

/** One row of an upload as read: taken so far (`reason` null), or skipped as read. */
export interface AudienceRow {
  line: number
  phone: string | null
  userId: string | null
  /** The template's body variables; null for a row skipped as read. */
  variables: Record<string, string> | null
  reason: CampaignSkipReason | null
  detail: string | null
  /** The line as uploaded. */
  raw: string
}

/** What the consent checks read the suppression list by. */
export interface AudienceConsent {
  /**
   * The business number the campaign sends from, whose entries block (as a send's check reads
   * them); its sender when the number is not known here (entries record both).
   */
  from: { phoneNumberId: string } | { senderId: string }
  /** The key's owner of entries (its tenant, or itself): its entries block too, no other tenant's. */
  owner: SuppressionOwner
  /** A marketing template: an opt-out of marketing blocks it too. */
  marketing: boolean
  /** The recipients' hash (`recipientHasher`): an entry kept hashed after an erasure still blocks. */
  hash: (recipient: string) => string
}

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

const COPY_SPECIAL = /[\\\n\r\t]/
const COPY_ESCAPES: Record<string, string> = { '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t' }
/** A value in COPY's text format. */
const copyText = (value: string | null) =>
  value === null
    ? '\\N'
    : COPY_SPECIAL.test(value)
      ? value.replace(/[\\\n\r\t]/g, (c) => COPY_ESCAPES[c] as string)
      : value

const cut = (raw: string) =>
  raw.length <= CAMPAIGN_AUDIENCE_RAW_CHARS ? raw : raw.slice(0, CAMPAIGN_AUDIENCE_RAW_CHARS).toWellFormed()

/**
 * Writes to COPY and waits until the bytes are on the socket (one batch in flight at most). A COPY
 * Postgres refused is destroyed by the driver with Postgres' error, which is thrown here.
 */
function write(stream: Writable, chunk: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    stream.write(chunk, (error) => (error ? reject(stream.errored ?? error) : resolve()))
  })
}

/**
 * Replaces a campaign's audience with the rows of an upload, in one transaction: the campaign is
 * locked (a start waits for the upload), its previous rows deleted, the new ones written by COPY
 * as they are read, then judged together in SQL (a recipient on an earlier line, the suppression
 * list), and the campaign set `ready` with what the upload came to. An upload cut off halfway (the
 * rows' iterator throws) leaves the campaign as it was, previous audience included.
 *
 * Every row is kept with its raw line (a row the SQL checks skip needs it for the report); a row
 * once fed does not need it any more.
 */
export async function replaceCampaignAudience(
  db: Db,
  target: AudienceTarget,
  rows: AsyncIterable<AudienceRow[]>,
  options: { format: CampaignAudience['format']; consent: AudienceConsent; at: Date },
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

    // Entries kept hashed (their recipient erased) are matched as rows are read; they are few.
    const ofNumber =
      'phoneNumberId' in consent.from
        ? sql`phone_number_id = ${consent.from.phoneNumberId}`
        : sql`sender_id = ${consent.from.senderId}`
    const hashed = new Map<string, boolean>()
    const blocking = await sql<{ recipient: string; own: boolean }[]>`
      select recipient, bool_or(owner = '' and source <> 'admin') as own from suppressions
      where ${ofNumber} and owner in ('', ${consent.owner})
        and (scope = 'all' or ${consent.marketing}) and recipient like 'hmac:%'
      group by recipient`
    for (const { recipient, own } of blocking) hashed.set(recipient, own)

    const skippedByReason: Record<string, number> = {}
    let count = 0
    const copy = await sql`
      copy campaign_recipients (campaign_id, line, phone, user_id, variables, state, reason, detail, raw)
      from stdin`.writable()
    // Its errors are the upload's, thrown below; destroying it (below) must not throw them again.
    copy.on('error', () => {})
    try {
      for await (const batch of rows) {
        // A batch's lines written at once, as one Buffer: nothing of them outlives the write (held
        // across it, V8 moves such strings to the old space, which then grows until the upload ends).
        const lines: string[] = new Array(batch.length)
        batch.forEach((row, i) => {
          let { reason, detail } = row
          const recipient = row.phone ?? row.userId
          if (reason === null && hashed.size > 0 && recipient !== null) {
            const own = hashed.get(consent.hash(recipient))
            if (own !== undefined) {
              reason = own ? 'opted_out' : 'suppressed'
              detail = optOutDetail(row.phone === null ? 'userId' : 'phone', own)
            }
          }
          if (reason !== null) skippedByReason[reason] = (skippedByReason[reason] ?? 0) + 1
          lines[i] =
            `${campaignId}\t${row.line}\t${row.phone ?? '\\N'}\t${row.userId ?? '\\N'}\t` +
            `${reason === null && row.variables ? copyText(JSON.stringify(row.variables)) : '\\N'}\t` +
            `${reason === null ? 'pending' : 'skipped'}\t${reason ?? '\\N'}\t${copyText(detail)}\t${copyText(cut(row.raw))}\n`
        })
        count += batch.length
        if (lines.length > 0) await write(copy, Buffer.from(lines.join('')))
      }
      const copied = finished(copy)
      copied.catch(() => {})
      copy.end()
      // A COPY Postgres refuses after its last bytes were sent is never told to the stream (the
      // driver waits for a completion that will not come): the next statement, queued behind it
      // once the stream has handed over (the turn after end()), fails instead and ends the wait.
      await new Promise((resolve) => setImmediate(resolve))
      await Promise.race([copied, sql`select 1`])
    } catch (error) {
      copy.destroy(error as Error)
      throw error
    }

    // The first line of a recipient is kept; later ones are skipped, naming it.
    const duplicates = await sql`
      update campaign_recipients r set state = 'skipped', reason = 'duplicate', variables = null,
        detail = case when r.phone is not null then 'phone' else 'userId' end || ': the same recipient as line ' || d.first
      from (
        select line, first_value(line) over w as first, row_number() over w as n
        from campaign_recipients where campaign_id = ${campaignId} and state = 'pending'
        window w as (partition by coalesce(phone, user_id) order by line)
      ) d
      where r.campaign_id = ${campaignId} and r.line = d.line and d.n > 1`
    if (duplicates.count > 0) skippedByReason.duplicate = (skippedByReason.duplicate ?? 0) + duplicates.count

    // The suppression list, read whole for the number (the recipient's own and admins' entries,
    // and the key's owner's), joined to the rows in one pass.
    const blocked = await sql<{ reason: string; n: number }[]>`
      with entries as (
        select recipient, bool_or(owner = '' and source <> 'admin') as own from suppressions
        where ${ofNumber} and owner in ('', ${consent.owner})
          and (scope = 'all' or ${consent.marketing})
        group by recipient
      ), skipped as (
        update campaign_recipients r
        set state = 'skipped', variables = null,
          reason = case when e.own then 'opted_out' else 'suppressed' end,
          detail = case when r.phone is not null then 'phone' else 'userId' end ||
            case when e.own then ${OPTED_OUT} else ${SUPPRESSED} end
        from entries e
        where r.campaign_id = ${campaignId} and r.state = 'pending' and e.recipient = coalesce(r.phone, r.user_id)
        returning r.reason
      )
      select reason, count(*)::int as n from skipped group by reason`
    for (const { reason, n } of blocked) skippedByReason[reason] = (skippedByReason[reason] ?? 0) + n

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

const OPTED_OUT = ": the recipient opted out of this sender's messages"
const SUPPRESSED = ": on the suppression list (the service's or your tenant's)"
const optOutDetail = (field: string, own: boolean) => field + (own ? OPTED_OUT : SUPPRESSED)

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
