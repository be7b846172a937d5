import { QueueNames } from '@dispatch/contracts'
import type { RecipientHasher } from '@dispatch/runtime'
import { and, eq, inArray, isNull, or, type SQL, sql } from 'drizzle-orm'
import type { AnyPgColumn } from 'drizzle-orm/pg-core'
import type { Db } from '../client.ts'
import { campaignRecipients, campaigns } from '../schema/campaigns.ts'
import { conversationWindows, inboundMessages, recipientIdentities } from '../schema/inbound-messages.ts'
import { messageAttempts } from '../schema/message-attempts.ts'
import { messages } from '../schema/messages.ts'
import { outbox } from '../schema/outbox.ts'
import { suppressions } from '../schema/suppressions.ts'
import { webhookEndpoints } from '../schema/webhook-endpoints.ts'
import { webhookAttempts, webhookEvents } from '../schema/webhook-events.ts'
import { expandBlocks } from './campaign-audience-blocks.ts'
import {
  webhookAttemptsOfEvents,
  webhookEventsAboutMessages,
  webhookEventsWithIds,
} from './partitioned-ids.ts'
import { stripContentSql } from './redaction.ts'

/** Every identity one recipient is known by: its phones and BSUIDs (`recipient_identities` pairs them). */
export interface RecipientIdentities {
  phones: string[]
  userIds: string[]
}

/** A phone or a BSUID, with the other identities the platform told us it goes with. */
export async function identitiesOf(
  db: Db,
  recipient: { phone?: string | undefined; userId?: string | undefined },
): Promise<RecipientIdentities> {
  const phones = new Set(recipient.phone ? [recipient.phone] : [])
  const userIds = new Set(recipient.userId ? [recipient.userId] : [])
  const pairs = await db
    .select({ phone: recipientIdentities.phone, userId: recipientIdentities.userId })
    .from(recipientIdentities)
    .where(
      or(
        phones.size ? inArray(recipientIdentities.phone, [...phones]) : undefined,
        userIds.size ? inArray(recipientIdentities.userId, [...userIds]) : undefined,
      ),
    )
  for (const pair of pairs) {
    phones.add(pair.phone)
    userIds.add(pair.userId)
  }
  return { phones: [...phones], userIds: [...userIds] }
}

/** The rows of one recipient: any of its phones in `phone`, or any of its BSUIDs in `userId`. */
function namedBy(ids: RecipientIdentities, phone: AnyPgColumn, userId: AnyPgColumn): SQL {
  return (
    or(
      ids.phones.length ? inArray(phone, ids.phones) : undefined,
      ids.userIds.length ? inArray(userId, ids.userIds) : undefined,
    ) ?? sql`false`
  )
}

export interface EraseRows {
  identities: RecipientIdentities
  /** A key's own data only; null: every key's, and the business numbers' shared records too. */
  apiKeyId: string | null
  /**
   * The key's senders, whose suppression lists a key's erasure hashes: its own and, for a pooled
   * key, its pool's members (`sendersOf`; its tenant's entries there are its to list and lift).
   */
  senderIds: readonly string[]
  /**
   * The key's owner of suppression entries (`suppressionOwner`): a key's erasure hashes its own
   * tenant's entries only, never the recipient's own or another tenant's (still theirs to read).
   */
  owner?: string
  hash: RecipientHasher
  at: Date
  /** Messages the erasure canceled before they went, recorded already without their recipient. */
  canceledIds?: string[]
}

/** What the Postgres pass changed, and the ids the Redis pass needs to find what they left there. */
export interface ErasedRows {
  counts: {
    messages: number
    messageAttempts: number
    inboundMessages: number
    webhookEvents: number
    webhookAttempts: number
    suppressions: number
    conversationWindows: number
    recipientIdentities: number
    campaignRecipients: number
    consentConfirmations: number
  }
  /** The messages erased, with where their jobs may still be in Redis (their sender's queue, for a while). */
  messages: Array<{ id: string; senderId: string | null; acceptedAt: Date }>
  /** Events whose data was stripped, with the key they belong to (their delivery jobs are per endpoint). */
  eventIds: string[]
  /** The BullMQ job ids of the consent confirmations removed from the outbox. */
  confirmationJobIds: string[]
}

