import { DEFAULT_SENDER_ID, type SenderState } from '@dispatch/contracts'
import { and, eq, ne, sql } from 'drizzle-orm'
import type { Db } from '../client.ts'
import { OUTBOX_NOTIFY_CHANNEL, outbox } from '../schema/outbox.ts'
import { type SenderRow, senders } from '../schema/senders.ts'

/** Every sender, for the workers' registry (a few dozen to a few hundred rows). */
export const listAllSenders = (db: Db): Promise<SenderRow[]> => db.select().from(senders)

export async function findSender(db: Db, id: string): Promise<SenderRow | undefined> {
  const [row] = await db.select().from(senders).where(eq(senders.id, id))
  return row
}

/**
 * Writes the environment's sender as the row `default` (a worker does at start): its number, name
 * and rate follow the environment. A restart is how its token is fixed, so a `needs_attention`
 * default sender becomes `active` again; an admin's `paused` stays.
 */
export async function upsertDefaultSender(
  db: Db,
  sender: {
    phoneNumberId: string
    displayName: string
    ratePerSecond: number
    accessTokenLast4: string | null
  },
): Promise<void> {
  await db
    .insert(senders)
    .values({ id: DEFAULT_SENDER_ID, ...sender })
    .onConflictDoUpdate({
      target: senders.id,
      set: {
        ...sender,
        state: sql`case when ${senders.state} = 'needs_attention' then 'active'::sender_state else ${senders.state} end`,
        stateReason: sql`case when ${senders.state} = 'needs_attention' then null else ${senders.stateReason} end`,
        updatedAt: new Date(),
      },
    })
}

/**
 * Puts a sender in `needs_attention` (its token was refused) and, on the change only, queues the
 * admins' alert e-mail through the outbox in the same transaction. Returns whether it changed.
 */
export async function markSenderNeedsAttention(
  db: Db,
  id: string,
  problem: { code: string; reason: string; alertTo: string | undefined; now: Date },
): Promise<boolean> {
  return db.transaction(async (tx) => {
    const [row] = await tx
      .update(senders)
      .set({
        state: 'needs_attention' satisfies SenderState,
        stateReason: `${problem.code}: ${problem.reason}`.slice(0, 1000),
        updatedAt: problem.now,
      })
      .where(and(eq(senders.id, id), ne(senders.state, 'needs_attention')))
      .returning()
    if (!row) return false
    if (problem.alertTo) {
      await tx.insert(outbox).values({
        topic: 'email',
        payload: {
          to: problem.alertTo,
          template: 'sender.needs-attention',
          data: {
            senderId: row.id,
            displayName: row.displayName,
            phoneNumberId: row.phoneNumberId,
            code: problem.code,
            reason: problem.reason,
          },
        },
        createdAt: problem.now,
      })
      await tx.execute(sql`select pg_notify(${OUTBOX_NOTIFY_CHANNEL}, '')`)
    }
    return true
  })
}

/** The sender whose business number this is (`phone_number_id`), if an admin added one. */
export async function findSenderByPhoneNumberId(
  db: Db,
  phoneNumberId: string,
): Promise<SenderRow | undefined> {
  const [row] = await db.select().from(senders).where(eq(senders.phoneNumberId, phoneNumberId)).limit(1)
  return row
}
