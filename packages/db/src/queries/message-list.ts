import {
  type AcceptedWindow,
  MESSAGE_COUNT_LIMIT,
  MESSAGE_STATUSES,
  type MessageListQuery,
  type MessageStatus,
} from '@dispatch/contracts'
import { type Column, eq, getTableColumns, gte, inArray, lt, lte, or, type SQL, sql } from 'drizzle-orm'
import type { Db } from '../client.ts'
import { messageFallbacks } from '../schema/message-fallbacks.ts'
import { type MessageRow, messages } from '../schema/messages.ts'
import { offsetOf, ordering, whereAll } from './list-helpers.ts'
import { isUuid } from './orders.ts'

const timestamp = (value: string) => sql`${value}::timestamptz`

/**
 * The filters a message list shares, the key's and the admins' alike: everything but `status`
 * (applied by `listMatchingMessages`, see below) and the key, within the acceptance window
 * (`acceptedWindow` of `startDate`/`endDate`; bounds go to Postgres as text, so no precision is lost
 * on the way). `q` is an exact match on the message id, the client reference or the phone.
 */
export function messageFilters(
  query: Pick<
    MessageListQuery,
    'deleted' | 'type' | 'phone' | 'userId' | 'clientReference' | 'batchId' | 'q' | 'channel' | 'fallback'
  >,
  window: AcceptedWindow,
): SQL[] {
  const filters: (SQL | undefined)[] = [
    ...fallbackFilters(query),
    // Messages are never deleted: `deleted=true` (deleted records only) lists none.
    query.deleted === 'true' ? sql`false` : undefined,
    query.type ? inArray(messages.type, query.type) : undefined,
    query.phone ? eq(messages.phone, query.phone) : undefined,
    query.userId ? eq(messages.userId, query.userId) : undefined,
    query.clientReference ? eq(messages.clientReference, query.clientReference) : undefined,
    query.batchId ? eq(messages.batchId, query.batchId) : undefined,
    window.from ? gte(messages.acceptedAt, timestamp(window.from)) : undefined,
    window.before ? lt(messages.acceptedAt, timestamp(window.before)) : undefined,
    window.until ? lte(messages.acceptedAt, timestamp(window.until)) : undefined,
    query.q
      ? or(
          isUuid(query.q) ? eq(messages.id, query.q.toLowerCase()) : undefined,
          eq(messages.clientReference, query.q),
          eq(messages.phone, query.q),
          eq(messages.userId, query.q),
        )
      : undefined,
  ]
  return filters.filter((f) => f !== undefined)
}

/** A message's fallback in these states (a primary-key probe of `message_fallbacks` per row). */
const hasFallback = (states?: readonly string[]) =>
  sql`exists (select 1 from message_fallbacks f where f.message_id = ${messages.id}${
    states ? sql` and f.state = any(${`{${states.join(',')}}`}::text[])` : sql``
  })`

/**
 * A list that keeps only messages with a fallback in some states (`channel=sms`, `fallback=` states
 * without `none`), of one key or of every key: it is read from `message_fallbacks`, newest first off
 * `message_fallbacks_api_key_accepted_at_idx` (or `message_fallbacks_accepted_at_idx` across keys),
 * each fallback's message found by its primary key in its own period (`listMatchingMessages`). Few
 * messages have a fallback: read from `messages` with an EXISTS per row, such a list read every row
 * of the key (or of every key) to find its page (migration 0046, docs/benchmarks-paths.md).
 */
export interface FallbackSource {
  states: string[]
  apiKeyId?: string
}

export function fallbackSource(
  query: Pick<MessageListQuery, 'channel' | 'fallback'>,
  apiKeyId?: string,
): FallbackSource | undefined {
  const states = fallbackStatesOnly(query)
  return states && states.length > 0 ? { states, ...(apiKeyId ? { apiKeyId } : {}) } : undefined
}

/** The fallback states a list keeps only (every other message left out), or none when it keeps more. */
function fallbackStatesOnly(query: Pick<MessageListQuery, 'channel' | 'fallback'>): string[] | undefined {
  const wanted = query.fallback ? [...new Set(query.fallback)] : []
  const states = wanted.includes('none') ? undefined : wanted.length > 0 ? wanted : undefined
  if (query.channel !== 'sms') return states
  return states ? states.filter((state) => state === 'sent') : ['sent']
}

/**
 * `channel` (`sms`: its fallback's SMS was taken; `whatsapp`: any other) and `fallback` (its
 * fallback's states, `none` for none). Those that keep only messages with a fallback (`channel=sms`,
 * `fallback=` states without `none`) are read from `message_fallbacks` (`fallbackSource`); the
 * others (`channel=whatsapp`, `fallback=none`, alone or with states), which keep nearly every
 * message, probe `message_fallbacks` by its primary key for each row the other filters reach.
 */
