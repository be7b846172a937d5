import { and, asc, eq, sql } from 'drizzle-orm'
import type { Db } from '../client.ts'
import { adminAuditLog } from '../schema/admin-audit-log.ts'
import { messageAttempts, SENDER_CHANGED_OUTCOME } from '../schema/message-attempts.ts'
import { webhookEndpoints } from '../schema/webhook-endpoints.ts'
import { webhookAttempts, webhookEvents } from '../schema/webhook-events.ts'
import { findFallback } from './message-fallbacks.ts'
import { webhookAttemptsOfEvents, webhookEventsAboutMessages } from './partitioned-ids.ts'
import { senderChangeOf } from './sender-changes.ts'

/** How many messages reached each status, per minute, since `since`. */
export interface MinuteRow {
  minute: Date
  status: string
  count: number
}

/** A status and the column holding when a message reached it, in the order the chart lists them. */
const STATUS_TIMES = [
  ['queued', 'accepted_at'],
  ['sent', 'sent_at'],
  ['delivered', 'delivered_at'],
  ['read', 'read_at'],
  ['failed', 'failed_at'],
  ['expired', 'expired_at'],
  ['canceled', 'canceled_at'],
] as const

/** Past this much acceptance time, the chart's messages are read in CHART_SLICES statements at once. */
const SLICED_PAST_MS = 86_400_000
const CHART_SLICES = 3

/**
 * The overview's chart: per bucket since `since`, how many messages were accepted and how many
 * reached each later status. Each status has its own time column; the messages read are the ones
 * accepted since `acceptedSince` (the range and the longest validity before it), through
 * `messages_accepted_at_idx`, so the query reads the range's traffic, not the table.
 *
 * In two steps: the messages are first counted by their buckets, one per status (null before
 * `since`), which folds the range's rows into the few combinations they make (a message is mostly
 * sent and delivered within its acceptance's bucket); only those are then spread into (bucket,
 * status) pairs. Spreading every message into seven rows first made the 7-day chart 3× slower.
 *
 * Reading the messages is most of the time (at 10 M messages, the 7-day chart reads 800,000), and
 * Postgres reads them in one process: it cannot count the fold in parallel workers, since it
 * expects a group per message (it multiplies the seven columns' distinct values). So a long window
 * (over a day: the 7-day chart) is cut into CHART_SLICES spans of acceptance time, counted by as
 * many statements at once, on as many connections, and summed here (bench:message-search,
 * docs/benchmarks-paths.md). `until` only places the cuts: every message from `acceptedSince` on
 * is counted whatever it is.
 */
export async function messagesPerMinute(
  db: Db,
  since: Date,
  acceptedSince: Date,
  bucketSeconds = 60,
  options: { until?: Date; slices?: number } = {},
): Promise<MinuteRow[]> {
  const from = acceptedSince.getTime()
  const until = (options.until ?? new Date()).getTime()
  const wanted = options.slices ?? (until - from > SLICED_PAST_MS ? CHART_SLICES : 1)
  const slices = until > from ? Math.max(1, Math.trunc(wanted)) : 1
  const cuts = Array.from(
    { length: slices - 1 },
    (_, i) => new Date(from + ((until - from) * (i + 1)) / slices),
  )
  const spans = [acceptedSince, ...cuts].map((start, i) => ({ start, end: cuts[i] }))
  const counted = await Promise.all(spans.map((span) => chartSlice(db, since, span, bucketSeconds)))
  const sums = new Map<string, MinuteRow>()
  for (const row of counted.flat()) {
    const key = `${row.minute.getTime()} ${row.status}`
    const sum = sums.get(key)
    if (sum) sum.count += row.count
    else sums.set(key, { ...row })
  }
  return [...sums.values()].sort((a, b) => a.minute.getTime() - b.minute.getTime())
}

/**
 * The chart's counts over the messages accepted in `span` (`end` excluded; none: to the last).
 *
 * The seven buckets are folded as one array, computed in a subquery the planner keeps apart
 * (`offset 0`): grouped by seven expressions over the time columns, Postgres expects a group per
 * message and may sort them all on seven keys (spilling past `work_mem`); of one value it knows
 * nothing of, it expects 200 groups and hashes them (a few thousand at 10 M messages). JIT is off
 * for the statement (`set local`, in its own transaction): the plan's cost passes JIT's thresholds
 * with the traffic, and compiling it took longer than running it (626–756 ms against 85–146 at
 * 1 M messages).
 */
async function chartSlice(db: Db, since: Date, span: { start: Date; end?: Date }, bucketSeconds: number) {
  const bucket = sql`${`${Math.trunc(bucketSeconds)} seconds`}::interval`
  const from = sql`${since.toISOString()}::timestamptz`
  // Buckets start at whole multiples of their size since the epoch (a minute, a quarter hour, an hour).
  const binned = STATUS_TIMES.map(
    ([, column]) =>
      sql`case when m.${sql.raw(column)} >= ${from} then date_bin(${bucket}, m.${sql.raw(column)}, timestamptz 'epoch') end`,
  )
  const spread = STATUS_TIMES.map(([status], i) => sql`(${status}, g.buckets[${sql.raw(String(i + 1))}])`)
  const before = span.end ? sql`and m.accepted_at < ${span.end.toISOString()}::timestamptz` : sql``
  const rows = await db.transaction(async (tx) => {
    await tx.execute(sql`set local jit = off`)
    return tx.execute<{ minute: Date; status: string; count: string }>(
      sql`select t.minute, t.status, sum(g.n)::text as count
        from (
          select b.buckets, count(*) as n
          from (
            select array[${sql.join(binned, sql`, `)}] as buckets
            from messages m
            where m.accepted_at >= ${span.start.toISOString()}::timestamptz ${before}
            offset 0
          ) b
          group by b.buckets
        ) g
        cross join lateral (values ${sql.join(spread, sql`, `)}) as t(status, minute)
        where t.minute is not null
        group by 1, 2`,
    )
  })
  return rows.map((row) => ({ minute: new Date(row.minute), status: row.status, count: Number(row.count) }))
}

