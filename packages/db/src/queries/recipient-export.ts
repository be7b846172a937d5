import { and, asc, eq, gt, inArray, isNull, or, type SQL, sql } from 'drizzle-orm'
import type { Db } from '../client.ts'
import { type InboundMessageRow, inboundMessages } from '../schema/inbound-messages.ts'
import { type MessageRow, messages } from '../schema/messages.ts'
import { type SuppressionRow, suppressions } from '../schema/suppressions.ts'
import { type WebhookEventRow, webhookEvents } from '../schema/webhook-events.ts'
import type { RecipientIdentities } from './erase-recipient.ts'

/** One page of what Dispatch holds about a recipient for a key, by kind. */
export type ExportPage =
  | { kind: 'message'; rows: MessageRow[] }
  | { kind: 'inbound_message'; rows: InboundMessageRow[] }
  | { kind: 'event'; rows: WebhookEventRow[] }
  | { kind: 'suppression'; rows: SuppressionRow[] }

export interface ExportInput {
  apiKeyId: string
  /** The key's sender, whose suppression list is the key's. */
  senderId: string
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
 * Everything a key holds about one recipient, a page at a time, in keyset order (`id > last`): each
 * page is one query of at most `pageSize` rows, and the next is read only when the caller asks for
 * it, so a consumer that waits (a slow reader of a stream) holds one page in memory, never the whole.
 * Messages come with their events, a page of messages then the events of that page; then replies
 * with theirs; then the key's consent events naming the recipient; then its sender's opt-outs.
 */
export async function* recipientExportPages(db: Db, input: ExportInput): AsyncGenerator<ExportPage> {
  const { apiKeyId, identities: ids, pageSize } = input

  for (const kind of ['message', 'inbound_message'] as const) {
    let after: string | undefined
    for (;;) {
      const rows =
        kind === 'message'
          ? await db
              .select()
              .from(messages)
              .where(
                and(
                  eq(messages.apiKeyId, apiKeyId),
                  named(ids, messages.phone, messages.userId),
                  after ? gt(messages.id, after) : undefined,
                ),
              )
              .orderBy(asc(messages.id))
              .limit(pageSize)
          : await db
              .select()
              .from(inboundMessages)
              .where(
                and(
                  eq(inboundMessages.apiKeyId, apiKeyId),
                  named(ids, inboundMessages.phone, inboundMessages.userId),
                  after ? gt(inboundMessages.id, after) : undefined,
                ),
              )
              .orderBy(asc(inboundMessages.id))
              .limit(pageSize)
      if (rows.length === 0) break
      yield { kind, rows } as ExportPage
      after = rows[rows.length - 1]?.id
      const events = await db
        .select()
        .from(webhookEvents)
        .where(
          and(
            eq(webhookEvents.apiKeyId, apiKeyId),
            sql`${webhookEvents.messageId} = any(${sql.param(rows.map((r) => r.id))}::uuid[])`,
          ),
        )
        .orderBy(asc(webhookEvents.messageId), asc(webhookEvents.sequence))
      if (events.length > 0) yield { kind: 'event', rows: events }
      if (rows.length < pageSize) break
    }
  }

  const data = sql`${webhookEvents.payload}->'data'`
  let afterEvent: string | undefined
  for (;;) {
    const rows = await db
      .select()
      .from(webhookEvents)
      .where(
        and(
          eq(webhookEvents.apiKeyId, apiKeyId),
          isNull(webhookEvents.messageId),
          named(ids, sql`${data}->>'phone'`, sql`${data}->>'userId'`),
          afterEvent ? gt(webhookEvents.id, afterEvent) : undefined,
        ),
      )
      .orderBy(asc(webhookEvents.id))
      .limit(pageSize)
    if (rows.length === 0) break
    yield { kind: 'event', rows }
    afterEvent = rows[rows.length - 1]?.id
    if (rows.length < pageSize) break
  }

  const recipients = [...ids.phones, ...ids.userIds, ...input.hashes]
  const entries = await db
    .select()
    .from(suppressions)
    .where(and(eq(suppressions.senderId, input.senderId), inArray(suppressions.recipient, recipients)))
    .orderBy(asc(suppressions.id))
  if (entries.length > 0) yield { kind: 'suppression', rows: entries }
}