const CHUNK = 5000
const EVENT_DATA_KEPT = [
  'messageId',
  'clientReference',
  'inReplyTo',
  'type',
  'status',
  'attempts',
  'phoneNumberId',
  'senderId',
  'scope',
  'source',
  'fallbackUsed',
  'context',
]

/**
 * The Postgres side of an erasure: each table's rows of the recipient, within the key when one is
 * given, lose the recipient and their content; what the rows count and when stays. Each statement
 * stands alone (a rerun finds only what is left), so a job retried after a crash goes on where it
 * stopped. Messages go in chunks, so no statement holds a large recipient's rows locked for long.
 */
export async function eraseRecipientRows(db: Db, input: EraseRows): Promise<ErasedRows> {
  const { identities: ids, apiKeyId, at } = input
  const atSql = sql`${at.toISOString()}::timestamptz`
  const ofKey = (column: AnyPgColumn) => (apiKeyId ? eq(column, apiKeyId) : undefined)

  // Messages: recipient, content and the error text (the platform's may quote the number) removed.
  const erased: ErasedRows['messages'] = []
  const canceled = input.canceledIds ?? []
  const messagesOf = and(
    or(
      namedBy(ids, messages.phone, messages.userId),
      canceled.length
        ? and(sql`${messages.id} = any(${sql.param(canceled)}::uuid[])`, isNull(messages.redactedAt))
        : undefined,
    ),
    ofKey(messages.apiKeyId),
  )
  for (;;) {
    const chunk = db.select({ id: messages.id }).from(messages).where(messagesOf).limit(CHUNK)
    const rows = await db
      .update(messages)
      .set({
        phone: null,
        userId: null,
        payload: stripContentSql(messages.type, messages.payload),
        smsFallbackText: null,
        lastErrorMessage: null,
        redactedAt: sql`coalesce(${messages.redactedAt}, ${atSql})`,
      })
      .where(inArray(messages.id, chunk))
      .returning({ id: messages.id, senderId: messages.senderId, acceptedAt: messages.acceptedAt })
    erased.push(...rows)
    if (rows.length < CHUNK) break
  }
  const messageIds = erased.map((m) => m.id)
  const attempts = messageIds.length
    ? await db
        .update(messageAttempts)
        .set({ errorMessage: null })
        .where(
          and(
            sql`${messageAttempts.messageId} = any(${sql.param(messageIds)}::uuid[])`,
            sql`${messageAttempts.errorMessage} is not null`,
          ),
        )
        .returning({ id: messageAttempts.id })
    : []

  // Their channel fallbacks' records hold no recipient nor SMS text, but the provider's error text
  // may quote the number (Twilio's 21211 does): removed as the messages' own is.
  if (messageIds.length) {
    await db.$client`
      update message_fallbacks set error_message = null
      where message_id = any(${messageIds}::uuid[]) and error_message is not null`
  }

  // Replies: who sent them and what they said.
  const inbound = await db
    .update(inboundMessages)
    .set({
      phone: null,
      userId: null,
      username: null,
      // A reply's content goes whole, as its redaction does (`{}`).
      content: sql`'{}'::jsonb`,
      redactedAt: sql`coalesce(${inboundMessages.redactedAt}, ${atSql})`,
    })
    .where(and(namedBy(ids, inboundMessages.phone, inboundMessages.userId), ofKey(inboundMessages.apiKeyId)))
    .returning({ id: inboundMessages.id })

  // Events: those of these messages and replies, and the consent events naming the recipient. Two
  // statements: the first reads the partitions from the earliest message's time on (its id's); the
  // consent events are about no message, so nothing bounds their time, and the second reads every
  // partition.
  const aboutIds = [...messageIds, ...inbound.map((r) => r.id)]
  const data = sql`${webhookEvents.payload}->'data'`
  const stripEvents = (which: SQL) =>
    db
      .update(webhookEvents)
      .set({
        payload: sql`jsonb_set(${webhookEvents.payload}, '{data}',
          coalesce((select jsonb_object_agg(f.key, f.value) from jsonb_each(${data}) f
            where f.key in (${sql.join(
              EVENT_DATA_KEPT.map((k) => sql`${k}`),
              sql`, `,
            )}) and f.key <> 'error'), '{}'::jsonb)
          || case when jsonb_typeof(${data}->'error') = 'object'
               then jsonb_build_object('error', (${data}->'error') - 'message') else '{}'::jsonb end
          || '{"redacted": true}'::jsonb)`,
      })
      .where(and(ofKey(webhookEvents.apiKeyId), which))
      .returning({ id: webhookEvents.id })
  const consentNaming = or(
    ids.phones.length ? sql`${data}->>'phone' = any(${sql.param(ids.phones)}::text[])` : undefined,
    ids.userIds.length ? sql`${data}->>'userId' = any(${sql.param(ids.userIds)}::text[])` : undefined,
  )
  const events = [
    ...(aboutIds.length ? await stripEvents(webhookEventsAboutMessages(aboutIds)) : []),
    ...(consentNaming ? await stripEvents(and(isNull(webhookEvents.messageId), consentNaming) as SQL) : []),
  ]
  const eventIds = events.map((e) => e.id)
  // A receiver's answer may echo the event it got: its excerpt goes with the event's content.
  const excerpts = eventIds.length
    ? await db
        .update(webhookAttempts)
        .set({ responseExcerpt: null })
        .where(and(webhookAttemptsOfEvents(eventIds), sql`${webhookAttempts.responseExcerpt} is not null`))
        .returning({ id: webhookAttempts.id })
    : []

  // Campaigns' audiences: the rows naming them lose the recipient, the variables and the uploaded
  // line; the row (its line, its state, its message id) stays, so the campaign's counts still add up.
  // A block whose lines hold one of the phones becomes a row per line first (a phone that is only
  // part of a longer one, or a variable's value, expands a block for nothing: no harm done).
  const ofKeyCampaigns = apiKeyId
    ? inArray(
        campaignRecipients.campaignId,
        db.select({ id: campaigns.id }).from(campaigns).where(eq(campaigns.apiKeyId, apiKeyId)),
      )
    : undefined
  if (ids.phones.length > 0) {
    await expandBlocks(
      db,
      and(
        sql`exists (select 1 from unnest(${sql.param(ids.phones)}::text[]) as p(phone)
          where strpos(campaign_recipients.block, p.phone) > 0)`,
        ofKeyCampaigns,
      ) as SQL,
    )
  }
  const campaignRows = await db
    .update(campaignRecipients)
    .set({ phone: null, userId: null, variables: null, raw: null, detail: null })
    .where(and(namedBy(ids, campaignRecipients.phone, campaignRecipients.userId), ofKeyCampaigns))
    .returning({ line: campaignRecipients.line })

  const suppressed = await hashSuppressions(db, input)
  const shared = apiKeyId === null ? await eraseSharedRecords(db, ids) : undefined

  return {
    counts: {
      messages: messageIds.length,
      messageAttempts: attempts.length,
      inboundMessages: inbound.length,
      webhookEvents: eventIds.length,
      webhookAttempts: excerpts.length,
      suppressions: suppressed,
      conversationWindows: shared?.windows ?? 0,
      recipientIdentities: shared?.identities ?? 0,
      campaignRecipients: campaignRows.length,
      consentConfirmations: shared?.confirmationJobIds.length ?? 0,
    },
    messages: erased,
    eventIds,
    confirmationJobIds: shared?.confirmationJobIds ?? [],
  }
}

