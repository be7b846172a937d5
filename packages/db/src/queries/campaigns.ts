import {
  type CampaignCancelPayload,
  type CampaignRecipient,
  type CampaignRecipientState,
  type CampaignStatus,
  type MessageStatus,
  QueueNames,
  type QuietHours,
} from '@dispatch/contracts'
import { messageIdAt } from '@dispatch/runtime'
import { and, desc, eq, gt, inArray, lte, or, sql } from 'drizzle-orm'
import type { Db } from '../client.ts'
import {
  type CampaignRecipientRow,
  type CampaignRow,
  type CampaignTemplateColumn,
  campaignRecipients,
  campaigns,
} from '../schema/campaigns.ts'
import { messages } from '../schema/messages.ts'
import { OUTBOX_NOTIFY_CHANNEL, outbox } from '../schema/outbox.ts'
import { type AudienceLine, audienceLinesAfter, expandBlocksHoldingNext } from './campaign-audience-blocks.ts'
import { recipientStateOf } from './campaign-counts.ts'
import type { Executor } from './executor.ts'
import { messagesWithIds } from './message-ids.ts'

export interface NewCampaign {
  apiKeyId: string
  tenantId: string | null
  senderId: string
  name: string
  template: CampaignTemplateColumn
  startAt: Date | null
  validitySeconds: number | null
  quietHours: QuietHours | null
}

export async function createCampaign(db: Db, entry: NewCampaign, at: Date): Promise<CampaignRow> {
  const [row] = await db
    .insert(campaigns)
    .values({ ...entry, createdAt: at, updatedAt: at })
    .returning()
  return row as CampaignRow
}

/** One campaign by id; within a key's own when `apiKeyId` is given (another key's is not found). */
export async function findCampaign(
  db: Executor,
  id: string,
  apiKeyId?: string,
): Promise<CampaignRow | undefined> {
  const [row] = await db
    .select()
    .from(campaigns)
    .where(and(eq(campaigns.id, id), apiKeyId === undefined ? undefined : eq(campaigns.apiKeyId, apiKeyId)))
  return row
}

/** The newest campaigns first: a key's, or every key's (an admin's). */
export async function listCampaigns(
  db: Db,
  filter: { apiKeyId?: string; status?: CampaignStatus; limit?: number },
): Promise<CampaignRow[]> {
  return db
    .select()
    .from(campaigns)
    .where(
      and(
        filter.apiKeyId === undefined ? undefined : eq(campaigns.apiKeyId, filter.apiKeyId),
        filter.status === undefined ? undefined : eq(campaigns.status, filter.status),
      ),
    )
    .orderBy(desc(campaigns.createdAt))
    .limit(filter.limit ?? 100)
}

/**
 * Moves a campaign from one of `from` to `to` (with the columns `set` gives), in one conditional
 * update: two callers racing (a pause and the feeder's completion) cannot both win. Answers the
 * row after, or undefined when it was in no state of `from` (or not the key's).
 */
export async function transitionCampaign(
  db: Executor,
  id: string,
  from: readonly CampaignStatus[],
  to: CampaignStatus,
  at: Date,
  options: { apiKeyId?: string | undefined; set?: Partial<typeof campaigns.$inferInsert> } = {},
): Promise<CampaignRow | undefined> {
  const [row] = await db
    .update(campaigns)
    .set({ ...options.set, status: to, updatedAt: at })
    .where(
      and(
        eq(campaigns.id, id),
        inArray(campaigns.status, [...from]),
        options.apiKeyId === undefined ? undefined : eq(campaigns.apiKeyId, options.apiKeyId),
      ),
    )
    .returning()
  return row
}

interface RecipientsPageOptions {
  state?: CampaignRecipientState | undefined
  after?: number | undefined
  take: number
}

/** What a fed row's message says of it: its status, its error, and why it is held (`held` only). */
interface MessageState {
  status: MessageStatus
  lastErrorCode: string | null
  heldFor: 'messaging_limit' | 'quiet_hours' | null
}
type RowWithStatus = AudienceLine & {
  status: MessageStatus | null
  lastErrorCode: string | null
  heldFor: MessageState['heldFor']
}

const toRecipient = (row: RowWithStatus): CampaignRecipient => ({
  line: row.line,
  phone: row.phone,
  userId: row.userId,
  state: row.state === 'fed' ? (row.status ? recipientStateOf(row.status) : 'pending') : row.state,
  reason: row.state === 'fed' ? (row.status === 'scheduled' ? row.heldFor : null) : row.reason,
  detail: row.detail,
  messageId: row.messageId,
  errorCode:
    row.errorCode ?? (row.status === 'failed' || row.status === 'expired' ? row.lastErrorCode : null),
  variables: row.variables,
})

