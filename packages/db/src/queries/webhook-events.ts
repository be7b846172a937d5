import type { WebhookAttemptListQuery } from '@dispatch/contracts'
import { messageIdAt } from '@dispatch/runtime'
import { and, asc, count, eq, gte, isNotNull, isNull, lt, or, sql } from 'drizzle-orm'
import type { PendingQuery, Row } from 'postgres'
import type { Db } from '../client.ts'
import { writingToPeriods } from '../partitions.ts'
import { apiKeys } from '../schema/api-keys.ts'
import { OUTBOX_NOTIFY_CHANNEL, outbox } from '../schema/outbox.ts'
import { webhookEndpoints } from '../schema/webhook-endpoints.ts'
import { webhookAttempts, webhookEvents } from '../schema/webhook-events.ts'
import { offsetOf, ordering, whereAll } from './list-helpers.ts'
import { webhookEventIdSpan, webhookEventsWithIds } from './partitioned-ids.ts'
import { arrayLiteral } from './pg-arrays.ts'

/** One event bound for one endpoint: what the relay turns into a `webhooks` job. */
export interface WebhookDelivery {
  eventId: string
  eventType: string
  payload: unknown
  endpointId: string
}

/**
 * Runs `select` on the events with the given ids: those whose ids carry their time within the span
 * those times cover (`within`, a condition on `v.created_at`: Postgres reads only their partitions,
 * usually one), those from before partitioning by id alone (an empty `within`), those first, as
 * they are older. `ids` is an array literal for a `::text[]` parameter.
 */
async function byEventIds<T>(
  db: Db,
  eventIds: string[],
  select: (ids: string, within: PendingQuery<Row[]>) => Promise<T[]>,
): Promise<T[]> {
  const { timed, untimed, from, to } = webhookEventIdSpan(eventIds)
  const within = () =>
    db.$client`and v.created_at between ${from.toISOString()}::timestamptz and ${to.toISOString()}::timestamptz`
  if (untimed.length === 0) return select(arrayLiteral(timed), within())
  if (timed.length === 0) return select(arrayLiteral(untimed), db.$client``)
  const [old, recent] = await Promise.all([
    select(arrayLiteral(untimed), db.$client``),
    select(arrayLiteral(timed), within()),
  ])
  return [...old, ...recent]
}

/**
 * The deliveries the given events make: one per enabled endpoint of their key subscribed to the
 * type, unless the key was revoked (its endpoints get nothing more). A prepared statement (the relay runs it for every batch of events).
 */
export async function webhookDeliveriesFor(db: Db, eventIds: string[]): Promise<WebhookDelivery[]> {
  if (eventIds.length === 0) return []
  return byEventIds(
    db,
    eventIds,
    (ids, within) => db.$client<WebhookDelivery[]>`
      select v.id as "eventId", v.type as "eventType", v.payload, e.id as "endpointId"
      from webhook_events v
      join webhook_endpoints e on e.api_key_id = v.api_key_id and e.enabled and v.type = any(e.events)
      join api_keys k on k.id = v.api_key_id and k.status <> 'revoked'
      where v.id = any(${ids}::text[]) ${within}
      order by v.created_at`,
  )
}

/** An event bound for one endpoint only (an example sent from the portal), as its outbox row names it. */
export interface WebhookTarget {
  eventId: string
  endpointId: string
}

/**
 * The deliveries of events bound for one endpoint each: made whatever the endpoint subscribes to
 * (its owner asked for it), if the endpoint is still enabled and its key's, and the key not revoked.
 */