/**
 * Opt-outs must hold after the erasure: each entry of the recipient stays, its recipient replaced by
 * its hash, which the Redis copy is keyed by anyway. Where the number already has a hashed entry
 * (an earlier erasure, then a new opt-out), the two become one, the wider scope kept. A reason that
 * quotes the recipient goes. A key's erasure hashes its own tenant's entries on its sender and, for a
 * pooled key, its pool's members (the recipient's own opt-outs and other tenants' entries are not
 * its to make unreadable); an admin's, every one.
 */
async function hashSuppressions(db: Db, input: EraseRows): Promise<number> {
  const { identities, apiKeyId, hash } = input
  const senders = [...input.senderIds]
  // A key with no owner given (a job queued before owners) is its own owner.
  const owner = input.owner ?? `key:${apiKeyId}`
  const ofSender =
    apiKeyId === null
      ? sql`true`
      : sql`${suppressions.senderId} = any(${sql.param(senders)}::text[]) and ${suppressions.owner} = ${owner}`
  const plainOfSender =
    apiKeyId === null
      ? sql`true`
      : sql`p.sender_id = any(${sql.param(senders)}::text[]) and p.owner = ${owner}`
  let changed = 0
  for (const recipient of [...identities.phones, ...identities.userIds]) {
    const hashed = hash(recipient)
    await db.execute(sql`
      update suppressions h set scope = 'all'
      from suppressions p
      where h.recipient = ${hashed} and p.recipient = ${recipient} and p.phone_number_id = h.phone_number_id
        and p.owner = h.owner and p.scope = 'all' and ${plainOfSender}`)
    const merged = await db
      .delete(suppressions)
      .where(
        and(
          eq(suppressions.recipient, recipient),
          ofSender,
          sql`exists (select 1 from suppressions h where h.phone_number_id = ${suppressions.phoneNumberId} and h.recipient = ${hashed} and h.owner = ${suppressions.owner})`,
        ),
      )
      .returning({ id: suppressions.id })
    const moved = await db
      .update(suppressions)
      .set({
        recipient: hashed,
        reason: sql`case when strpos(${suppressions.reason}, ${recipient}) > 0 then null else ${suppressions.reason} end`,
      })
      .where(and(eq(suppressions.recipient, recipient), ofSender))
      .returning({ id: suppressions.id })
    changed += merged.length + moved.length
  }
  return changed
}