/** The statuses of these messages, read by id (each in its own partition). */
async function statusesOf(db: Db, ids: string[]) {
  const found = new Map<string, MessageState>()
  for (let at = 0; at < ids.length; at += 500) {
    const chunk = ids.slice(at, at + 500)
    const rows = await db
      .select({
        id: messages.id,
        status: messages.status,
        lastErrorCode: messages.lastErrorCode,
        scheduledReason: messages.scheduledReason,
        heldForQuietHours: messages.heldForQuietHours,
      })
      .from(messages)
      .where(messagesWithIds(chunk))
    for (const { id, status, lastErrorCode, scheduledReason, heldForQuietHours } of rows) {
      const heldFor =
        scheduledReason === 'messaging_limit' ? 'messaging_limit' : heldForQuietHours ? 'quiet_hours' : null
      found.set(id, { status, lastErrorCode, heldFor })
    }
  }
  return found
}

/** Lines of a campaign in line order after `after` (its blocks expanded), with their messages' statuses. */
async function rowsAfter(
  db: Db,
  campaign: CampaignRow,
  after: number,
  take: number,
  only?: CampaignRecipientRow['state'][],
) {
  const rows = await audienceLinesAfter(db, campaign.id, after, take, only)
  const ids = rows.flatMap((r) => (r.messageId && r.state === 'fed' ? [r.messageId] : []))
  const statuses = ids.length > 0 ? await statusesOf(db, ids) : new Map()
  return rows.map(
    (r): RowWithStatus => ({
      ...r,
      status: r.messageId ? (statuses.get(r.messageId)?.status ?? null) : null,
      lastErrorCode: r.messageId ? (statuses.get(r.messageId)?.lastErrorCode ?? null) : null,
      heldFor: r.messageId ? (statuses.get(r.messageId)?.heldFor ?? null) : null,
    }),
  )
}

/**
 * A page of a campaign's recipients in line order, after line `after`, optionally of one state.
 * A state only a row holds (skipped) is read off the rows; a message's state reads the fed rows in
 * line order and keeps those whose message is in it, page after page, until `take` are found or
 * the audience ends. Canceled is both: a row not fed when its campaign was canceled, and a fed
 * one whose message was canceled before it went; both are read.
 */
export async function campaignRecipientsPage(
  db: Db,
  campaign: CampaignRow,
  options: RecipientsPageOptions,
): Promise<{ data: CampaignRecipient[]; next: number | null }> {
  const { state, take } = options
  let after = options.after ?? 0
  const own = state === 'skipped' ? [state] : undefined
  const rowStates: CampaignRecipientRow['state'][] | undefined =
    own ??
    (state === undefined
      ? undefined
      : state === 'pending'
        ? ['pending', 'fed']
        : state === 'canceled'
          ? ['canceled', 'fed']
          : ['fed'])
  const data: CampaignRecipient[] = []
  const chunk = state === undefined || own ? take : Math.max(take, 1000)
  for (;;) {
    const rows = await rowsAfter(db, campaign, after, chunk, rowStates)
    for (const row of rows) {
      const recipient = toRecipient(row)
      after = row.line
      if (state === undefined || recipient.state === state) data.push(recipient)
      if (data.length === take) break
    }
    if (data.length === take) {
      const more = await audienceLinesAfter(db, campaign.id, after, 1)
      return { data, next: more.length > 0 ? after : null }
    }
    if (rows.length < chunk) return { data, next: null }
  }
}

/**
 * Every row of a campaign in line order with its state, a chunk at a time (for the export): never
 * the whole audience in memory.
 */
export async function* campaignRecipientChunks(
  db: Db,
  campaign: CampaignRow,
  state?: CampaignRecipientState,
  chunk = 5000,
): AsyncGenerator<CampaignRecipient[]> {
  let after = 0
  for (;;) {
    const rows = await rowsAfter(db, campaign, after, chunk)
    if (rows.length === 0) return
    after = (rows[rows.length - 1] as RowWithStatus).line
    const recipients = rows.map(toRecipient)
    yield state === undefined ? recipients : recipients.filter((r) => r.state === state)
    if (rows.length < chunk) return
  }
}

/** The campaigns the feeder has work for: running, or scheduled and due. */
export async function campaignsToFeed(db: Db, now: Date): Promise<CampaignRow[]> {
  return db
    .select()
    .from(campaigns)
    .where(
      or(
        eq(campaigns.status, 'running'),
        and(eq(campaigns.status, 'scheduled'), lte(campaigns.startAt, now)),
      ),
    )
}

