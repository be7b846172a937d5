import { EVERY_KEY } from '@dispatch/runtime'
import { and, asc, eq, gt, inArray, isNotNull, isNull, or, type SQL, sql } from 'drizzle-orm'
import type { Db } from '../client.ts'
import { type InboundMessageRow, inboundMessages } from '../schema/inbound-messages.ts'
import { type MessageRow, messages } from '../schema/messages.ts'
import { type SuppressionRow, suppressions } from '../schema/suppressions.ts'
import { type WebhookEventRow, webhookEvents } from '../schema/webhook-events.ts'
import type { RecipientIdentities } from './erase-recipient.ts'
import { webhookEventsAboutMessages } from './partitioned-ids.ts'

/** One page of what Dispatch holds about a recipient for a key, by kind. */
export type ExportPage =
  | { kind: 'message'; rows: MessageRow[] }
  | { kind: 'inbound_message'; rows: InboundMessageRow[] }
  | { kind: 'event'; rows: WebhookEventRow[] }
  | { kind: 'suppression'; rows: SuppressionRow[] }

export interface ExportInput {
  apiKeyId: string
  /** The key's senders (its own, a pooled key's pool's members), whose entries block its sends. */
  senderIds: readonly string[]
  /** The key's owner of entries (`suppressionOwner`): its own and the recipient's are exported. */
  owner: string
  identities: RecipientIdentities
  /** The recipient's hashes: an opt-out kept after an erasure names them by hash. */
  hashes: string[]
  pageSize: number
}

const named = (
  ids: RecipientIdentities,
  phone: SQL | Parameters<typeof eq>[0],
  userId: Parameters<typeof eq>[0],
) =>
  or(
    ids.phones.length ? inArray(phone as never, ids.phones) : undefined,
    ids.userIds.length ? inArray(userId, ids.userIds) : undefined,
  ) ?? sql`false`

/**
 * Pages of `read(after)`, each read only when the caller asks for the next: `read` answers the rows
 * after `after` (the last row of the page before, none for the first), at most `pageSize` of them.
 */
async function* keysetPages<T>(
  pageSize: number,
  read: (after: T | undefined) => Promise<T[]>,
): AsyncGenerator<T[]> {
  let after: T | undefined
  for (;;) {
    const rows = await read(after)
    if (rows.length === 0) return
    yield rows
    if (rows.length < pageSize) return
    after = rows[rows.length - 1]
  }
}

/**
 * Everything a key holds about one recipient, a page at a time, in keyset order (after the last row
 * read, never an offset): each page is one query of at most `pageSize` rows, and the next is read
 * only when the caller asks for it, so a consumer that waits (a slow reader of a stream) holds one
 * page in memory, never the whole. Messages come with their events, a page of messages then the
 * events of that page; then replies with theirs; then the key's consent events naming the
 * recipient; then the opt-outs that block its sends to them (theirs, and its tenant's).
 */
