import { INBOUND_CONTENT_KEYS, type MessageType, redactPayload } from '@dispatch/contracts'
import { sql } from 'drizzle-orm'
import type { Db } from '../client.ts'
import type { Executor } from './executor.ts'
import { webhookEventsAboutMessages } from './partitioned-ids.ts'

/** The content keys as one Postgres array literal, for `data - keys`. */
const CONTENT_KEYS = `{${INBOUND_CONTENT_KEYS.join(',')}}`

/**
 * The stored events of these messages (sent or received) marked `redacted: true`, with a reply's
 * content keys removed from their `data`: a replay after this sends no content. Message events
 * carry none of those keys, so one statement serves both. Read in the partitions from the earliest
 * message's time on (its id's), not in every one.
 */
async function redactEvents(tx: Executor, ids: string[]): Promise<void> {
  await tx.execute(sql`
    update webhook_events
    set payload = jsonb_set(payload, '{data}', ((payload->'data') - ${CONTENT_KEYS}::text[]) || '{"redacted": true}'::jsonb)
    where ${webhookEventsAboutMessages(ids)}`)
}

/**
 * One bounded pass of timed redaction for sent messages: up to `limit` messages due before `now`
 * (`redact_after`: acceptance plus the hours their key kept content then) and not redacted yet,
 * read through the partial index that holds only those, lose their content (`redactPayload`, the one
 * place that knows which fields are content, and the SMS of a fallback kept with the record) and
 * get `redacted_at`; so do their stored events. Rows another pass holds are skipped, so several
 * workers may sweep at once. Answers how many it redacted.
 */
export async function redactExpiredMessages(db: Db, now: Date, limit: number): Promise<number> {
  const at = now.toISOString()
  return db.transaction(async (tx) => {
    const rows = await tx.execute<{ id: string; type: MessageType; payload: object }>(sql`
      select id, type, payload from messages
      where redact_after is not null and redacted_at is null and redact_after <= ${at}::timestamptz
      order by redact_after
      limit ${limit}
      for update skip locked`)
    if (rows.length === 0) return 0
    const redacted = rows.map((row) => ({ id: row.id, payload: redactPayload(row.type, row.payload) }))
    await tx.execute(sql`
      update messages m set payload = v.payload, sms_fallback_text = null, redacted_at = ${at}::timestamptz
      from jsonb_to_recordset(${JSON.stringify(redacted)}::jsonb) as v(id uuid, payload jsonb)
      where m.id = v.id`)
    await redactEvents(
      tx,
      rows.map((row) => row.id),
    )
    return rows.length
  })
}

/**
 * The same for replies: up to `limit` replies due before `now` (receipt plus the hours their
 * sender kept replies' content then) get `{}` for content and `redacted_at`, and their
 * `message.received` events lose the content too.
 */
export async function redactExpiredReplies(db: Db, now: Date, limit: number): Promise<number> {
  const at = now.toISOString()
  return db.transaction(async (tx) => {
    const rows = await tx.execute<{ id: string }>(sql`
      select id from inbound_messages
      where redact_after is not null and redacted_at is null and redact_after <= ${at}::timestamptz
      order by redact_after
      limit ${limit}
      for update skip locked`)
    if (rows.length === 0) return 0
    const ids = rows.map((row) => row.id)
    await tx.execute(sql`
      update inbound_messages set content = '{}'::jsonb, redacted_at = ${at}::timestamptz
      where id = any(${`{${ids.join(',')}}`}::uuid[])`)
    await redactEvents(tx, ids)
    return rows.length
  })
}