/** A row as the feeder sends it. */
export interface FedRow {
  line: number
  phone: string | null
  userId: string | null
  variables: Record<string, string> | null
  messageId: string
}

/**
 * The next `size` rows of a running campaign after its cursor, given their message ids (all of one
 * time, `at`) and marked `fed`, the cursor moved past them, in one transaction: the ids are in
 * Postgres before anything is stored in Redis. None when the campaign is not running (paused or
 * canceled meanwhile: its row is locked here, so a pause waits for this to commit).
 *
 * After the lock, one statement takes the rows, marks them and moves the cursor, so the rows never
 * travel to the feeder and back as parameters (it read them, then sent every line and id back: six
 * round trips a window, docs/benchmarks-campaigns.md). It reads what committed before the lock, and
 * updates only rows still `pending`, so a row another feeder marked meanwhile (a lease that ran
 * out) is never given a second id. Each id is `messageIdAt(at)`'s: its time prefix, the rest random.
 * With a feeder's `token`, none either once another feeder took the campaign (`takeCampaignFeed`).
 */
export async function assignWindow(
  db: Db,
  campaignId: string,
  size: number,
  at: Date,
  token?: number,
): Promise<FedRow[]> {
  return db.transaction(async (tx) => {
    // The window is read in line order off the primary key and its rows updated as the key's
    // range from its first line to its last (the pending rows between are exactly the window),
    // whatever the statistics say: an audience just uploaded is not in them until autovacuum
    // analyzes it. Postgres then planned a bitmap scan of every row the campaign had left, sorted,
    // for each window (90 ms with 100,000 rows left, a second with a million), or, with statistics
    // of other campaigns only, a join that read the new campaign's million rows once per row of
    // the window (a window ran for minutes). With bitmap and sequential scans off for this
    // transaction (`set_config(…, true)`, set with the lock in one round trip), a window reads
    // and updates its own rows: 20 ms a 1,000 with a million left, on a loaded machine.
    const [campaign] = await tx.execute<{ fedThrough: number; confirmedThrough: number }>(sql`
      select fed_through as "fedThrough", confirmed_through as "confirmedThrough",
        set_config('enable_bitmapscan', 'off', true), set_config('enable_seqscan', 'off', true)
      from campaigns where id = ${campaignId} and status = 'running'
        ${token === undefined ? sql`` : sql`and feed_token = ${token}`}
      for update`)
    if (!campaign || campaign.fedThrough !== campaign.confirmedThrough) return []
    // The blocks holding the window's lines (an upload keeps its taken lines as blocks) become a
    // row per line first, so the window below reads rows only.
    await expandBlocksHoldingNext(tx, campaignId, campaign.fedThrough, size)
    // "tttttttt-tttt-7": the time and version of every id of the window (message-ids.ts).
    const prefix = messageIdAt(at.getTime()).slice(0, 15)
    const rows = await tx.execute<Pick<FedRow, keyof FedRow>>(sql`
      with next as (
        select min(line) as first, max(line) as last from (
          select line from campaign_recipients
          where campaign_id = ${campaignId} and line > ${campaign.fedThrough} and state = 'pending'
          order by line
          limit ${size}) as w
      ),
      fed as (
        update campaign_recipients r
        set state = 'fed', message_id = (${prefix} || substr(gen_random_uuid()::text, 16))::uuid
        where r.campaign_id = ${campaignId} and r.state = 'pending'
          and r.line >= (select first from next) and r.line <= (select last from next)
        returning r.line, r.phone, r.user_id, r.variables, r.message_id
      ),
      moved as (
        update campaigns set fed_through = (select max(line) from fed),
          fed_rows = fed_rows + (select count(*) from fed), updated_at = ${at.toISOString()}::timestamptz
        where id = ${campaignId} and exists (select 1 from fed)
      )
      select line, phone, user_id as "userId", variables::jsonb as variables, message_id::text as "messageId"
      from fed order by line`)
    return [...rows]
  })
}

/**
 * The rows fed but not confirmed stored (a feeder stopped between the two): stored again under
 * the same ids by whoever feeds the campaign next.
 */
