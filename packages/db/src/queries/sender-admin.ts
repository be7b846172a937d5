import {
  type ConsentConfirmation,
  type ConsentKeywords,
  DEFAULT_SENDER_ID,
  type MessageFallback,
  type MessagingLimitPolicy,
  type SenderListQuery,
  type SenderState,
  type ServiceWindowPolicy,
} from '@dispatch/contracts'
import type { SecretBox } from '@dispatch/runtime'
import { and, count, eq, ilike, isNotNull, lt, or, type SQL, sql } from 'drizzle-orm'
import type { Db } from '../client.ts'
import { apiKeys } from '../schema/api-keys.ts'
import { type SenderRow, senders } from '../schema/senders.ts'
import { pgError } from './executor.ts'
import { likePattern, offsetOf, ordering, whereAll } from './list-helpers.ts'

/** Another sender has this `phoneNumberId` already: the admin route answers 409 SENDER_EXISTS. */
export class SenderExists extends Error {}

export interface NewSender {
  id: string
  phoneNumberId: string
  displayName: string
  displayPhoneNumber: string | null
  /** Sealed by the caller's secret box: the token itself never reaches this package. */
  accessTokenCiphertext: string
  accessTokenLast4: string
  ratePerSecond?: number | undefined
  wabaId?: string | undefined
  serviceWindowPolicy?: ServiceWindowPolicy | undefined
  marketingCap?: { count: number; hours: number } | null | undefined
  consentKeywords?: ConsentKeywords | null | undefined
  consentConfirmation?: ConsentConfirmation | null | undefined
  /** The fallback its sends carry when they have none (and their key may ask for one). */
  defaultFallback?: MessageFallback | null | undefined
  /** Replies' content retention as stored: null retain, 0 discard, N hours (`retentionHours`). */
  /** Its business portfolio (shares a messaging limit), its policy past the limit, and the admin's limit. */
  businessId?: string | undefined
  messagingLimitPolicy?: MessagingLimitPolicy | undefined
  messagingLimitOverride?: number | null | undefined
  inboundContentRetentionHours?: number | null | undefined
  now: Date
}

/** Inserts an admin's sender; the unique index decides a duplicate number, not a racy pre-check. */
export async function insertSender(db: Db, { now, ...sender }: NewSender): Promise<SenderRow> {
  try {
    const [row] = await db
      .insert(senders)
      .values({ ...sender, createdAt: now, updatedAt: now })
      .returning()
    if (!row) throw new Error('insert into senders returned no row')
    return row
  } catch (error) {
    if (pgError(error).code === '23505') {
      throw new SenderExists(
        `A sender with phoneNumberId ${JSON.stringify(sender.phoneNumberId)} exists already`,
      )
    }
    throw error
  }
}

const orderColumns = { createdAt: senders.createdAt, displayName: senders.displayName } as const

export async function listSenders(db: Db, query: SenderListQuery) {
  const pattern = query.q ? likePattern(query.q) : undefined
  const where = whereAll([
    query.state ? eq(senders.state, query.state) : undefined,
    pattern
      ? or(
          ilike(senders.displayName, pattern),
          ilike(senders.phoneNumberId, pattern),
          ilike(senders.displayPhoneNumber, pattern),
        )
      : undefined,
  ])
  const [rows, [total]] = await Promise.all([
    db
      .select()
      .from(senders)
      .where(where)
      .orderBy(...ordering(query.order, orderColumns[query.orderField], senders.id))
      .limit(query.take)
      .offset(offsetOf(query)),
    db.select({ value: count() }).from(senders).where(where),
  ])
  return { rows, itemCount: total?.value ?? 0 }
}

/** What an admin may change; the token arrives sealed. */
export interface SenderChanges {
  displayName?: string | undefined
  displayPhoneNumber?: string | null | undefined
  accessTokenCiphertext?: string | undefined
  accessTokenLast4?: string | undefined
  ratePerSecond?: number | undefined
  state?: Exclude<SenderState, 'needs_attention'> | undefined
  wabaId?: string | null | undefined
  serviceWindowPolicy?: ServiceWindowPolicy | undefined
  marketingCap?: { count: number; hours: number } | null | undefined
  consentKeywords?: ConsentKeywords | null | undefined
  consentConfirmation?: ConsentConfirmation | null | undefined
  /** The fallback its sends carry when they have none (and their key may ask for one). */
  defaultFallback?: MessageFallback | null | undefined
  /** Replies' content retention as stored: null retain, 0 discard, N hours (`retentionHours`). */
  /** Its business portfolio (shares a messaging limit), its policy past the limit, and the admin's limit. */
  businessId?: string | null | undefined
  messagingLimitPolicy?: MessagingLimitPolicy | undefined
  messagingLimitOverride?: number | null | undefined
  inboundContentRetentionHours?: number | null | undefined
  /** The admin's note kept with a `paused` state. */
  pausedBy?: string | undefined
}

/**
 * Applies an admin's changes. `active` clears any `needs_attention` and its reason (how an admin
 * resumes a sender once its token is fixed), and so does a new token given without a state: a
 * token refused by the platform is the only way into `needs_attention`.
 */
