import { type InboundContent, type InboundMessageListQuery, redactAfter } from '@dispatch/contracts'
import { messageIdAt } from '@dispatch/runtime'
import { and, count, desc, eq, gte, ilike, inArray, isNotNull, isNull, lt, ne, or, sql } from 'drizzle-orm'
import type { Db } from '../client.ts'
import { writingToPeriods } from '../partitions.ts'
import { apiKeys } from '../schema/api-keys.ts'
import { conversationWindows, inboundMessages, recipientIdentities } from '../schema/inbound-messages.ts'
import { messages } from '../schema/messages.ts'
import { senders } from '../schema/senders.ts'
import type { Executor } from './executor.ts'
import { likePattern, offsetOf, ordering, whereAll } from './list-helpers.ts'
import { platformIdIs } from './message-ids.ts'
import { isUuid } from './orders.ts'
import { inboundMessagesWithIds } from './partitioned-ids.ts'
import { routePoolReply } from './pool-replies.ts'

/** A user's message to one of our business numbers, as read from the platform's webhook. */
export interface InboundMessage {
  /** The platform's id (wamid). */
  platformMessageId: string
  /** The business number it was sent to. */
  phoneNumberId: string
  /** The sender, E.164; null when the platform withheld it (a user known by username). */
  phone: string | null
  /** The sender's business-scoped user id (`from_user_id`), when given. */
  userId: string | null
  /** The sender's WhatsApp username (`contacts[].profile.username`), when given. */
  username: string | null
  /** The platform's message type, as given. */
  type: string
  content: InboundContent
  /** The wamid of the message it quotes or answers (`context.id`), if any. */
  contextId: string | null
  receivedAt: Date
}

/** Who wrote: the phone and BSUID the webhook gave, each completed from the pair when known. */
export interface ReplyIdentity {
  phone: string | null
  userId: string | null
}

export type RecordedInbound = (
  | { outcome: 'stored'; id: string; apiKeyId: string | null; inReplyTo: string | null }
  /** The platform redelivered a reply already stored: nothing changed but the window. */
  | { outcome: 'duplicate' }
) & { identity: ReplyIdentity }

/** The customer-service window: a reply belongs to a key that sent to its phone within it. */
export const CONVERSATION_WINDOW_MS = 24 * 60 * 60 * 1000

/**
 * Which key a reply belongs to, always on the business number and the phone together (never on the
 * phone alone: two keys may write to one person from two numbers):
 * a. the message it quotes, when that is ours, to this phone, from this number;
 * b. else the newest message to this phone from this number sent in the 24 h before the reply
 *    (the platform's times are whole seconds, so a send in the reply's own second counts);
 * c. else the key bound to a sender pool this number is in that wrote to this phone from another
 *    of the pool's numbers in those 24 h (`routePoolReply`: replies reach a pooled key whichever
 *    of its numbers they come to);
 * d. else none.
 * Never to a revoked key: its conversations are no longer its own, and its replies go
 * to the next key by these rules, or to none.
 */
async function routeReply(tx: Executor, item: InboundMessage, who: ReplyIdentity) {
  const ours = and(
    or(
      who.phone === null ? undefined : eq(messages.phone, who.phone),
      who.userId === null ? undefined : eq(messages.userId, who.userId),
    ),
    eq(messages.senderPhoneNumberId, item.phoneNumberId),
  )
  if (item.contextId) {
    const [quoted] = await tx
      .select({ id: messages.id, apiKeyId: messages.apiKeyId })
      .from(messages)
      .innerJoin(apiKeys, and(eq(apiKeys.id, messages.apiKeyId), ne(apiKeys.status, 'revoked')))
      .where(and(platformIdIs(messages, item.contextId), ours))
      .limit(1)
    if (quoted) return { apiKeyId: quoted.apiKeyId, inReplyTo: quoted.id }
  }
  const at = item.receivedAt.getTime()
  const [recent] = await tx
    .select({ apiKeyId: messages.apiKeyId })
    .from(messages)
    .innerJoin(apiKeys, and(eq(apiKeys.id, messages.apiKeyId), ne(apiKeys.status, 'revoked')))
    .where(
      and(
        ours,
        gte(messages.sentAt, new Date(at - CONVERSATION_WINDOW_MS)),
        lt(messages.sentAt, new Date(at + 1000)),
      ),
    )
    .orderBy(desc(messages.sentAt), desc(messages.id))
    .limit(1)
  // c. else a pool's: the key bound to a pool of this number that wrote from another of its numbers.
  const pooled = recent
    ? null
    : await routePoolReply(tx, { ...item, at, windowMs: CONVERSATION_WINDOW_MS }, who)
  return { apiKeyId: recent?.apiKeyId ?? pooled, inReplyTo: null }
}

/**
 * Remembers that this phone and this BSUID are one user, as the platform said at `at` (a user who
 * changes number gets a new BSUID, so the newest pair per BSUID wins).
 */
export async function rememberRecipientPair(
  tx: Executor,
  pair: { phone: string; userId: string },
  at: Date,
): Promise<void> {
  await tx
    .insert(recipientIdentities)
    .values({ userId: pair.userId, phone: pair.phone, updatedAt: at })
    .onConflictDoUpdate({
      target: recipientIdentities.userId,
      set: { phone: pair.phone, updatedAt: at },
      setWhere: lt(recipientIdentities.updatedAt, at),
    })
}

/**
 * The reply's phone and BSUID: when the webhook gives both, the pair is remembered (a user who
 * changes number gets a new BSUID, so the newest pair wins); when it gives one, the other is
 * completed from a pair remembered earlier, so either finds the conversation.
 */
