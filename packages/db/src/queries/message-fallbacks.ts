import type { Sql } from '../client.ts'
import type { FallbackState, MessageFallbackRow } from '../schema/message-fallbacks.ts'
import { isMissingTable, partitionAt } from './message-partitions.ts'

/**
 * The channel fallback's record (docs/fallback.md, "At most once: the record"). Each step is one
 * conditional statement, so two processes (or a late status) never both win a step:
 *
 * - `decideFallback` inserts the decision only while the message is in a status the rule allows
 *   (never `delivered`, `read` or `canceled`), reading the message `FOR NO KEY UPDATE`: a status
 *   update of the message (a late `delivered`) and the decision serialize on its row; under READ
 *   COMMITTED the one that waited re-reads the row as the other committed it.
 * - `beginFallbackCall` moves `decided` to `calling` before the provider is called, or to
 *   `withdrawn` when WhatsApp delivered meanwhile (read under the same lock): one caller at most.
 * - `recordFallbackSent` / `recordFallbackFailed` settle a `calling` row; a row left `calling` by
 *   a killed process is never called again: `markAbandonedCalls` records it `unknown`.
 */

export type FallbackReason = 'whatsapp_undeliverable' | 'expired' | 'not_delivered_in_time'

/** Statuses no rule falls back from: the message got there, or was never meant to go. */
const NEVER_FROM = ['delivered', 'read', 'canceled']

/** The message's table: its period's partition when it has one (message-partitions.ts), else `messages`. */
async function onMessageTable<T>(sql: Sql, acceptedAt: Date, run: (table: string) => Promise<T>): Promise<T> {
  const partition = await partitionAt(sql, acceptedAt.getTime())
  if (partition !== null) {
    try {
      return await run(partition)
    } catch (error) {
      if (!isMissingTable(error)) throw error
    }
  }
  return run('messages')
}

export interface FallbackDecision {
  messageId: string
  acceptedAt: Date
  reason: FallbackReason
  reasonCode?: string | undefined
  /** The message statuses this rule falls back from (`failed` for 131026, `sent` for a timeout). */
  fromStatuses: string[]
  at: Date
}

/**
 * Records the decision to fall back, if the message is in one of `fromStatuses` and has no
 * fallback yet. `decided`: this call took it; `taken`: a fallback was decided before (by this rule
 * or another); `refused`: the message is not in such a status (delivered, read, canceled…) or has
 * no record.
 */
export async function decideFallback(
  sql: Sql,
  d: FallbackDecision,
): Promise<'decided' | 'taken' | 'refused'> {
  const statuses = d.fromStatuses.filter((s) => !NEVER_FROM.includes(s))
  const at = d.at.toISOString()
  const rows = await onMessageTable(
    sql,
    d.acceptedAt,
    (table) => sql`
      insert into message_fallbacks as f
        (message_id, accepted_at, api_key_id, batch_id, reason, reason_code, state, decided_at, updated_at)
      select m.id, m.accepted_at, m.api_key_id, m.batch_id, ${d.reason}, ${d.reasonCode ?? null}, 'decided',
        ${at}::timestamptz, ${at}::timestamptz
      from ${sql(table)} m
      where m.id = ${d.messageId} and m.accepted_at = ${d.acceptedAt.toISOString()}::timestamptz
        and m.status::text = any(${statuses}::text[])
        -- WhatsApp delivered it once (a failed reported after its delivered moves it on): no SMS.
        and m.delivered_at is null
      for no key update of m
      on conflict (message_id) do nothing
      returning f.message_id`,
  )
  if (rows.length > 0) return 'decided'
  const [existing] = await sql`select 1 from message_fallbacks where message_id = ${d.messageId}`
  return existing ? 'taken' : 'refused'
}

/**
 * Takes the right to call the provider: `decided` → `calling`, written (and committed) before the
 * call. `withdrawn`: WhatsApp delivered (or read) since the decision, nothing is sent. `none`: no
 * decided fallback (another process took it, or it was settled).
 */
export async function beginFallbackCall(
  sql: Sql,
  call: { messageId: string; acceptedAt: Date; at: Date },
): Promise<'calling' | 'withdrawn' | 'none'> {
  const at = call.at.toISOString()
  const rows = await onMessageTable(
    sql,
    call.acceptedAt,
    (table) => sql<{ state: FallbackState }[]>`
      with m as (
        select case when delivered_at is not null then 'delivered' else status::text end as status
        from ${sql(table)}
        where id = ${call.messageId} and accepted_at = ${call.acceptedAt.toISOString()}::timestamptz
        for no key update
      ), got as (select coalesce((select status from m), '') in ('delivered', 'read') as there)
      update message_fallbacks f set
        state = case when got.there then 'withdrawn' else 'calling' end,
        calling_at = case when got.there then null else ${at}::timestamptz end,
        settled_at = case when got.there then ${at}::timestamptz end,
        updated_at = ${at}::timestamptz
      from got
      where f.message_id = ${call.messageId} and f.state = 'decided'
      returning f.state`,
  )
  return rows[0]?.state === 'calling' ? 'calling' : rows[0]?.state === 'withdrawn' ? 'withdrawn' : 'none'
}