export async function webhookDeliveriesTo(db: Db, targets: WebhookTarget[]): Promise<WebhookDelivery[]> {
  if (targets.length === 0) return []
  const endpoints = new Map(targets.map((t) => [t.eventId, t.endpointId]))
  const found = await byEventIds(
    db,
    [...endpoints.keys()],
    (ids, within) => db.$client<(WebhookDelivery & { keyId: string })[]>`
      select v.id as "eventId", v.type as "eventType", v.payload, v.api_key_id as "keyId"
      from webhook_events v join api_keys k on k.id = v.api_key_id and k.status <> 'revoked'
      where v.id = any(${ids}::text[]) ${within}
      order by v.created_at`,
  )
  if (found.length === 0) return []
  const enabled = await db.$client<{ id: string; keyId: string }[]>`
    select id, api_key_id as "keyId" from webhook_endpoints
    where id = any(${arrayLiteral([...new Set(endpoints.values())])}::uuid[]) and enabled`
  const owners = new Map(enabled.map((e) => [e.id, e.keyId]))
  return found.flatMap(({ keyId, ...event }) => {
    const endpointId = endpoints.get(event.eventId)
    return endpointId && owners.get(endpointId) === keyId ? [{ ...event, endpointId }] : []
  })
}

/**
 * Writes an example of an event for one of the key's endpoints, with its outbox row naming that
 * endpoint, in one transaction: the relay delivers it as any event (signed, retried, its attempts
 * recorded), to that endpoint only. Its id carries its time, as the database's own events' do.
 */
export async function insertExampleWebhookEvent(
  db: Db,
  input: { apiKeyId: string; endpointId: string; type: string; payload: unknown; at: Date },
): Promise<string> {
  const id = `msg_${messageIdAt(input.at.getTime()).replaceAll('-', '')}`
  await writingToPeriods(db.$client, () =>
    db.transaction(async (tx) => {
      await tx.insert(webhookEvents).values({
        id,
        apiKeyId: input.apiKeyId,
        type: input.type,
        payload: input.payload,
        createdAt: input.at,
      })
      await tx
        .insert(outbox)
        .values({ topic: 'webhook', payload: { eventId: id, endpointId: input.endpointId } })
      await tx.execute(sql`select pg_notify(${OUTBOX_NOTIFY_CHANNEL}, '')`)
    }),
  )
  return id
}

/**
 * Events by id as a bundle's delivery needs them: what is gone (retention) is not among them. A
 * prepared statement, as the relay's (a worker runs it for every bundle).
 */
export async function findWebhookEvents(db: Db, eventIds: string[]): Promise<WebhookEventToSend[]> {
  if (eventIds.length === 0) return []
  return byEventIds(
    db,
    eventIds,
    (ids, within) => db.$client<WebhookEventToSend[]>`
      select v.id, v.type, v.payload from webhook_events v where v.id = any(${ids}::text[]) ${within}`,
  )
}

/** An event as its delivery reads it: the body is made from the payload (`webhookEventBody`). */
export interface WebhookEventToSend {
  id: string
  type: string
  payload: unknown
}

/** An endpoint as the delivering worker needs it, whoever owns it. */
export async function findWebhookEndpointForDelivery(db: Db, id: string) {
  const [row] = await db
    .select({
      id: webhookEndpoints.id,
      apiKeyId: webhookEndpoints.apiKeyId,
      url: webhookEndpoints.url,
      events: webhookEndpoints.events,
      enabled: webhookEndpoints.enabled,
      secret: webhookEndpoints.secret,
      previousSecret: webhookEndpoints.previousSecret,
      previousSecretExpiresAt: webhookEndpoints.previousSecretExpiresAt,
      failingSince: webhookEndpoints.failingSince,
      /** The owner's status: a revoked key's deliveries still pending are dropped. */
      keyStatus: apiKeys.status,
    })
    .from(webhookEndpoints)
    .innerJoin(apiKeys, eq(apiKeys.id, webhookEndpoints.apiKeyId))
    .where(eq(webhookEndpoints.id, id))
  return row
}
export type DeliverableEndpoint = NonNullable<Awaited<ReturnType<typeof findWebhookEndpointForDelivery>>>

export interface NewWebhookAttempt {
  endpointId: string
  eventId: string
  attempt: number
  statusCode: number | null
  durationMs: number
  responseExcerpt: string | null
  error: string | null
  nextRetryAt: Date | null
  createdAt: Date
}

const withoutNul = (value: string | number | null) =>
  typeof value === 'string' ? value.replaceAll('\0', '') : value

