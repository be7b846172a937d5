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

/** The most blocking entries an upload reads into memory to judge its rows as they are read. */
export const ENTRIES_READ_WHOLE = 200_000

/**
 * The entries that block the campaign's sends, by recipient, each with whether it is the
 * recipient's own opt-out: those kept hashed (their recipient erased: matched by the hash, worked
 * out in the process with the key Postgres never sees) and, when they are at most
 * `ENTRIES_READ_WHOLE` (a number's list is usually far shorter), the others too, so that every row
 * is judged as it is read. More than that: `plain` is null, and the rows are joined to the list
 * in SQL once they are all in (`skipBlocked`).
 */
export async function blockingEntries(
  sql: TransactionSql,
  consent: AudienceConsent,
  readWhole = ENTRIES_READ_WHOLE,
): Promise<{ hashed: Map<string, boolean>; plain: Map<string, boolean> | null }> {
  const hashed = new Map<string, boolean>()
  const plain = new Map<string, boolean>()
  const rows = await sql<{ recipient: string; own: boolean }[]>`
    select recipient, bool_or(owner = '' and source <> 'admin') as own from suppressions
    where ${blocking(sql, consent)}
    group by recipient
    limit ${readWhole + 1}`
  for (const { recipient, own } of rows) (recipient.startsWith('hmac:') ? hashed : plain).set(recipient, own)
  if (rows.length <= readWhole) return { hashed, plain }
  const hashedOnly = await sql<{ recipient: string; own: boolean }[]>`
    select recipient, bool_or(owner = '' and source <> 'admin') as own from suppressions
    where ${blocking(sql, consent)} and recipient like 'hmac:%'
    group by recipient`
  return { hashed: new Map(hashedOnly.map(({ recipient, own }) => [recipient, own])), plain: null }
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
  /** The table the rows are in: campaign_recipients, or the campaign's own before it is attached. */
  table = 'campaign_recipients',
): Promise<Array<{ reason: string; n: number }>> {
  return sql<{ reason: string; n: number }[]>`
    with entries as (
      select recipient, bool_or(owner = '' and source <> 'admin') as own from suppressions
      where ${blocking(sql, consent)}
      group by recipient
    ), skipped as (
      update ${sql(table)} r
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
