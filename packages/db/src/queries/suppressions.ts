import {
  DEFAULT_SENDER_ID,
  type SuppressionListQuery,
  type SuppressionScope,
  type SuppressionSource,
} from '@dispatch/contracts'
import { EVERY_KEY, isRecipientHash, suppressionOwner } from '@dispatch/runtime'
import { and, asc, count, eq, gt, inArray, type SQL, sql } from 'drizzle-orm'
import type { Db } from '../client.ts'
import { adminAuditLog } from '../schema/admin-audit-log.ts'
import { outbox } from '../schema/outbox.ts'
import { type SuppressionRow, suppressions } from '../schema/suppressions.ts'
import type { Executor } from './executor.ts'
import { offsetOf, ordering, whereAll } from './list-helpers.ts'

/** A new opt-out, as a keyword, a webhook, a failure, a key or an admin makes it. */
export interface NewSuppression {
  phoneNumberId: string
  senderId: string
  recipient: string
  scope: SuppressionScope
  source: SuppressionSource
  reason: string | null
  createdBy: string
  /** An entry a key adds (source `api`): its tenant, and the key; they make its owner. */
  tenantId?: string | null
  apiKeyId?: string | null
}

/** A side effect written with a change to the list, in its transaction, only if something changed. */
export interface OutboxOnChange {
  topic: string
  payload: Record<string, unknown>
}

/**
 * Records an opt-out: one entry per business number and recipient. A second opt-out keeps the
 * entry's first time and source, and widens its scope (`marketing` → `all`, never back). Answers
 * the entry, and whether it is new or wider (then the Redis copy and the event follow).
 */
export async function addSuppression(
  db: Db,
  entry: NewSuppression,
  at = new Date(),
): Promise<{ row: SuppressionRow; changed: boolean }> {
  const [added] = await addSuppressions(db, [entry], at)
  return added as { row: SuppressionRow; changed: boolean }
}

/**
 * Records several opt-outs in one transaction (every identity one user is known by), and
 * `onChange`'s outbox row with them when any is new or wider: a keyword's confirmation goes out
 * once, and only for an opt-out that was recorded.
 */
export async function addSuppressions(
  db: Db,
  entries: NewSuppression[],
  at = new Date(),
  onChange?: OutboxOnChange,
): Promise<Array<{ row: SuppressionRow; changed: boolean }>> {
  return db.transaction(async (tx) => {
    const results: Array<{ row: SuppressionRow; changed: boolean }> = []
    for (const entry of entries) results.push(await addOne(tx, entry, at))
    if (onChange && results.some((r) => r.changed)) {
      await tx.insert(outbox).values({ topic: onChange.topic, payload: onChange.payload, createdAt: at })
    }
    return results
  })
}

async function addOne(tx: Executor, entry: NewSuppression, at: Date) {
  const owner = suppressionOwner(entry)
  const [inserted] = await tx.insert(suppressions).values(entry).onConflictDoNothing().returning()
  let row = inserted
  if (!row && entry.scope === 'all') {
    ;[row] = await tx
      .update(suppressions)
      .set({ scope: 'all', reason: entry.reason })
      .where(
        and(
          eq(suppressions.phoneNumberId, entry.phoneNumberId),
          eq(suppressions.recipient, entry.recipient),
          eq(suppressions.owner, owner),
          eq(suppressions.scope, 'marketing'),
        ),
      )
      .returning()
  }
  if (row) {
    await emitConsentEvent(tx, 'recipient.opted_out', row, at)
    return { row, changed: true }
  }
  const [kept] = await tx
    .select()
    .from(suppressions)
    .where(
      and(
        eq(suppressions.phoneNumberId, entry.phoneNumberId),
        eq(suppressions.recipient, entry.recipient),
        eq(suppressions.owner, owner),
      ),
    )
  return { row: kept as SuppressionRow, changed: false }
}

/**
 * `recipient.opted_out` / `recipient.opted_in`, in the entry's transaction, to the keys sending
 * through the entry's sender that have an endpoint (the event function keeps those subscribed):
 * the keys bound to it, and the keys bound to a pool it is a member of (the entry blocks their
 * sends through every member); every one for the recipient's own opt-out (and an admin's), only
 * the owner's for an entry a key added (its tenant's keys, or the key itself), so no tenant hears
 * of another's list.
 */
async function emitConsentEvent(tx: Executor, type: string, row: SuppressionRow, at: Date) {
  // An entry kept by hash after an erasure names nobody in its events either.
  const recipient = row.recipient.startsWith('+')
    ? { phone: row.recipient }
    : isRecipientHash(row.recipient)
      ? {}
      : { userId: row.recipient }
  const data = {
    ...recipient,
    senderId: row.senderId,
    phoneNumberId: row.phoneNumberId,
    scope: row.scope,
    source: row.source,
    reason: row.reason,
  }
  await tx.execute(sql`
    select dispatch_emit_webhook_event(k.id, ${type}, null, ${JSON.stringify(data)}::jsonb, ${at.toISOString()}::timestamptz)
    from api_keys k
    where (k.sender_id = ${row.senderId} or (${row.senderId} = ${DEFAULT_SENDER_ID} and k.sender_id is null)
        or k.sender_pool_id in (select m.pool_id from sender_pool_members m where m.sender_id = ${row.senderId}))
      and (${row.owner} = '' or (case when k.tenant_id is not null then 'tenant:' || k.tenant_id else 'key:' || k.id::text end) = ${row.owner})
      and exists (select 1 from webhook_endpoints e where e.api_key_id = k.id)`)
}