function fallbackFilters(query: Pick<MessageListQuery, 'channel' | 'fallback'>): (SQL | undefined)[] {
  const only = fallbackStatesOnly(query)
  // Read from message_fallbacks by listMatchingMessages (`fallbackSource`); none possible: none.
  if (only) return [only.length > 0 ? undefined : sql`false`]
  const wanted = query.fallback ? [...new Set(query.fallback)] : []
  const states = wanted.filter((state) => state !== 'none')
  const byFallback =
    wanted.length === 0
      ? undefined
      : or(
          states.length > 0 ? hasFallback(states) : undefined,
          wanted.includes('none') ? sql`not ${hasFallback()}` : undefined,
        )
  return [query.channel === 'whatsapp' ? sql`not ${hasFallback(['sent'])}` : undefined, byFallback]
}

/**
 * One page of the key's messages, newest first by default, and how many match: exactly up to
 * MESSAGE_COUNT_LIMIT (or the end of the page, if further), beyond that a lower bound, so no list
 * ever counts millions of rows. packages/db/src/schema/messages.ts says which index each filter
 * reads, and why; docs/statuses.md (Listing messages) what the list answers.
 */
export function listMessages(db: Db, apiKeyId: string, query: MessageListQuery, window: AcceptedWindow = {}) {
  return listMatchingMessages(
    db,
    [eq(messages.apiKeyId, apiKeyId), ...messageFilters(query, window)],
    query,
    {
      byKey: narrowedByKeyAlone(query),
      fallbacks: fallbackSource(query, apiKeyId),
      ...(countsAlongKeyIndex(query, window) ? { countOrder: sql`${messages.updatedAt} desc` } : {}),
    },
  )
}

/**
 * Whether a key's list is its messages with only a per-row fallback probe (`channel=whatsapp`,
 * `fallback=none`): its count is then read in the order of `messages_api_key_updated_at_idx`, so it
 * stops at its bound. Unordered, its generic plan (the lists' connections) reads the key's whole
 * index into a bitmap first: 1.2 s for the busy key of bench:message-search at 10 M messages,
 * against 11–19 ms (docs/benchmarks-paths.md). With a status, a type or dates the count has other
 * indexes to read, so it is left alone.
 */
const countsAlongKeyIndex = (query: MessageListQuery, window: AcceptedWindow) =>
  narrowedByKeyAlone(query) &&
  (query.channel === 'whatsapp' || (query.fallback?.length ?? 0) > 0) &&
  !query.status?.length &&
  !query.type?.length &&
  query.deleted !== 'true' &&
  !window.from &&
  !window.before &&
  !window.until

/**
 * Whether a key's list is narrowed by nothing with an index of its own (a phone, a BSUID, a
 * reference, a batch, `q`, its fallbacks): then its page is read off the key's status index, status
 * by status (`byKey` below).
 */
export const narrowedByKeyAlone = (
  query: Pick<
    MessageListQuery,
    'phone' | 'userId' | 'clientReference' | 'batchId' | 'q' | 'channel' | 'fallback'
  >,
) =>
  !query.phone &&
  !query.userId &&
  !query.clientReference &&
  !query.batchId &&
  !query.q &&
  fallbackStatesOnly(query) === undefined

/**
 * The paging and ordering of a message list over `filters`, with `status` applied here. `byKey`: the
 * filters hold one key and nothing narrower (`narrowedByKeyAlone`). Its page in acceptance order,
 * with no status asked for, is then read as one of every status (`pageOfStatuses`) off
 * `messages_api_key_status_accepted_at_idx`: no (key, accepted_at) index is kept for it (migration
 * 0029: it cost every insert and status change an entry, docs/redis-and-postgres.md).
 */
export async function listMatchingMessages(
  db: Db,
  filters: SQL[],
  query: Pick<MessageListQuery, 'status' | 'order' | 'orderField' | 'page' | 'take'>,
  options: { byKey?: boolean; fallbacks?: FallbackSource; countOrder?: SQL } = {},
) {
  const statuses = [...new Set(query.status ?? [])] as MessageStatus[]
  const offset = offsetOf(query)
  const countLimit = Math.max(MESSAGE_COUNT_LIMIT, offset + query.take) + 1

  const matching = whereAll([...filters, statuses.length ? inArray(messages.status, statuses) : undefined])
  if (options.fallbacks) return pageOfFallbacks(db, matching, options.fallbacks, query, offset, countLimit)
  const count = () => {
    const matches = db.select({ one: sql`1` }).from(messages).where(matching).$dynamic()
    if (options.countOrder) matches.orderBy(options.countOrder)
    return db
      .select({ value: sql<number>`count(*)::int` })
      .from(matches.limit(countLimit).as('matches'))
      .then(([row]) => row?.value ?? 0)
  }
  // The page and its count run at once, except for statuses few messages end in: there the page is
  // usually short, which ends the list and gives the count without counting; counting only after it
  // saves a second pass over every partition's index (see docs/benchmarks-paths.md, Partitioned messages).
  const few = statuses.length > 0 && statuses.every((status) => FEW_END_IN.has(status))
  const counting = few ? undefined : count()
  counting?.catch(() => {}) // awaited below; this only keeps an early failure from going unhandled

  const everyStatus = statuses.length === 0 && options.byKey === true && query.orderField !== 'updatedAt'
  const rows = await (statuses.length > 1 || everyStatus
    ? pageOfStatuses(db, filters, everyStatus ? [...MESSAGE_STATUSES] : statuses, query, offset)
    : db
        .select()
        .from(messages)
        .where(matching)
        .orderBy(...sortOf(query, messages))
        .limit(query.take)
        .offset(offset))
  const ended = rows.length < query.take && (rows.length > 0 || offset === 0)
  const itemCount = counting ? await counting : ended ? offset + rows.length : await count()
  return { rows, itemCount, itemCountExact: itemCount < countLimit }
}

