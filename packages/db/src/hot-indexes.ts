/**
 * Every index of the tables written for each message (issue 46), each with the query it is kept
 * for. An index there is written at every insert, and on `messages` at every status change too
 * (status changes are not HOT updates, see schema/messages.ts): what a table holds per message, and
 * the WAL a message costs, grow with each one. docs/redis-and-postgres.md (Postgres: indexes and writes per
 * message) has the same table with what each costs; hot-indexes.test.ts fails when a migrated
 * database has an index on these tables that is not listed here (or in the docs), so a new index
 * must be argued for. `pnpm --filter @dispatch/bench bench:index-plans` checks that each query
 * still reads its index (`planCase`, a case of packages/bench/src/db/index-plans.ts).
 */

/** The tables a message writes: its record, its failed attempts, its events and their deliveries,
 * the outbox rows the events leave, and the replies (with their window and identities). */
export const HOT_TABLES = [
  'messages',
  'message_attempts',
  'webhook_events',
  'webhook_attempts',
  'outbox',
  'inbound_messages',
  'conversation_windows',
  'recipient_identities',
] as const

export type HotTable = (typeof HOT_TABLES)[number]

export interface HotIndex {
  table: HotTable
  index: string
  /** The query that reads it: function, file:line (packages/db/src/queries unless said). */
  serves: string
  /** On a message's way (accepting, recording, a status, a reply, a webhook), or not. */
  hot: boolean
  /** What writes an entry: every row, or only the rows of a partial index. */
  entries: string
  kind?: 'primary key' | 'unique'
  /** The case (or cases) of bench:index-plans whose plan must read it. */
  planCase?: string | string[]
}