/** The provider took the SMS: `calling` → `sent`, with its id and first status. */
export async function recordFallbackSent(
  sql: Sql,
  sent: { messageId: string; provider: string; providerMessageId: string; providerStatus: string; at: Date },
): Promise<boolean> {
  const at = sent.at.toISOString()
  const rows = await sql.begin(async (tx) => {
    // The message's row first: `sent` fires its event's trigger (dispatch_fallback_webhook_events),
    // which locks it, and every other step locks it before the fallback's row. Locked the other way
    // round, a racing run's `beginFallbackCall` (the message, then the fallback) deadlocked with it.
    await tx`
      select 1 from messages m
      where (m.id, m.accepted_at) in (
        select message_id, accepted_at from message_fallbacks where message_id = ${sent.messageId})
      for no key update of m`
    return tx`
      update message_fallbacks set state = 'sent', settled_at = ${at}::timestamptz,
        provider = ${sent.provider}, provider_message_id = ${sent.providerMessageId},
        provider_status = ${sent.providerStatus}, provider_status_at = ${at}::timestamptz,
        updated_at = ${at}::timestamptz
      where message_id = ${sent.messageId} and state = 'calling'
      returning message_id`
  })
  return rows.length > 0
}

/**
 * The call failed: `calling` → `failed` when the provider surely did not take the SMS, `unknown`
 * when it may have (a timeout, a lost answer, a 5xx). Neither is ever called again.
 */
export async function recordFallbackFailed(
  sql: Sql,
  failed: {
    messageId: string
    provider: string | null
    code: string
    message: string
    outcomeKnown: boolean
    at: Date
  },
): Promise<boolean> {
  const at = failed.at.toISOString()
  const rows = await sql`
    update message_fallbacks set state = ${failed.outcomeKnown ? 'failed' : 'unknown'},
      settled_at = ${at}::timestamptz, provider = ${failed.provider},
      error_code = ${failed.code}, error_message = ${failed.message}, updated_at = ${at}::timestamptz
    where message_id = ${failed.messageId} and state = 'calling'
    returning message_id`
  return rows.length > 0
}

/**
 * Rows a killed process left `calling` since before `callingBefore` (longer than any call takes):
 * recorded `unknown` (`CALL_INTERRUPTED`), as the provider may or may not have taken the SMS.
 */
export async function markAbandonedCalls(sql: Sql, callingBefore: Date, at: Date): Promise<string[]> {
  const rows = await sql<{ message_id: string }[]>`
    update message_fallbacks set state = 'unknown', settled_at = ${at.toISOString()}::timestamptz,
      error_code = 'CALL_INTERRUPTED',
      error_message = 'The process calling the SMS provider stopped before it recorded the answer',
      updated_at = ${at.toISOString()}::timestamptz
    where state = 'calling' and calling_at < ${callingBefore.toISOString()}::timestamptz
    returning message_id`
  return rows.map((r) => r.message_id)
}

/**
 * How far along each SMS status is: a status callback only moves a fallback forward, so a late or
 * repeated callback changes nothing. The final ones share a rank: the first to arrive stays.
 */
export const SMS_STATUS_RANK: Record<string, number> = {
  accepted: 0,
  scheduled: 0,
  queued: 1,
  sending: 2,
  sent: 3,
  delivered: 4,
  undelivered: 4,
  failed: 4,
  canceled: 4,
  read: 5,
}

const rankSql = (sql: Sql) =>
  sql.unsafe(
    `case f.provider_status ${Object.entries(SMS_STATUS_RANK)
      .map(([status, rank]) => `when '${status}' then ${rank}`)
      .join(' ')} else -1 end`,
  )

/**
 * A status callback of the SMS with this provider id: applied only forward. Returns the message's
 * id when the fallback moved; undefined for an unknown SMS, an unknown status or one not ahead.
 */
export async function applySmsStatus(
  sql: Sql,
  update: {
    providerMessageId: string
    status: string
    errorCode?: string | undefined
    /** What the provider charged, when the report says (a positive amount), and its currency. */
    price?: { amount: string; currency: string } | undefined
    at: Date
  },
): Promise<string | undefined> {
  const rank = SMS_STATUS_RANK[update.status]
  if (rank === undefined) return undefined
  const at = update.at.toISOString()
  const failing = update.status === 'undelivered' || update.status === 'failed'
  const [row] = await sql<{ message_id: string }[]>`
    update message_fallbacks f set provider_status = ${update.status},
      provider_status_at = ${at}::timestamptz,
      error_code = case when ${failing} then coalesce(${update.errorCode ?? null}, f.error_code) else f.error_code end,
      price = coalesce(${update.price?.amount ?? null}::numeric, f.price),
      price_unit = case when ${update.price?.amount ?? null}::numeric is null then f.price_unit else ${update.price?.currency ?? null} end,
      updated_at = greatest(f.updated_at, ${at}::timestamptz)
    where f.provider_message_id = ${update.providerMessageId} and ${rankSql(sql)} < ${rank}
    returning f.message_id`
  return row?.message_id
}