/**
 * A list read from `message_fallbacks` (`fallbackSource`): its fallbacks in the states asked for,
 * newest first (by acceptance, the message's own time; by `updatedAt`, sorted after), each with its
 * message, found by its primary key in its own period (the period pruned at each probe) and kept
 * when the other filters hold. The message is a LATERAL subquery with LIMIT 1, so that it is probed
 * once per fallback: as a join, Postgres multiplies the selectivities of `id` and `accepted_at`,
 * expects one row from the whole join, and hashes every row of the key (146 ms against 0.75 ms at
 * 300,000 messages, docs/benchmarks-paths.md). Counted the same way, up to `countLimit`.
 */
async function pageOfFallbacks(
  db: Db,
  matching: SQL | undefined,
  source: FallbackSource,
  query: Pick<MessageListQuery, 'order' | 'orderField' | 'take'>,
  offset: number,
  countLimit: number,
) {
  const fallbacks = whereAll([
    sql`${messageFallbacks.state} = any(${`{${source.states.join(',')}}`}::text[])`,
    source.apiKeyId ? eq(messageFallbacks.apiKeyId, source.apiKeyId) : undefined,
  ])
  const itsMessage = whereAll([
    eq(messages.id, messageFallbacks.messageId),
    eq(messages.acceptedAt, messageFallbacks.acceptedAt),
    matching,
  ])
  const counting = db
    .select({ value: sql<number>`count(*)::int` })
    .from(
      db
        .select({ one: sql`1` })
        .from(messageFallbacks)
        .crossJoinLateral(db.select({ one: sql`1` }).from(messages).where(itsMessage).limit(1).as('m'))
        .where(fallbacks)
        .limit(countLimit)
        .as('matches'),
    )
    .then(([row]) => row?.value ?? 0)
  counting.catch(() => {}) // awaited below; this only keeps an early failure from going unhandled
  const message = db.select().from(messages).where(itsMessage).limit(1).as('m')
  const rows = await db
    .select(pick(message))
    .from(messageFallbacks)
    .crossJoinLateral(message)
    .where(fallbacks)
    .orderBy(
      ...(query.orderField === 'updatedAt'
        ? sortOf(query, message)
        : ordering(query.order, messageFallbacks.acceptedAt, messageFallbacks.messageId)),
    )
    .limit(query.take)
    .offset(offset)
  const itemCount = await counting
  return { rows, itemCount, itemCountExact: itemCount < countLimit }
}

/** Statuses a small share of messages end in: a list of them is usually short. */
const FEW_END_IN = new Set<MessageStatus>(['failed', 'expired', 'canceled', 'scheduled'])

type Paging = Pick<MessageListQuery, 'order' | 'orderField' | 'take'>

const sortOf = (query: Paging, source: { acceptedAt: Column; updatedAt: Column; id: Column }) =>
  ordering(query.order, query.orderField === 'updatedAt' ? source.updatedAt : source.acceptedAt, source.id)

/**
 * Several statuses (or, for a key's list with none asked, every one): Postgres 15 cannot read
 * `status = any(…)` off the (key, status, accepted_at) index in time order, so each status is read
 * on its own (newest first, as far as the page's end) and the results merged. The cost is one short
 * index range per status, whatever their sizes.
 */
async function pageOfStatuses(
  db: Db,
  filters: SQL[],
  statuses: MessageStatus[],
  query: Paging,
  offset: number,
): Promise<MessageRow[]> {
  const perStatus = db
    .select()
    .from(messages)
    .where(whereAll([...filters, eq(messages.status, sql`wanted.status`)]))
    .orderBy(...sortOf(query, messages))
    .limit(offset + query.take)
    .as('m')
  return db
    .select(pick(perStatus))
    .from(sql`unnest(${`{${statuses.join(',')}}`}::message_status[]) as wanted(status)`)
    .crossJoinLateral(perStatus)
    .orderBy(...sortOf(query, perStatus))
    .limit(query.take)
    .offset(offset)
}

/** The subquery's columns under the table's own field names, so rows come back as MessageRows. */
const pick = <T extends Record<keyof MessageRow, unknown>>(subquery: T) =>
  Object.fromEntries(
    Object.keys(getTableColumns(messages)).map((name) => [name, subquery[name as keyof MessageRow]]),
  ) as {
    [K in keyof MessageRow]: T[K]
  }