export async function unconfirmedRows(db: Db, campaign: CampaignRow): Promise<FedRow[]> {
  if (campaign.fedThrough === campaign.confirmedThrough) return []
  const rows = await db
    .select({
      line: campaignRecipients.line,
      phone: campaignRecipients.phone,
      userId: campaignRecipients.userId,
      variables: campaignRecipients.variables,
      messageId: campaignRecipients.messageId,
    })
    .from(campaignRecipients)
    .where(
      and(
        eq(campaignRecipients.campaignId, campaign.id),
        gt(campaignRecipients.line, campaign.confirmedThrough),
        lte(campaignRecipients.line, campaign.fedThrough),
        eq(campaignRecipients.state, 'fed'),
      ),
    )
    .orderBy(campaignRecipients.line)
  return rows.flatMap((r) => (r.messageId ? [{ ...r, messageId: r.messageId }] : []))
}

/** A fed row its send refused: skipped, with why; its message id is dropped (nothing was stored). */
export interface RefusedRow {
  line: number
  reason: string
  errorCode: string
  detail: string
}

/** Which of these messages Postgres holds (any status): read by id, each in its own partition. */
export async function recordedMessageIds(db: Db, ids: string[]): Promise<Set<string>> {
  return new Set((await statusesOf(db, ids)).keys())
}

/**
 * Records what a window's store came to: the refused rows skipped, the cursor confirmed. Only rows
 * still `fed` are skipped and counted (`refused_rows`), so a window confirmed twice (by a feeder
 * whose lease ran out, and by the next) counts each row once. With a feeder's `token`, nothing is
 * recorded (false) once another feeder took the campaign.
 */
export async function confirmWindow(
  db: Db,
  campaignId: string,
  through: number,
  refused: RefusedRow[],
  at: Date,
  token?: number,
): Promise<boolean> {
  if (refused.length === 0) {
    // Nothing refused (most windows): the cursor alone, under the token, in one statement.
    const confirmed = await db
      .update(campaigns)
      .set({ confirmedThrough: sql`greatest(${campaigns.confirmedThrough}, ${through})`, updatedAt: at })
      .where(
        and(eq(campaigns.id, campaignId), token === undefined ? undefined : eq(campaigns.feedToken, token)),
      )
      .returning({ id: campaigns.id })
    return token === undefined || confirmed.length > 0
  }
  return db.transaction(async (tx) => {
    if (token !== undefined) {
      const [held] = await tx.execute(sql`
        select 1 from campaigns where id = ${campaignId} and feed_token = ${token} for update`)
      if (!held) return false
    }
    let skipped = 0
    if (refused.length > 0) {
      const rows = await tx.execute(sql`
        update campaign_recipients r
        set state = 'skipped', message_id = null, reason = v.reason, error_code = v.code, detail = v.detail
        from unnest(${sql.param(refused.map((r) => r.line))}::int[], ${sql.param(refused.map((r) => r.reason))}::text[],
          ${sql.param(refused.map((r) => r.errorCode))}::text[], ${sql.param(refused.map((r) => r.detail))}::text[])
          as v(line, reason, code, detail)
        where r.campaign_id = ${campaignId} and r.line = v.line and r.state = 'fed'
        returning r.line`)
      skipped = [...rows].length
    }
    await tx
      .update(campaigns)
      .set({
        confirmedThrough: sql`greatest(${campaigns.confirmedThrough}, ${through})`,
        refusedRows: sql`${campaigns.refusedRows} + ${skipped}`,
        updatedAt: at,
      })
      .where(eq(campaigns.id, campaignId))
    return true
  })
}

/**
 * A feeder takes a campaign (it took its lease): the campaign's fencing token raised, and answered.
 * Windows are then assigned and confirmed only under it (`assignWindow`, `confirmWindow`).
 */
export async function takeCampaignFeed(db: Db, campaignId: string): Promise<number> {
  const [row] = await db
    .update(campaigns)
    .set({ feedToken: sql`${campaigns.feedToken} + 1` })
    .where(eq(campaigns.id, campaignId))
    .returning({ token: campaigns.feedToken })
  return row?.token ?? 0
}

/**
 * Whether a campaign has rows not fed yet: the first `pending` row past its cursor, read off the
 * primary key in line order and stopping at the first (LIMIT 1), never a count of its rows.
 */
export async function hasPendingRows(db: Db, campaign: CampaignRow): Promise<boolean> {
  const rows = await db
    .select({ line: campaignRecipients.line })
    .from(campaignRecipients)
    .where(
      and(
        eq(campaignRecipients.campaignId, campaign.id),
        gt(campaignRecipients.line, campaign.fedThrough),
        eq(campaignRecipients.state, 'pending'),
      ),
    )
    .orderBy(campaignRecipients.line)
    .limit(1)
  return rows.length > 0
}

/**
 * Cancels the rows not fed yet (the campaign's cancel), counted on the campaign: answers how many
 * lines. A block is canceled whole, its lines with it (read, or expanded, in its state).
 */
