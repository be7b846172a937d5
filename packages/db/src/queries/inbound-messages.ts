import type { InboundContent, InboundMessageListQuery } from '@dispatch/contracts'
import { and, count, desc, eq, gte, ilike, inArray, isNotNull, isNull, lt, or, sql } from 'drizzle-orm'
import type { Db } from '../client.ts'
import { apiKeys } from '../schema/api-keys.ts'
import { conversationWindows, inboundMessages } from '../schema/inbound-messages.ts'
import { messages } from '../schema/messages.ts'
import type { Executor } from './executor.ts'
import { likePattern, offsetOf, ordering, whereAll } from './list-helpers.ts'

/** A user's message to one of our business numbers, as read from the platform's webhook. */
export interface InboundMessage {
  /** The platform's id (wamid). */
  platformMessageId: string
  /** The business number it was sent to. */
  phoneNumberId: string
  /** The sender, E.164. */
  phone: string
  /** The platform's message type, as given. */
  type: string
  content: InboundContent
  /** The wamid of the message it quotes or answers (`context.id`), if any. */
  contextId: string | null
  receivedAt: Date
}

export type RecordedInbound =
  | { outcome: 'stored'; id: string; apiKeyId: string | null; inReplyTo: string | null }
  /** The platform redelivered a reply already stored: nothing changed but the window. */
  | { outcome: 'duplicate' }

/** The customer-service window: a reply belongs to a key that sent to its phone within it. */
export const CONVERSATION_WINDOW_MS = 24 * 60 * 60 * 1000

/**
 * Which key a reply belongs to, always on the business number and the phone together (never on the
 * phone alone: two keys may write to one person from two numbers):
 * a. the message it quotes, when that is ours, to this phone, from this number;
 * b. else the newest message to this phone from this number sent in the 24 h before the reply
 *    (the platform's times are whole seconds, so a send in the reply's own second counts);
 * c. else none.
 */
async function routeReply(tx: Executor, item: InboundMessage) {
  const ours = and(eq(messages.phone, item.phone), eq(messages.senderPhoneNumberId, item.phoneNumberId))
  if (item.contextId) {
    const [quoted] = await tx
      .select({ id: messages.id, apiKeyId: messages.apiKeyId })
      .from(messages)
      .where(and(eq(messages.platformMessageId, item.contextId), ours))
      .limit(1)
    if (quoted) return { apiKeyId: quoted.apiKeyId, inReplyTo: quoted.id }
  }
  const at = item.receivedAt.getTime()
  const [recent] = await tx
    .select({ apiKeyId: messages.apiKeyId })
    .from(messages)
    .where(
      and(
        ours,
        gte(messages.sentAt, new Date(at - CONVERSATION_WINDOW_MS)),
        lt(messages.sentAt, new Date(at + 1000)),
      ),
    )
    .orderBy(desc(messages.sentAt), desc(messages.id))
    .limit(1)
  return { apiKeyId: recent?.apiKeyId ?? null, inReplyTo: null }
}

/**
 * Stores a reply once (the platform redelivers: the wamid is unique) with the key it is routed to,
 * and moves the conversation window of its business number and phone forward, in one transaction.
 * A routed reply's `message.received` event is written by the table's trigger in the same
 * transaction.
 */
export async function recordInboundMessage(db: Db, item: InboundMessage): Promise<RecordedInbound> {
  return db.transaction(async (tx) => {
    const route = await routeReply(tx, item)
    const [row] = await tx
      .insert(inboundMessages)
      .values({
        platformMessageId: item.platformMessageId,
        phoneNumberId: item.phoneNumberId,
        phone: item.phone,
        type: item.type,
        content: item.content,
        apiKeyId: route.apiKeyId,
        inReplyTo: route.inReplyTo,
        receivedAt: item.receivedAt,
      })
      .onConflictDoNothing({ target: inboundMessages.platformMessageId })
      .returning({ id: inboundMessages.id })
    await tx
      .insert(conversationWindows)
      .values({ phoneNumberId: item.phoneNumberId, phone: item.phone, lastInboundAt: item.receivedAt })
      .onConflictDoUpdate({
        target: [conversationWindows.phoneNumberId, conversationWindows.phone],
        set: {
          lastInboundAt: sql`greatest(${conversationWindows.lastInboundAt}, excluded.last_inbound_at)`,
        },
      })
    return row ? { outcome: 'stored', id: row.id, ...route } : { outcome: 'duplicate' }
  })
}

/**
 * Replies for admins, newest first by default. `routed=false` lists the unroutable ones; `q`
 * searches the phone and the platform id; `tenantId` keeps replies routed to that tenant's keys.
 * Nothing here is soft-deleted, so `deleted=true` lists nothing.
 */
export async function listInboundMessages(db: Db, query: InboundMessageListQuery) {
  const m = inboundMessages
  const where = whereAll([
    query.routed === undefined ? undefined : query.routed ? isNotNull(m.apiKeyId) : isNull(m.apiKeyId),
    query.apiKeyId ? eq(m.apiKeyId, query.apiKeyId) : undefined,
    query.phoneNumberId ? eq(m.phoneNumberId, query.phoneNumberId) : undefined,
    query.tenantId
      ? inArray(
          m.apiKeyId,
          db.select({ id: apiKeys.id }).from(apiKeys).where(eq(apiKeys.tenantId, query.tenantId)),
        )
      : undefined,
    query.q
      ? or(ilike(m.phone, likePattern(query.q)), ilike(m.platformMessageId, likePattern(query.q)))
      : undefined,
    query.deleted === 'true' ? sql`false` : undefined,
  ])
  const column = query.orderField === 'createdAt' ? m.createdAt : m.receivedAt
  const [rows, [total]] = await Promise.all([
    db
      .select()
      .from(m)
      .where(where)
      .orderBy(...ordering(query.order, column, m.id))
      .limit(query.take)
      .offset(offsetOf(query)),
    db.select({ value: count() }).from(m).where(where),
  ])
  return { rows, itemCount: total?.value ?? 0 }
}