export async function* recipientExportPages(db: Db, input: ExportInput): AsyncGenerator<ExportPage> {
  const { apiKeyId, identities: ids, pageSize } = input
  const eventsOf = async (rows: Array<{ id: string }>): Promise<ExportPage | undefined> => {
    const events = await db
      .select()
      .from(webhookEvents)
      .where(
        and(
          eq(webhookEvents.apiKeyId, apiKeyId),
          // In the partitions from the page's earliest message on (its id's time), not in every one.
          webhookEventsAboutMessages(rows.map((r) => r.id)),
        ),
      )
      .orderBy(asc(webhookEvents.messageId), asc(webhookEvents.sequence))
    return events.length > 0 ? { kind: 'event', rows: events } : undefined
  }

  // Messages, per identity, along the recipient's own index ((phone, sent_at), (user_id, sent_at)):
  // each page reads its rows and no more, however many the recipient has. First those sent, in
  // (sent_at, id) order; then those never sent (queued, canceled, failed, expired), in id order.
  const identities = [
    ...ids.phones.map((phone) => eq(messages.phone, phone)),
    ...ids.userIds.map((userId) =>
      and(
        eq(messages.userId, userId),
        // A message naming a phone of theirs too was read with the phone.
        ids.phones.length
          ? sql`(${messages.phone} is null or ${messages.phone} <> all(${sql.param(ids.phones)}::text[]))`
          : undefined,
      ),
    ),
  ]
  for (const identity of identities) {
    const sent = keysetPages<MessageRow>(pageSize, (after) =>
      db
        .select()
        .from(messages)
        .where(
          and(
            identity,
            eq(messages.apiKeyId, apiKeyId),
            isNotNull(messages.sentAt),
            after ? afterSent(after) : undefined,
          ),
        )
        .orderBy(asc(messages.sentAt), asc(messages.id))
        .limit(pageSize),
    )
    const unsent = keysetPages<MessageRow>(pageSize, (after) =>
      db
        .select()
        .from(messages)
        .where(
          and(
            identity,
            eq(messages.apiKeyId, apiKeyId),
            isNull(messages.sentAt),
            after ? gt(messages.id, after.id) : undefined,
          ),
        )
        .orderBy(asc(messages.id))
        .limit(pageSize),
    )
    for (const pages of [sent, unsent]) {
      for await (const rows of pages) {
        yield { kind: 'message', rows }
        const events = await eventsOf(rows)
        if (events) yield events
      }
    }
  }

  // Replies, along the key's own (api_key_id, received_at) index.
  const replies = keysetPages<InboundMessageRow>(pageSize, (after) =>
    db
      .select()
      .from(inboundMessages)
      .where(
        and(
          eq(inboundMessages.apiKeyId, apiKeyId),
          named(ids, inboundMessages.phone, inboundMessages.userId),
          // After the last row, its `received_at` as Postgres holds it (within the millisecond of
          // the JS Date), which also names the partition to read it from.
          after
            ? sql`(${inboundMessages.receivedAt}, ${inboundMessages.id}) >
                (select i.received_at, i.id from inbound_messages i where i.id = ${after.id}
                  and i.received_at >= ${after.receivedAt.toISOString()}::timestamptz
                  and i.received_at < ${new Date(after.receivedAt.getTime() + 1).toISOString()}::timestamptz)`
            : undefined,
        ),
      )
      .orderBy(asc(inboundMessages.receivedAt), asc(inboundMessages.id))
      .limit(pageSize),
  )
  for await (const rows of replies) {
    yield { kind: 'inbound_message', rows }
    const events = await eventsOf(rows)
    if (events) yield events
  }

  // The key's consent events naming the recipient (about no message of theirs). Read in every
  // partition: about no message, they have no id carrying a time they cannot be older than (an
  // opt-out may be years old). Nor can a page start from the time of the page before's last event:
  // the order is by id, and the ids of events from before partitioning are random, not in time order.
  const data = sql`${webhookEvents.payload}->'data'`
  const consent = keysetPages<WebhookEventRow>(pageSize, (after) =>
    db
      .select()
      .from(webhookEvents)
      .where(
        and(
          eq(webhookEvents.apiKeyId, apiKeyId),
          isNull(webhookEvents.messageId),
          named(ids, sql`${data}->>'phone'`, sql`${data}->>'userId'`),
          after ? gt(webhookEvents.id, after.id) : undefined,
        ),
      )
      .orderBy(asc(webhookEvents.id))
      .limit(pageSize),
  )
  for await (const rows of consent) yield { kind: 'event', rows }

  const recipients = [...ids.phones, ...ids.userIds, ...input.hashes]
  const entries = await db
    .select()
    .from(suppressions)
    .where(
      and(
        inArray(suppressions.senderId, [...input.senderIds]),
        inArray(suppressions.recipient, recipients),
        // The recipient's own opt-outs of the key's numbers, and the key's tenant's entries: never
        // another tenant's (its reason is that tenant's business).
        inArray(suppressions.owner, [EVERY_KEY, input.owner]),
      ),
    )
    .orderBy(asc(suppressions.id))
  if (entries.length > 0) yield { kind: 'suppression', rows: entries }
}

/**
 * The rows after `last` in (sent_at, id) order, its `sent_at` compared as Postgres holds it
 * (microseconds, not a JS Date's milliseconds), read in its own period: its accepted_at, truncated
 * to milliseconds here, bounds the lookup, which would otherwise probe every partition on each page.
 */
function afterSent(last: MessageRow): SQL {
  const at = last.acceptedAt.toISOString()
  const sentAt = sql`(select m.sent_at from messages m where m.id = ${last.id}
    and m.accepted_at >= ${at}::timestamptz and m.accepted_at < ${at}::timestamptz + interval '1 millisecond')`
  return sql`${messages.sentAt} >= ${sentAt} and (${messages.sentAt} > ${sentAt} or ${messages.id} > ${last.id})`
}