/**
 * The business numbers' own records of the recipient, shared by every key sending through them:
 * only an admin's erasure (of every key's data) removes them. The 24-hour window goes (a new message
 * from them opens it again), the phone–BSUID pairs, and the opt-out confirmations sent to them.
 */
async function eraseSharedRecords(db: Db, ids: RecipientIdentities) {
  const recipients = [...ids.phones, ...ids.userIds]
  const windows = recipients.length
    ? await db
        .delete(conversationWindows)
        .where(inArray(conversationWindows.phone, recipients))
        .returning({ phone: conversationWindows.phone })
    : []
  const identities = await db
    .delete(recipientIdentities)
    .where(namedBy(ids, recipientIdentities.phone, recipientIdentities.userId))
    .returning({ userId: recipientIdentities.userId })
  const confirmations = await db
    .delete(outbox)
    .where(
      and(
        eq(outbox.topic, QueueNames.consentConfirmations),
        or(
          ids.phones.length
            ? sql`${outbox.payload}->>'phone' = any(${sql.param(ids.phones)}::text[])`
            : undefined,
          ids.userIds.length
            ? sql`${outbox.payload}->>'userId' = any(${sql.param(ids.userIds)}::text[])`
            : undefined,
        ),
      ),
    )
    .returning({ jobId: outbox.jobId })
  return {
    windows: windows.length,
    identities: identities.length,
    confirmationJobIds: confirmations.map((c) => `outbox-${c.jobId}`),
  }
}

/** Where each erased event was bound (its key's endpoints), with its payload as it now is. */
export async function erasedEventDeliveries(db: Db, eventIds: string[]) {
  if (eventIds.length === 0) return []
  return db
    .select({ eventId: webhookEvents.id, endpointId: webhookEndpoints.id, payload: webhookEvents.payload })
    .from(webhookEvents)
    .innerJoin(webhookEndpoints, eq(webhookEndpoints.apiKeyId, webhookEvents.apiKeyId))
    .where(webhookEventsWithIds(eventIds))
}
