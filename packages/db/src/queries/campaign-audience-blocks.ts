import { type SQL, sql } from 'drizzle-orm'
import type { CampaignRecipientRow } from '../schema/campaigns.ts'
import type { Executor } from './executor.ts'

/**
 * A campaign's blocks (rows holding many taken lines as uploaded, `campaign_recipients.lines`) that
 * `where` picks, each replaced by a row per line in one statement, in the block's state (`pending`,
 * or `canceled` by a cancel). Answers how many rows it wrote. `where` names
 * `campaign_recipients`' columns qualified by the table's name; it need not say `lines is not null`.
 */
export async function expandBlocks(db: Executor, where: SQL): Promise<number> {
  const [row] = await db.execute<{ n: number }>(sql`
    with blocks as (
      delete from campaign_recipients
      where campaign_recipients.lines is not null and (${where})
      returning campaign_id, line, state, block, block_fields
    ),
    expanded as (
      insert into campaign_recipients (campaign_id, line, phone, variables, state)
      select b.campaign_id, b.line + e.n - 1, e.phone, e.variables, b.state
      from blocks b cross join lateral dispatch_campaign_block_rows(b.block, b.block_fields) e
      returning 1
    )
    select count(*)::int as n from expanded`)
  return row?.n ?? 0
}

/**
 * Expands the blocks among the first items (rows or blocks) pending after line `after` that hold
 * the next `size` pending lines: expanding them (and no others) leaves those lines rows. Items are
 * read off the key in line order and stop once they hold `size` lines; the blocks are then deleted
 * by their key, within the range of line numbers they start in. Answers how many rows it wrote.
 *
 * Two statements, not one: given the block lines as an array found in the same statement
 * (`line = any(array(…))`), Postgres, whose statistics had not seen the campaign yet (an audience
 * just uploaded), scanned the campaign's rows from its first line and filtered on the array: a
 * window 0.3 s at line 900,000 of a million, the feeding slower the further it got. A range of the
 * key's second column is always a bound of the scan, whatever the estimate.
 */
export async function expandBlocksHoldingNext(
  db: Executor,
  campaignId: string,
  after: number,
  size: number,
): Promise<number> {
  const [found] = await db.execute<{ lines: number[] }>(sql`
    select array(
      select line from (
        select line, lines, sum(coalesce(lines, 1)) over (order by line) as upto
        from campaign_recipients
        where campaign_id = ${campaignId} and line > ${after} and state = 'pending'
        order by line
        limit ${size}) as items
      where lines is not null and upto - lines < ${size}) as lines`)
  const lines = found?.lines ?? []
  // A window of plain rows (a batch-sized audience, or lines expanded already): nothing to expand.
  if (lines.length === 0) return 0
  return expandBlocks(
    db,
    sql`campaign_recipients.campaign_id = ${campaignId}
      and campaign_recipients.line between ${Math.min(...lines)} and ${Math.max(...lines)}
      and campaign_recipients.line = any(${sql.param(lines)}::int[])`,
  )
}

/** A line of an audience as read, its block expanded: a row's columns but the block's. */
export type AudienceLine = Omit<CampaignRecipientRow, 'lines' | 'block' | 'blockFields'>

const COLUMNS = sql.raw(
  'line, phone, user_id, variables, state, reason, detail, raw, message_id, error_code, lines, block, block_fields',
)

/**
 * A campaign's lines after line `after` in line order, `take` at most, of these row states only
 * (all: undefined), each block expanded into its lines: the items read off the key (a block that
 * began at or before `after` and runs past it too) until they hold `take` lines, no further.
 */
export async function audienceLinesAfter(
  db: Executor,
  campaignId: string,
  after: number,
  take: number,
  only?: CampaignRecipientRow['state'][],
): Promise<AudienceLine[]> {
  const states = only ? sql`and state = any(${sql.param(only)}::campaign_recipient_state[])` : sql``
  const rows = await db.execute<{
    line: number
    phone: string | null
    userId: string | null
    variables: string | null
    state: CampaignRecipientRow['state']
    reason: string | null
    detail: string | null
    raw: string | null
    messageId: string | null
    errorCode: string | null
  }>(sql`
    select r.line + coalesce(e.n - 1, 0) as line, coalesce(e.phone, r.phone) as phone, r.user_id as "userId",
      coalesce(e.variables, r.variables) as variables, r.state, r.reason, r.detail, r.raw,
      r.message_id::text as "messageId", r.error_code as "errorCode"
    from (
      (select ${COLUMNS} from (
        select * from campaign_recipients where campaign_id = ${campaignId} and line <= ${after}
        order by line desc limit 1) as before
      where lines is not null and line + lines - 1 > ${after} ${states})
      union all
      (select ${COLUMNS} from (
        select *, sum(coalesce(lines, 1)) over (order by line) as upto
        from campaign_recipients where campaign_id = ${campaignId} and line > ${after} ${states}
        order by line limit ${take}) as items
      where upto - coalesce(lines, 1) < ${take})
    ) as r
    left join lateral dispatch_campaign_block_rows(r.block, r.block_fields) e on true
    where r.line + coalesce(e.n - 1, 0) > ${after}
    order by 1
    limit ${take}`)
  return [...rows].map((r) => ({
    ...r,
    campaignId,
    variables: r.variables === null ? null : (JSON.parse(r.variables) as Record<string, string>),
  }))
}