export const HOT_TABLE_INDEXES: HotIndex[] = [
  // messages
  {
    table: 'messages',
    index: 'messages_id_accepted_at_pk',
    kind: 'primary key',
    serves: 'findMessageById, messages.ts:17; the record upsert (on conflict), message-deliveries.ts:117',
    hot: true,
    entries: 'every insert and status change',
    planCase: 'findMessageById',
  },
  {
    table: 'messages',
    index: 'messages_platform_message_id_hash_idx',
    serves:
      "a platform status's update, applyPlatformStatus, messages.ts:51, and its pricing, recordMessagePricing, message-pricing.ts:13; a quoted reply, routeReply, inbound-messages.ts:61 (on the id's hash: platformIdIs, message-ids.ts:37)",
    hot: true,
    // The id's 8-byte hash, not the id (~50-60 bytes): each sent message lands on a random leaf, so
    // the whole index is the working set (migration 0040). Whole, not partial: a partial index's
    // expression has no statistics, and a quoted reply then read the phone's index with it.
    entries: 'every insert and status change (a null hash until sent)',
    planCase: ['applyPlatformStatus', 'recordMessagePricing', 'routeReply (quoted)'],
  },
  {
    table: 'messages',
    index: 'messages_phone_sent_at_idx',
    serves: "a reply's key, routeReply, inbound-messages.ts:61; search by phone (lists, erasure, export)",
    hot: true,
    entries: 'every insert and status change',
    planCase: 'routeReply (phone)',
  },
  {
    table: 'messages',
    index: 'messages_user_id_sent_at_idx',
    serves: "a reply's key by BSUID, routeReply, inbound-messages.ts:61; search by userId",
    hot: true,
    entries: 'messages to a BSUID only (partial)',
  },
  {
    table: 'messages',
    index: 'messages_api_key_status_accepted_at_idx',
    serves:
      "a key's list: by status, and since 0029 newest first (each status's range merged) and its count, listMatchingMessages, message-list.ts:85",
    hot: false,
    entries: 'every insert and status change',
    planCase: 'list: key, newest',
  },
  {
    table: 'messages',
    index: 'messages_api_key_updated_at_idx',
    serves: "a key's list with orderField=updatedAt, message-list.ts:85",
    hot: false,
    entries: 'every insert and status change',
    planCase: 'list: key, orderField=updatedAt',
  },
  {
    table: 'messages',
    index: 'messages_api_key_batch_idx',
    serves: "a key's list with batchId, message-list.ts:85",
    hot: false,
    entries: 'messages of a batch only (partial)',
    planCase: 'list: key, batchId',
  },
  {
    table: 'messages',
    index: 'messages_client_reference_idx',
    serves: "clientReference and q, a key's list and the admins' search across keys, message-list.ts:22",
    hot: false,
    entries: 'messages with a client reference only (partial)',
    planCase: 'admin search: clientReference',
  },
  {
    table: 'messages',
    index: 'messages_accepted_at_idx',
    serves:
      "the admins' list across keys, listAdminMessages, admin-messages.ts:39; the console's chart, console.ts:22",
    hot: false,
    entries: 'every insert and status change',
    planCase: 'admin list: newest',
  },
  {
    table: 'messages',
    index: 'messages_failed_accepted_at_idx',
    serves: "an admin's bulk retry of failed messages, retryFailedMessages, admin-messages.ts:170",
    hot: false,
    entries: 'failed messages only (partial)',
    planCase: 'retryFailedMessages',
  },
  {
    table: 'messages',
    index: 'messages_redact_after_idx',
    serves: 'timed content redaction, redactExpiredMessages, content-redaction.ts:30',
    hot: false,
    entries: 'messages of keys with a contentRetention only (partial), until redacted',
    planCase: 'redactExpiredMessages',
  },
  // message_attempts: a row per failed try, and per move of a pooled message off a fallen number
  {
    table: 'message_attempts',
    index: 'message_attempts_id_created_at_pk',
    kind: 'primary key',
    serves: '(the partitioned key; no query by it)',
    hot: true,
    entries: 'every failed try',
  },
  {
    table: 'message_attempts',
    index: 'message_attempts_message_id_idx',
    serves:
      "a message's timeline, messageHistory, console.ts:82; its view's latest move, findLatestSenderChange, sender-changes.ts:40",
    hot: false,
    entries: 'every failed try',
    planCase: 'messageHistory',
  },
  {
    table: 'message_attempts',
    index: 'message_attempts_created_at_idx',
    serves: "the console's top error codes, topErrorCodes, console.ts:40",
    hot: false,
    entries: 'every failed try',
    planCase: 'console: topErrorCodes',
  },
  // webhook_events: one per status change of a message whose key has an endpoint
  {
    table: 'webhook_events',
    index: 'webhook_events_id_created_at_pk',
    kind: 'primary key',
    serves: "the relay's and the delivery's events by id, findWebhookEvents, webhook-events.ts:68",
    hot: true,
    entries: 'every event',
    planCase: 'findWebhookEvents',
  },
  {
    table: 'webhook_events',
    index: 'webhook_events_message_id_sequence_idx',
    serves:
      "the next event's sequence, in the trigger that writes each event (migration 0027); a message's timeline, console.ts:82",
    hot: true,
    entries: 'every event',
    planCase: 'messageHistory',
  },
  {
    table: 'webhook_events',
    index: 'webhook_events_api_key_id_created_at_idx',
    serves: "a replay of a key's events, webhookEventsBetween, webhook-events.ts:237; erasure",
    hot: false,
    entries: 'every event',
    planCase: 'webhookEventsBetween',
  },
  // webhook_attempts: one per delivery try
  {
    table: 'webhook_attempts',
    index: 'webhook_attempts_id_created_at_pk',
    kind: 'primary key',
    serves: '(the partitioned key; no query by it)',
    hot: true,
    entries: 'every delivery try',
  },
  {
    table: 'webhook_attempts',
    index: 'webhook_attempts_endpoint_id_created_at_idx',
    serves: "an endpoint's attempts, listWebhookAttempts, webhook-events.ts:274; an endpoint's deletion",
    hot: false,
    entries: 'every delivery try',
    planCase: 'listWebhookAttempts',
  },
  {
    table: 'webhook_attempts',
    index: 'webhook_attempts_event_id_idx',
    serves: "an event's deliveries in a message's timeline, console.ts:82; erasure",
    hot: false,
    entries: 'every delivery try',
    planCase: 'messageHistory',
  },
  {
    table: 'webhook_attempts',
    index: 'webhook_attempts_failed_created_at_idx',
    serves: "the console's failing endpoints, failingWebhookEndpoints, console.ts:50",
    hot: false,
    entries: 'failed tries only (partial)',
    planCase: 'console: failingWebhookEndpoints',
  },
  // outbox: one per event (and per e-mail)
  {
    table: 'outbox',
    index: 'outbox_pkey',
    kind: 'primary key',
    serves:
      "the relay's mark as dispatched, relayOutbox, outbox.ts:17; purgeRelayedOutbox, webhook-events.ts:303",
    hot: true,
    entries: 'every row, at insert and when dispatched',
    planCase: 'purgeRelayedOutbox',
  },
  {
    table: 'outbox',
    index: 'outbox_pending_idx',
    serves: "the relay's pick of pending rows, relayOutbox, outbox.ts:17; its age metric, outbox.ts:47",
    hot: true,
    entries: 'every row at insert (partial: pending), none once dispatched',
    planCase: 'relayOutbox',
  },
  // inbound_messages: one per reply
  {
    table: 'inbound_messages',
    index: 'inbound_messages_id_received_at_pk',
    kind: 'primary key',
    serves: 'a reply by id, findRoutedInboundMessage, inbound-messages.ts:252',
    hot: true,
    entries: 'every reply',
  },
  {
    table: 'inbound_messages',
    index: 'inbound_messages_platform_message_id_received_at_idx',
    kind: 'unique',
    serves: 'a redelivered reply stored once (on conflict), recordInboundMessage, inbound-messages.ts:156',
    hot: true,
    entries: 'every reply',
  },
  {
    table: 'inbound_messages',
    index: 'inbound_messages_api_key_id_received_at_idx',
    serves: "a key's replies, listInboundMessages, inbound-messages.ts:217; erasure; the key's foreign key",
    hot: false,
    entries: 'every reply',
    planCase: 'admin inbound: apiKeyId',
  },
  {
    table: 'inbound_messages',
    index: 'inbound_messages_unrouted_idx',
    serves: "the admins' unrouted replies, listInboundMessages, inbound-messages.ts:217",
    hot: false,
    entries: 'unrouted replies only (partial)',
    planCase: 'admin inbound: unrouted',
  },
  {
    table: 'inbound_messages',
    index: 'inbound_messages_media_id_idx',
    serves: 'GET /media/{id}/content, findInboundMedia, media.ts:39',
    hot: false,
    // Not partial (`where … is not null`, tried for 0029): Postgres keeps no statistics on a partial
    // index's expression, guessed 135 matches for one media id instead of 1, and read the key's
    // replies instead (14 ms at 30,000 replies, growing with them; 0.3 ms with this index).
    entries: 'every reply (null for one without media)',
    planCase: 'findInboundMedia',
  },
  {
    table: 'inbound_messages',
    index: 'inbound_messages_redact_after_idx',
    serves: 'timed redaction of replies, redactExpiredReplies, content-redaction.ts:58',
    hot: false,
    entries: 'replies to senders with a retention only (partial), until redacted',
    planCase: 'redactExpiredReplies',
  },
  // a reply's window and the user's identities
  {
    table: 'conversation_windows',
    index: 'conversation_windows_phone_number_id_phone_pk',
    kind: 'primary key',
    serves:
      "the window's upsert at each reply, inbound-messages.ts:194; the send's window check, service-windows.ts:15",
    hot: true,
    entries: 'a new recipient (an update of the time otherwise, HOT)',
  },
  {
    table: 'recipient_identities',
    index: 'recipient_identities_pkey',
    kind: 'primary key',
    serves: "a BSUID's phone (upsert), rememberRecipientPair, inbound-messages.ts:99",
    hot: true,
    entries: 'a status or reply naming a new BSUID and phone pair',
  },
  {
    table: 'recipient_identities',
    index: 'recipient_identities_phone_idx',
    serves: "a phone's BSUID, a reply's and an erasure's identities, erase-recipient.ts:27",
    hot: true,
    entries: 'a new pair',
  },
]
