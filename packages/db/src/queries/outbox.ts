import { asc, inArray, isNull, sql } from 'drizzle-orm'
import type { Db } from '../client.ts'
import { outbox } from '../schema/outbox.ts'

export type OutboxRow = typeof outbox.$inferSelect

/**
 * Hands up to `limit` undispatched outbox rows to `publish`, and marks them dispatched only if it
 * resolves, all in one transaction. Rows are locked with SKIP LOCKED, so several relays can run
 * side by side without sending a row twice; a failed publish rolls back and the rows stay pending.
 * Returns how many rows were dispatched.
 */
export async function relayOutbox(
  db: Db,
  limit: number,
  publish: (rows: OutboxRow[]) => Promise<void>,
): Promise<number> {
  return db.transaction(async (tx) => {
    const rows = await tx
      .select()
      .from(outbox)
      .where(isNull(outbox.dispatchedAt))
      .orderBy(asc(outbox.id))
      .limit(limit)
      .for('update', { skipLocked: true })
    if (rows.length === 0) return 0
    await publish(rows)
    await tx
      .update(outbox)
      .set({ dispatchedAt: new Date() })
      .where(
        inArray(
          outbox.id,
          rows.map((r) => r.id),
        ),
      )
    return rows.length
  })
}

/**
 * How long, in seconds by Postgres' clock, the oldest row still waiting for the relay has waited;
 * 0 when none waits. The lowest pending id is the first entry of `outbox_pending_idx`: one index
 * probe, however long the table (metrics read it at every scrape).
 */
export async function pendingOutboxAgeSeconds(db: Db): Promise<number> {
  const [row] = await db
    .select({ age: sql<number>`extract(epoch from now() - ${outbox.createdAt})::float8` })
    .from(outbox)
    .where(isNull(outbox.dispatchedAt))
    .orderBy(asc(outbox.id))
    .limit(1)
  return row ? Math.max(0, Number(row.age)) : 0
}
