import type { SuppressionOwner } from '@dispatch/runtime'
import type { TransactionSql } from 'postgres'

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

const OPTED_OUT = ": the recipient opted out of this sender's messages"
const SUPPRESSED = ": on the suppression list (the service's or your tenant's)"
/** A row's detail when an entry blocks it: `own`, the recipient's own opt-out. */
export const optOutDetail = (field: string, own: boolean) => field + (own ? OPTED_OUT : SUPPRESSED)

/**
 * The entries that block the campaign's sends: of its number (or sender), the recipient's own and
 * admins' (owner '') and the key's owner's; of every scope, or `all` only for a non-marketing template.
 */
const blocking = (sql: TransactionSql, consent: AudienceConsent) => {
  const ofNumber =
    'phoneNumberId' in consent.from
      ? sql`phone_number_id = ${consent.from.phoneNumberId}`
      : sql`sender_id = ${consent.from.senderId}`
  return sql`${ofNumber} and owner in ('', ${consent.owner}) and (scope = 'all' or ${consent.marketing})`
}

/**
 * The blocking entries kept hashed (their recipient erased), by hash, each with whether it is the
 * recipient's own: matched as rows are read (their hash is worked out in the process, with the
 * key Postgres never sees). They are few: one per erased recipient who had opted out.
 */
export async function hashedEntries(
  sql: TransactionSql,
  consent: AudienceConsent,
): Promise<Map<string, boolean>> {
  const rows = await sql<{ recipient: string; own: boolean }[]>`
    select recipient, bool_or(owner = '' and source <> 'admin') as own from suppressions
    where ${blocking(sql, consent)} and recipient like 'hmac:%'
    group by recipient`
  return new Map(rows.map(({ recipient, own }) => [recipient, own]))
}

/** Skips every later row of a recipient taken earlier (the first line is kept): answers how many. */
export async function skipDuplicates(sql: TransactionSql, campaignId: string): Promise<number> {
  const skipped = await sql`
    update campaign_recipients r set state = 'skipped', reason = 'duplicate', variables = null,
      detail = case when r.phone is not null then 'phone' else 'userId' end || ': the same recipient as line ' || d.first
    from (
      select line, first_value(line) over w as first, row_number() over w as n
      from campaign_recipients where campaign_id = ${campaignId} and state = 'pending'
      window w as (partition by coalesce(phone, user_id) order by line)
    ) d
    where r.campaign_id = ${campaignId} and r.line = d.line and d.n > 1`
  return skipped.count
}

/**
 * Skips the rows the suppression list blocks, read whole for the number and joined to the rows in
 * one pass: `opted_out` (the recipient's own), `suppressed` (an admin's or the tenant's). Answers
 * how many of each.
 */
export async function skipBlocked(
  sql: TransactionSql,
  campaignId: string,
  consent: AudienceConsent,
): Promise<Array<{ reason: string; n: number }>> {
  return sql<{ reason: string; n: number }[]>`
    with entries as (
      select recipient, bool_or(owner = '' and source <> 'admin') as own from suppressions
      where ${blocking(sql, consent)}
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
}
