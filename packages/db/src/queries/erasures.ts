import { type ErasurePayload, type ErasureReport, QueueNames } from '@dispatch/contracts'
import { and, eq, sql } from 'drizzle-orm'
import type { Db } from '../client.ts'
import { adminAuditLog } from '../schema/admin-audit-log.ts'
import { type ErasureRow, erasures } from '../schema/erasures.ts'
import { OUTBOX_NOTIFY_CHANNEL, outbox } from '../schema/outbox.ts'

export interface NewErasure {
  /** Null: every key's data (an admin's). */
  apiKeyId: string | null
  subjectHash: string
  requestedBy: string
  /** Who to erase, in plain: written to the outbox row only, and stripped from it when the job ends. */
  recipient: { phone?: string | undefined; userId?: string | undefined }
}

/**
 * Records an erasure in one transaction: its row (naming the recipient by hash), the audit entry
 * (the actor and the hash, never the recipient) and the outbox row that becomes its job. So an
 * erasure answered 202 always runs, and one that rolled back never does.
 */
export async function createErasure(db: Db, entry: NewErasure, at: Date): Promise<ErasureRow> {
  return db.transaction(async (tx) => {
    const [row] = await tx
      .insert(erasures)
      .values({
        apiKeyId: entry.apiKeyId,
        subjectHash: entry.subjectHash,
        requestedBy: entry.requestedBy,
        createdAt: at,
      })
      .returning()
    const erasure = row as ErasureRow
    await tx.insert(adminAuditLog).values({
      actor: entry.requestedBy,
      action: 'erasure.request',
      targetType: 'erasure',
      targetId: erasure.id,
      details: { subjectHash: entry.subjectHash, scope: entry.apiKeyId ? 'key' : 'all' },
      createdAt: at,
    })
    const payload: ErasurePayload = { erasureId: erasure.id, ...entry.recipient }
    await tx.insert(outbox).values({ topic: QueueNames.erasures, payload, createdAt: at })
    await tx.execute(sql`select pg_notify(${OUTBOX_NOTIFY_CHANNEL}, '')`)
    return erasure
  })
}

/** One erasure, by id; within a key's own when `apiKeyId` is given (another key's is not found). */
export async function findErasure(db: Db, id: string, apiKeyId?: string): Promise<ErasureRow | undefined> {
  const [row] = await db
    .select()
    .from(erasures)
    .where(and(eq(erasures.id, id), apiKeyId === undefined ? undefined : eq(erasures.apiKeyId, apiKeyId)))
  return row
}

/** Marks an erasure running (again, on a retry of its job); answers it, or undefined when unknown. */
export async function startErasure(db: Db, id: string, at: Date): Promise<ErasureRow | undefined> {
  const [row] = await db
    .update(erasures)
    .set({
      status: 'running',
      startedAt: sql`coalesce(${erasures.startedAt}, ${at.toISOString()}::timestamptz)`,
    })
    .where(eq(erasures.id, id))
    .returning()
  return row
}

/**
 * Ends an erasure (`completed` with its report, or `failed` with its error), and strips the
 * recipient from the outbox row its job came from, in one transaction: once an erasure has ended,
 * Postgres holds the recipient nowhere on its account.
 */
export async function endErasure(
  db: Db,
  id: string,
  outboxId: string,
  end: { report: ErasureReport } | { error: string },
  at: Date,
): Promise<void> {
  await db.transaction(async (tx) => {
    await tx
      .update(erasures)
      .set(
        'report' in end
          ? { status: 'completed', report: end.report, error: null, completedAt: at }
          : { status: 'failed', error: end.error, completedAt: at },
      )
      .where(eq(erasures.id, id))
    await tx
      .update(outbox)
      .set({ payload: { erasureId: id } })
      .where(and(eq(outbox.id, Number(outboxId)), eq(outbox.topic, QueueNames.erasures)))
  })
}
