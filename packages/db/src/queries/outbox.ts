import { asc, isNull, sql } from 'drizzle-orm'
import type { Db } from '../client.ts'
import { outbox } from '../schema/outbox.ts'

export type OutboxRow = typeof outbox.$inferSelect

/**
 * Hands up to `limit` undispatched outbox rows to `publish`, and marks them dispatched only if it
 * resolves, all in one transaction. Rows are locked with SKIP LOCKED, so several relays can run
 * side by side without sending a row twice; a failed publish rolls back and the rows stay pending.
 * Returns how many rows were dispatched.
 *
 * Both statements are prepared (postgres.js keeps them per connection): drizzle never prepares
 * its queries, so each would first wait for a describe, two more round trips on the path of every
 * e-mail and webhook event.
 */
export async function relayOutbox(
  db: Db,
  limit: number,
  publish: (rows: OutboxRow[]) => Promise<void>,
): Promise<number> {
  return db.$client.begin(async (sql) => {
    const found = await sql<
      Array<Omit<OutboxRow, 'id' | 'createdAt' | 'dispatchedAt'> & { id: string; createdAt: string }>
    >`
      select id, job_id as "jobId", topic, payload, created_at as "createdAt"
      from outbox where dispatched_at is null order by id limit ${limit} for update skip locked`
    if (found.length === 0) return 0
    // As the table's schema reads them: its bigserial as a number, its timestamps as dates.
    const rows = found.map((r) => ({
      ...r,
      id: Number(r.id),
      createdAt: new Date(r.createdAt),
      dispatchedAt: null,
    }))
    await publish(rows)
    await sql`update outbox set dispatched_at = clock_timestamp() where id = any(${`{${found.map((r) => r.id).join(',')}}`}::bigint[])`
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