/**
 * Writes attempts in one statement, and one round trip: prepared (postgres.js keeps it per
 * connection), no transaction around it, each column one array. Committed as any other write,
 * so once it resolves the rows survive a crash of Postgres as well as of the worker. An endpoint or
 * event deleted meanwhile drops only its own rows.
 */
export async function recordWebhookAttempts(db: Db, attempts: NewWebhookAttempt[]): Promise<void> {
  if (attempts.length === 0) return
  await writingToPeriods(db.$client, () => insertAttempts(db, attempts))
}

function insertAttempts(db: Db, attempts: NewWebhookAttempt[]) {
  // NUL characters (Postgres text cannot hold them; a receiver's answer may) are dropped, or the
  // whole batch would fail.
  const column = (pick: (a: NewWebhookAttempt) => string | number | null) =>
    arrayLiteral(attempts.map((a) => withoutNul(pick(a))))
  return db.$client`
    insert into webhook_attempts (endpoint_id, event_id, attempt, status_code, duration_ms,
      response_excerpt, error, next_retry_at, created_at)
    select a.* from unnest(
      ${column((a) => a.endpointId)}::text[]::uuid[], ${column((a) => a.eventId)}::text[],
      ${column((a) => a.attempt)}::text[]::int[], ${column((a) => a.statusCode)}::text[]::int[],
      ${column((a) => a.durationMs)}::text[]::int[], ${column((a) => a.responseExcerpt)}::text[],
      ${column((a) => a.error)}::text[],
      ${column((a) => a.nextRetryAt?.toISOString() ?? null)}::text[]::timestamptz[],
      ${column((a) => a.createdAt.toISOString())}::text[]::timestamptz[])
      as a(endpoint_id, event_id, attempt, status_code, duration_ms, response_excerpt, error,
        next_retry_at, created_at)
    where exists (select 1 from webhook_endpoints e where e.id = a.endpoint_id)`
}

/** A success ends any failing streak. Cheap when there is none: the row is not touched. */
export async function markWebhookEndpointHealthy(db: Db, id: string): Promise<void> {
  await db
    .update(webhookEndpoints)
    .set({ failingSince: null })
    .where(and(eq(webhookEndpoints.id, id), isNotNull(webhookEndpoints.failingSince)))
}

export type DisableReason = 'gone' | 'failing'

/**
 * Records a failed delivery: starts the failing streak if none is running, and disables the
 * endpoint (telling the key's owner by e-mail, through the outbox) when it answered 410 or the
 * streak has lasted `disableAfterMs`. Returns the reason when this call disabled it.
 */
export async function markWebhookEndpointFailing(
  db: Db,
  id: string,
  options: { now: Date; disableAfterMs: number; gone: boolean },
): Promise<DisableReason | null> {
  return db.transaction(async (tx) => {
    const [row] = await tx
      .update(webhookEndpoints)
      .set({
        failingSince: sql`coalesce(${webhookEndpoints.failingSince}, ${options.now.toISOString()}::timestamptz)`,
      })
      .where(eq(webhookEndpoints.id, id))
      .returning({
        enabled: webhookEndpoints.enabled,
        failingSince: webhookEndpoints.failingSince,
        url: webhookEndpoints.url,
        apiKeyId: webhookEndpoints.apiKeyId,
      })
    if (!row?.enabled || !row.failingSince) return null
    const reason: DisableReason | null = options.gone
      ? 'gone'
      : options.now.getTime() - row.failingSince.getTime() >= options.disableAfterMs
        ? 'failing'
        : null
    if (!reason) return null
    await tx
      .update(webhookEndpoints)
      .set({ enabled: false, disabledReason: reason, updatedAt: options.now })
      .where(eq(webhookEndpoints.id, id))
    const [key] = await tx
      .select({ email: apiKeys.email, clientName: apiKeys.clientName })
      .from(apiKeys)
      .where(eq(apiKeys.id, row.apiKeyId))
    if (key) {
      await tx.insert(outbox).values({
        topic: 'email',
        payload: {
          to: key.email,
          template: 'webhook-endpoint.disabled',
          data: {
            endpointId: id,
            url: row.url,
            clientName: key.clientName,
            reason,
            failingSince: row.failingSince.toISOString(),
          },
        },
        createdAt: options.now,
      })
      await tx.execute(sql`select pg_notify(${OUTBOX_NOTIFY_CHANNEL}, '')`)
    }
    return reason
  })
}

