import type { MessageError } from '@dispatch/contracts'
import { and, eq, lt, sql } from 'drizzle-orm'
import type { Db } from '../client.ts'
import { type MessageRow, messages } from '../schema/messages.ts'

export async function findMessageById(db: Db, id: string): Promise<MessageRow | undefined> {
  const [row] = await db.select().from(messages).where(eq(messages.id, id)).limit(1)
  return row
}

export type PlatformStatus = 'sent' | 'delivered' | 'read' | 'failed'

export interface PlatformStatusUpdate {
  platformMessageId: string
  status: PlatformStatus
  at: Date
  error?: MessageError
}

/**
 * Applies a status the platform reported, only forward: the enum is declared in order of progress,
 * so `status < new` refuses a late `delivered` after `read`. Returns whether a message moved.
 */
export async function applyPlatformStatus(db: Db, update: PlatformStatusUpdate): Promise<boolean> {
  const { status } = update
  const at = sql`${update.at.toISOString()}::timestamptz`
  const rows = await db
    .update(messages)
    .set({
      status,
      updatedAt: sql`now()`,
      ...(status === 'sent' ? { sentAt: sql`coalesce(${messages.sentAt}, ${at})` } : {}),
      ...(status === 'delivered' || status === 'read'
        ? { deliveredAt: sql`coalesce(${messages.deliveredAt}, ${at})` }
        : {}),
      ...(status === 'read' ? { readAt: update.at } : {}),
      ...(status === 'failed'
        ? {
            failedAt: at,
            lastErrorCode: update.error?.code ?? null,
            lastErrorMessage: update.error?.message ?? null,
          }
        : {}),
    })
    .where(and(eq(messages.platformMessageId, update.platformMessageId), lt(messages.status, status)))
    .returning({ id: messages.id })
  return rows.length > 0
}
