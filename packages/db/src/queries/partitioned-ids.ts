import { acceptedAtOfMessageId, createdAtOfWebhookEventId } from '@dispatch/runtime'
import { and, between, eq, or, type SQL, sql } from 'drizzle-orm'
import type { PgColumn } from 'drizzle-orm/pg-core'
import { inboundMessages } from '../schema/inbound-messages.ts'
import { webhookAttempts, webhookEvents } from '../schema/webhook-events.ts'

/** How far from the time its id carries a row's partition column may be (it is the same instant). */
const SLACK_MS = 60_000

/**
 * How long before the time its message's id carries (acceptance; a reply's, receipt) an event about
 * that message may be created. None is created before, but the id's time is the app's clock (a
 * reply's, the platform's) and `created_at` the database's: a day covers those clocks' drift.
 * Migration 0025 (`dispatch_emit_webhook_event`, numbering a message's next event) bounds its read
 * with the same day, as `interval '1 day'`.
 */
export const EVENT_BEFORE_MESSAGE_SLACK_MS = 86_400_000

const DAY_MS = 86_400_000

/**
 * Ids split by whether they carry their row's time, and the span the timed ones cover, widened by
 * `slackMs` on each side.
 */
function idSpan(ids: string[], timeOf: (id: string) => number | null, slackMs = SLACK_MS) {
  const timed: string[] = []
  const untimed: string[] = []
  let from = Number.POSITIVE_INFINITY
  let to = Number.NEGATIVE_INFINITY
  for (const value of ids) {
    const ms = timeOf(value)
    if (ms === null) {
      untimed.push(value)
      continue
    }
    timed.push(value)
    from = Math.min(from, ms)
    to = Math.max(to, ms)
  }
  return { timed, untimed, from: new Date(from - slackMs), to: new Date(to + slackMs) }
}

/**
 * The rows with these ids. When their ids carry the partition column's time (`timeOf`), the
 * condition also bounds that column to the span of those times, so Postgres reads only the
 * partitions of that span (a relay's batch, a retry: one) instead of every one. Ids that carry no
 * time (written before partitioning) are found by id alone.
 */
function rowsWithIds(
  id: PgColumn,
  at: PgColumn,
  timeOf: (id: string) => number | null,
  ids: string[],
  type: 'uuid' | 'text',
): SQL {
  const { timed, untimed, from, to } = idSpan(ids, timeOf)
  const anyOf = (values: string[]) => sql`${id} = any(${sql.param(values)}::${sql.raw(type)}[])`
  const parts: SQL[] = []
  if (timed.length > 0) {
    const span = between(at, from, to)
    parts.push(and(anyOf(timed), span) as SQL)
  }
  if (untimed.length > 0) parts.push(anyOf(untimed))
  if (parts.length === 0) return sql`false`
  return parts.length === 1 ? (parts[0] as SQL) : (or(...parts) as SQL)
}

/**
 * Replies by id: a reply's id is a UUIDv7 of its `received_at` (`recordInboundMessage`), the column
 * `inbound_messages` is partitioned by.
 */
export const inboundMessagesWithIds = (ids: string[]) =>
  rowsWithIds(inboundMessages.id, inboundMessages.receivedAt, acceptedAtOfMessageId, ids, 'uuid')

/** Webhook events by id: an event's id carries its `created_at`, the column it is partitioned by. */
export const webhookEventsWithIds = (ids: string[]) =>
  rowsWithIds(webhookEvents.id, webhookEvents.createdAt, createdAtOfWebhookEventId, ids, 'text')

/** Webhook event ids split as `webhookEventsWithIds` reads them, for a statement written in SQL. */
export const webhookEventIdSpan = (ids: string[]) => idSpan(ids, createdAtOfWebhookEventId)

/**
 * The events about these messages (sent or received: `message_id`). A message's UUIDv7 id carries
 * the time it was accepted (a reply's, received), and none of its events is older (less the clocks'
 * drift, EVENT_BEFORE_MESSAGE_SLACK_MS): when every id carries one, `created_at` is bounded from the
 * earliest of them on, so Postgres reads the partitions from then on instead of every one. An id
 * from before UUIDv7 ids carries none, and its events may be in any partition: with one among the
 * ids, the condition is by id alone.
 *
 * The bound is written into the statement, down to its UTC day (partitions hold whole days), not
 * sent as a parameter. Every statement is prepared (client.ts): bounded by a parameter, the generic
 * plan holds every partition and looks dearer than a pruned custom one, so Postgres planned each run
 * afresh, and a lookup of one message's events ran at about half the rate of the unbounded one
 * (whose generic plan is kept); written in, each day is a statement of its own whose generic plan
 * holds only the partitions from that day on, and it ran at about 1.5 times the unbounded one's
 * rate (pgbench, prepared, 300,000 events in 39 daily partitions).
 */
export function webhookEventsAboutMessages(messageIds: string[]): SQL {
  return rowsAbout(
    webhookEvents.messageId,
    'uuid',
    webhookEvents.createdAt,
    messageIds,
    acceptedAtOfMessageId,
  )
}

/**
 * The delivery attempts of these webhook events. An event's id carries its `created_at`, and no
 * attempt of it is older (less the clocks' drift: an attempt's time is the worker's, the event's the
 * database's), so the attempts' partitions are read from the earliest event's day on, as
 * `webhookEventsAboutMessages` reads events.
 */
export function webhookAttemptsOfEvents(eventIds: string[]): SQL {
  return rowsAbout(
    webhookAttempts.eventId,
    'text',
    webhookAttempts.createdAt,
    eventIds,
    createdAtOfWebhookEventId,
  )
}

/**
 * Rows whose `about` column is one of `ids`, made no earlier than those ids' times less a day: the
 * bound written into the statement down to its UTC day (see `webhookEventsAboutMessages`), or none
 * when an id carries no time.
 */
function rowsAbout(
  about: PgColumn,
  type: 'uuid' | 'text',
  at: PgColumn,
  ids: string[],
  timeOf: (id: string) => number | null,
): SQL {
  const [only] = ids
  if (only === undefined) return sql`false`
  const anyOf =
    ids.length === 1 ? eq(about, only) : sql`${about} = any(${sql.param(ids)}::${sql.raw(type)}[])`
  const { untimed, from } = idSpan(ids, timeOf, EVENT_BEFORE_MESSAGE_SLACK_MS)
  if (untimed.length > 0) return anyOf
  const day = new Date(Math.floor(from.getTime() / DAY_MS) * DAY_MS).toISOString()
  return and(anyOf, sql`${at} >= ${sql.raw(`'${day}'::timestamptz`)}`) as SQL
}