/** One of the key's events, if it is the key's. */
export async function findWebhookEvent(db: Db, apiKeyId: string, eventId: string) {
  const [row] = await db
    .select()
    .from(webhookEvents)
    .where(and(webhookEventsWithIds([eventId]), eq(webhookEvents.apiKeyId, apiKeyId)))
  return row
}

/**
 * A page of the key's events of the given types in `[since, until)`, in the order they were
 * recorded, after `cursor` (the last event of the previous page).
 */
export async function webhookEventsBetween(
  db: Db,
  input: {
    apiKeyId: string
    types: string[]
    since: Date
    until: Date
    /** `at` is the previous page's last `cursorAt`: Postgres's own text, microseconds kept. */
    cursor?: { at: string; id: string }
    limit: number
  },
) {
  const { cursor } = input
  return db
    .select({
      id: webhookEvents.id,
      type: webhookEvents.type,
      payload: webhookEvents.payload,
      cursorAt: sql<string>`${webhookEvents.createdAt}::text`,
    })
    .from(webhookEvents)
    .where(
      whereAll([
        eq(webhookEvents.apiKeyId, input.apiKeyId),
        sql`${webhookEvents.type} = any(${sql.param(input.types)}::text[])`,
        // An example went to the endpoint it was sent to, and is not replayed.
        sql`${webhookEvents.payload}->>'example' is null`,
        gte(webhookEvents.createdAt, input.since),
        lt(webhookEvents.createdAt, input.until),
        cursor
          ? sql`(${webhookEvents.createdAt}, ${webhookEvents.id}) > (${cursor.at}::timestamptz, ${cursor.id})`
          : undefined,
      ]),
    )
    .orderBy(asc(webhookEvents.createdAt), asc(webhookEvents.id))
    .limit(input.limit)
}

/** An endpoint's attempts, newest first by default, with the event's type beside each. */
export async function listWebhookAttempts(db: Db, endpointId: string, query: WebhookAttemptListQuery) {
  const where = whereAll([
    eq(webhookAttempts.endpointId, endpointId),
    query.eventId === undefined ? undefined : eq(webhookAttempts.eventId, query.eventId),
    query.success === undefined
      ? undefined
      : query.success
        ? sql`${webhookAttempts.statusCode} between 200 and 299`
        : or(isNull(webhookAttempts.statusCode), sql`${webhookAttempts.statusCode} not between 200 and 299`),
  ])
  const [rows, [total]] = await Promise.all([
    db
      .select({ attempt: webhookAttempts, eventType: webhookEvents.type })
      .from(webhookAttempts)
      .innerJoin(webhookEvents, eq(webhookEvents.id, webhookAttempts.eventId))
      .where(where)
      .orderBy(...ordering(query.order, webhookAttempts.createdAt, webhookAttempts.id))
      .limit(query.take)
      .offset(offsetOf(query)),
    db.select({ value: count() }).from(webhookAttempts).where(where),
  ])
  return { rows, itemCount: total?.value ?? 0 }
}

/**
 * Deletes up to `limit` outbox rows dispatched before `before`, oldest first. Returns how many went,
 * so a caller can repeat until nothing is left. Webhook events and their attempts are not deleted
 * here: their partitions are dropped whole past retention (partitions.ts).
 */
export async function purgeRelayedOutbox(db: Db, before: Date, limit: number): Promise<number> {
  const relayed = await db.execute(sql`
    delete from outbox where id in (
      select id from outbox where dispatched_at < ${before.toISOString()}::timestamptz order by id limit ${limit})`)
  return relayed.count ?? 0
}
