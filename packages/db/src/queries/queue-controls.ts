import { eq } from 'drizzle-orm'
import type { Db } from '../client.ts'
import { adminAuditLog } from '../schema/admin-audit-log.ts'
import { type QueueControlRow, queueControls } from '../schema/queue-controls.ts'

/** Every switch ever used (a handful of rows): the workers read them with the senders. */
export const listQueueControls = (db: Db): Promise<QueueControlRow[]> => db.select().from(queueControls)

/**
 * Turns a switch on (`paused`) or off, with its audit row, in one transaction. A switch already in
 * that position changes nothing and records nothing (`changed: false`).
 */
export async function setQueueControl(
  db: Db,
  change: { name: string; paused: boolean; actor: string; reason: string | null; now: Date },
): Promise<{ changed: boolean; row: QueueControlRow }> {
  return db.transaction(async (tx) => {
    const [current] = await tx
      .select()
      .from(queueControls)
      .where(eq(queueControls.name, change.name))
      .for('update')
    if (current ? current.paused === change.paused : !change.paused) {
      return {
        changed: false,
        row: current ?? {
          name: change.name,
          paused: false,
          actor: change.actor,
          reason: null,
          updatedAt: change.now,
        },
      }
    }
    const values = {
      name: change.name,
      paused: change.paused,
      actor: change.actor,
      reason: change.reason,
      updatedAt: change.now,
    }
    // Two admins switching a new name at once: the insert's conflict makes the second an update.
    const [row] = await tx
      .insert(queueControls)
      .values(values)
      .onConflictDoUpdate({ target: queueControls.name, set: values })
      .returning()
    await tx.insert(adminAuditLog).values({
      actor: change.actor,
      action: change.paused ? 'queue.pause' : 'queue.resume',
      targetType: 'queue',
      targetId: change.name,
      details: { reason: change.reason },
      createdAt: change.now,
    })
    return { changed: true, row: row as QueueControlRow }
  })
}