/** The SMS statuses after which the provider's price is asked for (its final ones). */
export const SMS_PRICED_STATUSES = ['delivered', 'undelivered', 'failed']
/** How many times an SMS's price is asked for before it is left unpriced. */
export const SMS_PRICE_CHECKS = 24

/**
 * Takes the price checks due: SMS the provider took whose delivery ended (a final report) and have
 * no price yet, never asked or asked `spacingMs` · 2^checks ago (at most 64 · `spacingMs`), at most
 * SMS_PRICE_CHECKS times. Taking one stamps it (`price_checked_at`, `price_checks` + 1) in the same
 * statement, rows locked by another taker skipped: two workers never ask for the same SMS at once.
 */
export async function takeDuePriceChecks(
  sql: Sql,
  options: { now: Date; spacingMs: number; limit: number },
): Promise<Array<{ messageId: string; providerMessageId: string }>> {
  const now = options.now.toISOString()
  const rows = await sql<{ message_id: string; provider_message_id: string }[]>`
    update message_fallbacks f set price_checked_at = ${now}::timestamptz, price_checks = f.price_checks + 1
    where f.message_id in (
      select message_id from message_fallbacks
      where state = 'sent' and price is null and provider_status = any(${SMS_PRICED_STATUSES}::text[])
        and provider_message_id is not null and price_checks < ${SMS_PRICE_CHECKS}
        and (price_checked_at is null or price_checked_at
          + make_interval(secs => ${options.spacingMs / 1000} * power(2, least(price_checks - 1, 6)))
          <= ${now}::timestamptz)
      order by price_checked_at nulls first
      limit ${options.limit}
      for update skip locked)
    returning f.message_id, f.provider_message_id`
  return rows.map((r) => ({ messageId: r.message_id, providerMessageId: r.provider_message_id }))
}

/** The provider's price of an SMS, as its Message resource said: kept once (a report's, if first, stays). */
export async function recordSmsPrice(
  sql: Sql,
  priced: { messageId: string; price: { amount: string; currency: string }; at: Date },
): Promise<boolean> {
  const rows = await sql`
    update message_fallbacks set price = ${priced.price.amount}::numeric, price_unit = ${priced.price.currency},
      updated_at = greatest(updated_at, ${priced.at.toISOString()}::timestamptz)
    where message_id = ${priced.messageId} and price is null
    returning message_id`
  return rows.length > 0
}

/** A message's fallback, for its view; undefined when it has none. */
export async function findFallback(sql: Sql, messageId: string): Promise<MessageFallbackRow | undefined> {
  const [row] = await sql<Record<string, unknown>[]>`
    select * from message_fallbacks where message_id = ${messageId}`
  return row ? toFallbackRow(row) : undefined
}

/** The fallbacks of a page of messages (a list's), by message id; those without one are absent. */
export async function findFallbacks(
  sql: Sql,
  messageIds: string[],
): Promise<Map<string, MessageFallbackRow>> {
  if (messageIds.length === 0) return new Map()
  const rows = await sql<Record<string, unknown>[]>`
    select * from message_fallbacks where message_id = any(${messageIds}::uuid[])`
  return new Map(rows.map((row) => [String(row.message_id), toFallbackRow(row)]))
}

function toFallbackRow(row: Record<string, unknown>): MessageFallbackRow {
  // Times as Dates whichever way the client parses them (drizzle's keeps them strings).
  const date = (value: unknown) => (value === null || value === undefined ? null : new Date(value as string))
  const text = (value: unknown) => (value === null || value === undefined ? null : String(value))
  return {
    messageId: String(row.message_id),
    acceptedAt: date(row.accepted_at) as Date,
    apiKeyId: String(row.api_key_id),
    batchId: text(row.batch_id),
    channel: String(row.channel),
    reason: String(row.reason),
    reasonCode: text(row.reason_code),
    state: row.state as FallbackState,
    decidedAt: date(row.decided_at) as Date,
    callingAt: date(row.calling_at),
    settledAt: date(row.settled_at),
    provider: text(row.provider),
    providerMessageId: text(row.provider_message_id),
    providerStatus: text(row.provider_status),
    providerStatusAt: date(row.provider_status_at),
    errorCode: text(row.error_code),
    errorMessage: text(row.error_message),
    price: text(row.price),
    priceUnit: text(row.price_unit),
    priceCheckedAt: date(row.price_checked_at),
    priceChecks: Number(row.price_checks ?? 0),
    updatedAt: date(row.updated_at) as Date,
  }
}