async function pairIdentity(tx: Executor, item: InboundMessage): Promise<ReplyIdentity> {
  const { phone, userId } = item
  if (phone !== null && userId !== null) {
    await rememberRecipientPair(tx, { phone, userId }, item.receivedAt)
    return { phone, userId }
  }
  const [pair] = await tx
    .select({ phone: recipientIdentities.phone, userId: recipientIdentities.userId })
    .from(recipientIdentities)
    .where(
      userId !== null
        ? eq(recipientIdentities.userId, userId)
        : eq(recipientIdentities.phone, phone as string),
    )
    .orderBy(desc(recipientIdentities.updatedAt))
    .limit(1)
  return { phone: phone ?? pair?.phone ?? null, userId: userId ?? pair?.userId ?? null }
}

/** The content retention (in hours, null: retain) of the sender that owns a business number. */
async function inboundRetentionHours(tx: Executor, phoneNumberId: string): Promise<number | null> {
  const [sender] = await tx
    .select({ hours: senders.inboundContentRetentionHours })
    .from(senders)
    .where(eq(senders.phoneNumberId, phoneNumberId))
    .limit(1)
  return sender?.hours ?? null
}

/**
 * Stores a reply once (the platform redelivers: the wamid is unique with `received_at`, the
 * platform's time of the reply, which a redelivery repeats; `inbound_messages` is partitioned by
 * it) with the key it is routed to, and moves the conversation window of its business number and phone forward, in one transaction.
 * A routed reply's `message.received` event is written by the table's trigger in the same
 * transaction. A reply to a number whose sender discards replies' content (`inbound_content_
 * retention_hours` 0) is stored with `{}` for content and `redacted_at` set: the text never lands.
 */
export async function recordInboundMessage(db: Db, item: InboundMessage): Promise<RecordedInbound> {
  // A reply's time is the platform's, up to 30 days back: its period may be missing (dropped past
  // retention, or never made); it is then made, and the reply stored again.
  return writingToPeriods(db.$client, () => storeReply(db, item))
}

async function storeReply(db: Db, item: InboundMessage): Promise<RecordedInbound> {
  return db.transaction(async (tx) => {
    const identity = await pairIdentity(tx, item)
    const route = await routeReply(tx, item, identity)
    const hours = await inboundRetentionHours(tx, item.phoneNumberId)
    const discard = hours === 0
    const [row] = await tx
      .insert(inboundMessages)
      .values({
        // A UUIDv7 of `received_at`, the partition column: a lookup by id names its partition.
        id: messageIdAt(item.receivedAt.getTime()),
        platformMessageId: item.platformMessageId,
        phoneNumberId: item.phoneNumberId,
        phone: identity.phone,
        userId: identity.userId,
        username: item.username,
        contextId: item.contextId,
        type: item.type,
        // A sender that discards replies' content keeps none of it: `{}`, redacted from the start
        // (its event then says so; the caller still reads `item.content`, for keywords).
        content: discard ? {} : item.content,
        redactedAt: discard ? item.receivedAt : null,
        redactAfter: redactAfter(item.receivedAt, hours),
        apiKeyId: route.apiKeyId,
        inReplyTo: route.inReplyTo,
        receivedAt: item.receivedAt,
      })
      .onConflictDoNothing({ target: [inboundMessages.platformMessageId, inboundMessages.receivedAt] })
      .returning({ id: inboundMessages.id })
    // One window row per identity, so a send to either finds the conversation open.
    const recipients = [identity.phone, identity.userId].filter((r): r is string => r !== null)
    await tx
      .insert(conversationWindows)
      .values(
        recipients.map((phone) => ({
          phoneNumberId: item.phoneNumberId,
          phone,
          lastInboundAt: item.receivedAt,
        })),
      )
      .onConflictDoUpdate({
        target: [conversationWindows.phoneNumberId, conversationWindows.phone],
        set: {
          lastInboundAt: sql`greatest(${conversationWindows.lastInboundAt}, excluded.last_inbound_at)`,
        },
      })
    return row ? { outcome: 'stored', id: row.id, ...route, identity } : { outcome: 'duplicate', identity }
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
  // Meta stamps a reply to the second: two in one second are told apart by when they arrived here
  // (their ids' random part would order them by chance).
  const ties = query.orderField === 'createdAt' ? [m.id] : [m.createdAt, m.id]
  const [rows, [total]] = await Promise.all([
    db
      .select()
      .from(m)
      .where(where)
      .orderBy(...ordering(query.order, column, ...ties))
      .limit(query.take)
      .offset(offsetOf(query)),
    db.select({ value: count() }).from(m).where(where),
  ])
  return { rows, itemCount: total?.value ?? 0 }
}

/**
 * A reply routed to this key, by its Dispatch id or its wamid; undefined for one routed to another
 * key, unrouted, or unknown (callers answer 404 to all alike, so no key learns of another's).
 */
export async function findRoutedInboundMessage(db: Db, apiKeyId: string, id: string) {
  const m = inboundMessages
  // By id, in the partition its UUIDv7 names; by wamid, each partition's (wamid, received_at) index.
  const byId = isUuid(id) ? inboundMessagesWithIds([id.toLowerCase()]) : eq(m.platformMessageId, id)
  const [row] = await db
    .select()
    .from(m)
    .where(and(byId, eq(m.apiKeyId, apiKeyId)))
    .limit(1)
  return row
}