export async function updateSender(
  db: Db,
  id: string,
  { state, pausedBy, ...changes }: SenderChanges,
  now: Date,
): Promise<SenderRow | undefined> {
  const defined = Object.fromEntries(Object.entries(changes).filter(([, v]) => v !== undefined))
  const stateChange =
    state === 'paused'
      ? { state, stateReason: `Paused by ${pausedBy ?? 'an admin'}` }
      : state === 'active'
        ? { state, stateReason: null }
        : changes.accessTokenCiphertext !== undefined
          ? {
              state: sql`case when ${senders.state} = 'needs_attention' then 'active'::sender_state else ${senders.state} end`,
              stateReason: sql`case when ${senders.state} = 'needs_attention' then null else ${senders.stateReason} end`,
            }
          : {}
  // Another account's templates are not this one's: a new wabaId empties the catalog until the
  // next sync, and template sends go unchecked meanwhile (as for a sender never synced).
  const accountChange =
    changes.wabaId === undefined
      ? {}
      : {
          templatesSyncedAt: sql`case when ${senders.wabaId} is not distinct from ${changes.wabaId} then ${senders.templatesSyncedAt} else null end`,
        }
  return db.transaction(async (tx) => {
    if (changes.wabaId !== undefined) {
      await tx.execute(sql`delete from message_templates t using senders s
        where t.sender_id = s.id and s.id = ${id} and s.waba_id is distinct from ${changes.wabaId}`)
    }
    const [row] = await tx
      .update(senders)
      .set({ ...defined, ...stateChange, ...accountChange, updatedAt: now })
      .where(eq(senders.id, id))
      .returning()
    return row
  })
}

/** The API keys whose messages go out through this sender. */
export async function countKeysBoundToSender(db: Db, id: string): Promise<number> {
  const [row] = await db.select({ value: count() }).from(apiKeys).where(eq(apiKeys.senderId, id))
  return row?.value ?? 0
}

export type DeleteSenderResult = 'deleted' | 'not_found' | 'in_use'

/**
 * Deletes a sender no API key is bound to, in one statement. A key bound at the same moment either
 * committed first (the `not exists` sees it) or holds the row's key-share lock, so the delete waits
 * and then fails the foreign key: both are `in_use`, never a key pointing at nothing.
 */
export async function deleteSenderIfUnbound(db: Db, id: string): Promise<DeleteSenderResult> {
  if (id === DEFAULT_SENDER_ID) return 'in_use'
  try {
    const [row] = await db
      .delete(senders)
      .where(
        and(
          eq(senders.id, id),
          sql`not exists (select 1 from ${apiKeys} where ${apiKeys.senderId} = ${senders.id})`,
        ),
      )
      .returning({ id: senders.id })
    if (row) return 'deleted'
  } catch (error) {
    if (pgError(error).code === '23503') return 'in_use'
    throw error
  }
  const [exists] = await db.select({ id: senders.id }).from(senders).where(eq(senders.id, id))
  return exists ? 'in_use' : 'not_found'
}

/**
 * The platform raised a number's throughput: every sender on that number (by its display number,
 * or its phone number id when the change names one) goes to `ratePerSecond`, never down.
 * Returns the senders on the number and those whose rate changed.
 */
export async function raiseSenderRate(
  db: Db,
  number: { displayPhoneNumber?: string | undefined; phoneNumberId?: string | undefined },
  ratePerSecond: number,
  now: Date,
): Promise<{ matched: string[]; raised: string[] }> {
  const matches: SQL[] = []
  if (number.displayPhoneNumber) matches.push(eq(senders.displayPhoneNumber, number.displayPhoneNumber))
  if (number.phoneNumberId) matches.push(eq(senders.phoneNumberId, number.phoneNumberId))
  if (matches.length === 0) return { matched: [], raised: [] }
  const onNumber = or(...matches)
  const raised = await db
    .update(senders)
    .set({ ratePerSecond, updatedAt: now })
    .where(and(onNumber, lt(senders.ratePerSecond, ratePerSecond)))
    .returning({ id: senders.id })
  const matched = await db.select({ id: senders.id }).from(senders).where(onNumber)
  return { matched: matched.map((r) => r.id), raised: raised.map((r) => r.id) }
}

/**
 * Re-seals every stored token sealed under an older key with the box's current one (after a key
 * rotation). Each row is written only if its value is still the one read, so a token an admin
 * replaces meanwhile is left alone. Values no key of the box opens are counted, not changed.
 */
export async function resealSenderTokens(db: Db, box: SecretBox) {
  const rows = await db
    .select({ id: senders.id, sealed: senders.accessTokenCiphertext })
    .from(senders)
    .where(isNotNull(senders.accessTokenCiphertext))
  const result = { total: rows.length, resealed: 0, unreadable: [] as string[] }
  for (const { id, sealed } of rows) {
    if (sealed === null || !box.isStale(sealed)) continue
    let token: string
    try {
      token = box.open(sealed)
    } catch {
      result.unreadable.push(id)
      continue
    }
    const [updated] = await db
      .update(senders)
      .set({ accessTokenCiphertext: box.seal(token) })
      .where(and(eq(senders.id, id), eq(senders.accessTokenCiphertext, sealed)))
      .returning({ id: senders.id })
    if (updated) result.resealed++
  }
  return result
}