export async function cancelPendingRows(db: Executor, campaignId: string): Promise<number> {
  const [row] = await db.execute<{ n: number }>(sql`
    with canceled as (
      update campaign_recipients set state = 'canceled'
      where campaign_id = ${campaignId} and state = 'pending'
      returning coalesce(lines, 1) as n
    )
    select coalesce(sum(n), 0)::int as n from canceled`)
  const canceled = row?.n ?? 0
  if (canceled > 0)
    await db
      .update(campaigns)
      .set({ canceledRows: sql`${campaigns.canceledRows} + ${canceled}` })
      .where(eq(campaigns.id, campaignId))
  return canceled
}

/** Emits a campaign event (`campaign.started`…) to the key's subscribed endpoints, through the outbox. */
export async function emitCampaignEvent(
  db: Executor,
  campaign: CampaignRow,
  type: 'campaign.started' | 'campaign.progress' | 'campaign.completed',
  data: Record<string, unknown>,
  at: Date,
): Promise<void> {
  await db.execute(
    sql`select dispatch_emit_webhook_event(${campaign.apiKeyId}::uuid, ${type}, null, ${JSON.stringify({ campaignId: campaign.id, name: campaign.name, ...data })}::jsonb, ${at.toISOString()}::timestamptz)`,
  )
}

/** The states a campaign can be canceled from. */
export const CANCELABLE_CAMPAIGN: readonly CampaignStatus[] = [
  'draft',
  'ready',
  'scheduled',
  'running',
  'paused',
]

/**
 * Cancels a campaign in one transaction: its status, its rows not fed yet (`canceled`), and the
 * outbox row whose job cancels its messages still in Redis (queue `campaign-cancels`). So a cancel
 * answered always sweeps, and the feeder (which locks the campaign's row to feed) never feeds after
 * it. Undefined when the campaign is in no cancelable state (or not the key's).
 */
export async function cancelCampaign(
  db: Db,
  id: string,
  at: Date,
  apiKeyId?: string,
): Promise<CampaignRow | undefined> {
  return db.transaction(async (tx) => {
    const row = await transitionCampaign(tx, id, CANCELABLE_CAMPAIGN, 'canceled', at, {
      apiKeyId,
      set: { canceledAt: at },
    })
    if (!row) return undefined
    await cancelPendingRows(tx, id)
    if (row.fedThrough > 0) {
      const payload: CampaignCancelPayload = { campaignId: id }
      await tx.insert(outbox).values({ topic: QueueNames.campaignCancels, payload, createdAt: at })
      await tx.execute(sql`select pg_notify(${OUTBOX_NOTIFY_CHANNEL}, '')`)
    }
    return row
  })
}

/**
 * Starts a campaign `from` one of these states: `scheduled` while its `startAt` is ahead of `now`,
 * else `running` from now, with its `campaign.started` event in the same transaction (an event
 * exactly when the start committed). Undefined when it was in none of them.
 */
export async function startCampaign(
  db: Db,
  id: string,
  from: readonly CampaignStatus[],
  now: Date,
  apiKeyId?: string,
): Promise<CampaignRow | undefined> {
  return db.transaction(async (tx) => {
    const [current] = await tx
      .select()
      .from(campaigns)
      .where(and(eq(campaigns.id, id), apiKeyId === undefined ? undefined : eq(campaigns.apiKeyId, apiKeyId)))
      .for('update')
    if (!current || !from.includes(current.status)) return undefined
    if (current.startAt && current.startAt.getTime() > now.getTime()) {
      return transitionCampaign(tx, id, from, 'scheduled', now)
    }
    const row = await transitionCampaign(tx, id, from, 'running', now, {
      set: { startedAt: current.startedAt ?? now },
    })
    if (row && !current.startedAt) {
      await emitCampaignEvent(tx, row, 'campaign.started', { audience: row.audience?.taken ?? 0 }, now)
    }
    return row
  })
}

/**
 * The canceled campaigns that fed messages, with their keys: what a messages worker holds in memory
 * to cancel, at delivery, a message of one it still meets (held for the messaging limit, waiting for
 * a retry, stored by a feeder after the sweep). A cancel is an operator's act: they stay few.
 */
export async function listCanceledCampaigns(db: Db): Promise<Array<{ id: string; apiKeyId: string }>> {
  return db
    .select({ id: campaigns.id, apiKeyId: campaigns.apiKeyId })
    .from(campaigns)
    .where(
      and(
        eq(campaigns.status, 'canceled'),
        gt(campaigns.fedThrough, 0),
        gt(campaigns.canceledAt, sql`now() - interval '3 days'`),
      ),
    )
}