/** The error codes of failed delivery attempts since `since`, most frequent first (a pool's moves are none). */
export async function topErrorCodes(db: Db, since: Date, limit = 10) {
  const rows = await db.execute<{ code: string; count: string }>(
    sql`select error_code as code, count(*)::text as count from message_attempts
      where created_at >= ${since.toISOString()}::timestamptz and outcome <> ${SENDER_CHANGED_OUTCOME}
      group by error_code order by count(*) desc, error_code limit ${Math.trunc(limit)}`,
  )
  return rows.map((row) => ({ code: row.code, count: Number(row.count) }))
}

/** Endpoints with failed attempts since `since`: how many, and the last one's error. */
export async function failingWebhookEndpoints(db: Db, since: Date, limit = 20) {
  const rows = await db.execute<{
    endpoint_id: string
    url: string
    api_key_id: string
    client_name: string | null
    failures: string
    last_error: string | null
    last_status_code: number | null
    last_attempt_at: Date
  }>(
    sql`select a.endpoint_id, e.url, e.api_key_id, k.client_name, count(*)::text as failures,
            (array_agg(a.error order by a.created_at desc))[1] as last_error,
            (array_agg(a.status_code order by a.created_at desc))[1] as last_status_code,
            max(a.created_at) as last_attempt_at
       from webhook_attempts a join webhook_endpoints e on e.id = a.endpoint_id
       left join api_keys k on k.id = e.api_key_id
      where a.created_at >= ${since.toISOString()}::timestamptz
        and (a.status_code is null or a.status_code not between 200 and 299)
      group by a.endpoint_id, e.url, e.api_key_id, k.client_name
      order by count(*) desc limit ${Math.trunc(limit)}`,
  )
  return rows.map((row) => ({
    endpointId: row.endpoint_id,
    url: row.url,
    apiKeyId: row.api_key_id,
    clientName: row.client_name ?? undefined,
    failures: Number(row.failures),
    lastError: row.last_error,
    lastStatusCode: row.last_status_code,
    lastAttemptAt: new Date(row.last_attempt_at),
  }))
}

/**
 * What a message's timeline is made of, besides the message's own row: its failed attempts, its
 * moves to another pool member (`senderChanges`, oldest first), its admin retries, its webhook
 * events and their deliveries, its channel fallback.
 */
export async function messageHistory(db: Db, messageId: string) {
  const [rows, retries, events, fallback] = await Promise.all([
    db
      .select()
      .from(messageAttempts)
      .where(eq(messageAttempts.messageId, messageId))
      .orderBy(asc(messageAttempts.createdAt), asc(messageAttempts.id)),
    db
      .select({
        actor: adminAuditLog.actor,
        createdAt: adminAuditLog.createdAt,
        details: adminAuditLog.details,
      })
      .from(adminAuditLog)
      .where(
        and(
          eq(adminAuditLog.targetType, 'message'),
          eq(adminAuditLog.targetId, messageId),
          eq(adminAuditLog.action, 'message.retry'),
        ),
      )
      .orderBy(asc(adminAuditLog.id)),
    db
      .select({ id: webhookEvents.id, type: webhookEvents.type, createdAt: webhookEvents.createdAt })
      .from(webhookEvents)
      // In the partitions from the message's own time on (its id's), not in every one.
      .where(webhookEventsAboutMessages([messageId]))
      .orderBy(asc(webhookEvents.sequence), asc(webhookEvents.createdAt)),
    // Its channel fallback (docs/fallback.md), when one was decided.
    findFallback(db.$client, messageId),
  ])
  const deliveries =
    events.length === 0
      ? []
      : await db
          .select({
            eventId: webhookAttempts.eventId,
            endpointId: webhookAttempts.endpointId,
            url: webhookEndpoints.url,
            attempt: webhookAttempts.attempt,
            statusCode: webhookAttempts.statusCode,
            durationMs: webhookAttempts.durationMs,
            error: webhookAttempts.error,
            createdAt: webhookAttempts.createdAt,
          })
          .from(webhookAttempts)
          .innerJoin(webhookEndpoints, eq(webhookEndpoints.id, webhookAttempts.endpointId))
          // In the partitions from the earliest event's day on, not in every one.
          .where(webhookAttemptsOfEvents(events.map((event) => event.id)))
          .orderBy(asc(webhookAttempts.createdAt), asc(webhookAttempts.id))
  const attempts = rows.filter((row) => row.outcome !== SENDER_CHANGED_OUTCOME)
  const senderChanges = rows
    .filter((row) => row.outcome === SENDER_CHANGED_OUTCOME)
    .map((row) =>
      senderChangeOf({
        from_sender_id: row.fromSenderId,
        to_sender_id: row.toSenderId,
        error_code: row.errorCode,
        created_at: row.createdAt,
      }),
    )
  return { attempts, senderChanges, retries, events, deliveries, fallback }
}

export type MessageHistory = Awaited<ReturnType<typeof messageHistory>>