type SuppressionMatch =
  /**
   * One entry, by id; with `owner`, only if that owner's (a key lifts its own tenant's only), and
   * with `senderIds` only on one of those senders (a key's own, its pool's members).
   */
  | { id: string; owner?: string; senderIds?: readonly string[] }
  /** The recipient's own opt-out (`owner` ''): an opt-in keyword, Meta's "resume". */
  | {
      phoneNumberId: string
      recipient: string
      /** The recipient's hash: an entry kept after its recipient was erased is lifted too. */
      recipientHash?: string
      onlyScope?: SuppressionScope
    }
type LiftAudit = { actor: string; reason: string }

/**
 * Lifts an opt-out (an opt-in keyword, Meta's `user_preferences` "resume", a key, an admin): the
 * entry goes, the lift is audited with its reason, and `recipient.opted_in` is written, in one
 * transaction. Answers the removed entry, or undefined.
 */
export async function removeSuppression(
  db: Db,
  where: SuppressionMatch,
  audit: LiftAudit,
  at = new Date(),
): Promise<SuppressionRow | undefined> {
  const [removed] = await removeSuppressions(db, [where], audit, at)
  return removed
}

/**
 * Lifts several entries in one transaction (every identity one user is known by), with
 * `onChange`'s outbox row when any was lifted. Answers each removed entry (or undefined), in order.
 */
export async function removeSuppressions(
  db: Db,
  wheres: SuppressionMatch[],
  audit: LiftAudit,
  at = new Date(),
  onChange?: OutboxOnChange,
): Promise<Array<SuppressionRow | undefined>> {
  return db.transaction(async (tx) => {
    const removed: Array<SuppressionRow | undefined> = []
    for (const where of wheres) removed.push(await removeOne(tx, where, audit, at))
    if (onChange && removed.some((row) => row !== undefined)) {
      await tx.insert(outbox).values({ topic: onChange.topic, payload: onChange.payload, createdAt: at })
    }
    return removed
  })
}

async function removeOne(tx: Executor, where: SuppressionMatch, audit: LiftAudit, at: Date) {
  const match =
    'id' in where
      ? and(
          eq(suppressions.id, where.id),
          where.senderIds === undefined ? undefined : inArray(suppressions.senderId, [...where.senderIds]),
          where.owner === undefined ? undefined : eq(suppressions.owner, where.owner),
        )
      : and(
          eq(suppressions.phoneNumberId, where.phoneNumberId),
          // A tenant's own entries are its to lift, not the recipient's keyword's.
          eq(suppressions.owner, EVERY_KEY),
          inArray(
            suppressions.recipient,
            where.recipientHash ? [where.recipient, where.recipientHash] : [where.recipient],
          ),
          where.onlyScope === undefined ? undefined : eq(suppressions.scope, where.onlyScope),
        )
  // Two at most: the recipient's entry, and one kept by hash after an erasure (then made again).
  const rows = await tx.delete(suppressions).where(match).returning()
  for (const removed of rows) await recordLift(tx, removed, audit, at)
  return rows.find((row) => !isRecipientHash(row.recipient)) ?? rows[0]
}

async function recordLift(tx: Executor, removed: SuppressionRow, audit: LiftAudit, at: Date) {
  await tx.insert(adminAuditLog).values({
    actor: audit.actor,
    action: 'suppression.remove',
    targetType: 'suppression',
    targetId: removed.id,
    // The recipient is not repeated here: the audit says who lifted the entry, and why.
    details: {
      reason: audit.reason,
      senderId: removed.senderId,
      scope: removed.scope,
      source: removed.source,
      createdAt: removed.createdAt.toISOString(),
    },
  })
  await emitConsentEvent(tx, 'recipient.opted_in', { ...removed, reason: audit.reason }, at)
}

/** One entry, by id, of any owner: for admins (a key reads through `owned(...).suppressions`). */
export async function findSuppression(db: Db, id: string) {
  const [row] = await db.select().from(suppressions).where(eq(suppressions.id, id))
  return row
}

/**
 * A page of entries, newest first by default, of any owner, within a sender when given: for admins
 * (a key lists through `owned(...).suppressions`). `only` narrows it (an owner's filter).
 */
export async function listSuppressions(db: Db, query: SuppressionListQuery, senderId?: string, only?: SQL) {
  const s = suppressions
  const where = whereAll([
    only,
    senderId === undefined ? undefined : eq(s.senderId, senderId),
    query.recipient ? eq(s.recipient, query.recipient) : undefined,
    query.scope ? eq(s.scope, query.scope) : undefined,
    query.source ? eq(s.source, query.source) : undefined,
    query.deleted === 'true' ? sql`false` : undefined,
  ])
  const [rows, [total]] = await Promise.all([
    db
      .select()
      .from(s)
      .where(where)
      .orderBy(...ordering(query.order, s.createdAt, s.id))
      .limit(query.take)
      .offset(offsetOf(query)),
    db.select({ value: count() }).from(s).where(where),
  ])
  return { rows, itemCount: total?.value ?? 0 }
}

/** Every entry in id order, a page at a time: what the Redis copy is rebuilt from. */
export function listSuppressionsAfter(db: Db, afterId: string | undefined, limit: number) {
  return db
    .select({
      id: suppressions.id,
      phoneNumberId: suppressions.phoneNumberId,
      recipient: suppressions.recipient,
      scope: suppressions.scope,
      owner: suppressions.owner,
    })
    .from(suppressions)
    .where(afterId === undefined ? undefined : gt(suppressions.id, afterId))
    .orderBy(asc(suppressions.id))
    .limit(limit)
}
