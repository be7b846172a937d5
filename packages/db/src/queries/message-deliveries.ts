import { eq, sql } from 'drizzle-orm'
import type { Db } from '../client.ts'
import { messages } from '../schema/messages.ts'

/** What one delivery attempt leaves behind, written by the worker before the job is acknowledged. */
export interface DeliveryOutcome {
  id: string
  apiKeyId: string
  type: 'text' | 'template' | 'image'
  phone: string
  payload: unknown
  acceptedAt: Date
  status: 'sending' | 'sent' | 'failed'
  attempts: number
  platformMessageId: string | null
  lastErrorCode: string | null
  lastErrorMessage: string | null
  at: Date
}

/** The platform id already recorded for a message, if any: a job run again must not resend it. */
export async function findPlatformMessageId(db: Db, id: string): Promise<string | null> {
  const [row] = await db
    .select({ platformMessageId: messages.platformMessageId })
    .from(messages)
    .where(eq(messages.id, id))
    .limit(1)
  return row?.platformMessageId ?? null
}

const excluded = (column: string) => sql.raw(`excluded.${column}`)

/**
 * Writes many outcomes in one statement. The first outcome of a message inserts its row; later
 * ones update it, only forward: the status never moves back (a webhook may already have said
 * `delivered`), attempts never decrease, and a recorded platform id is never replaced.
 */
export async function recordDeliveryOutcomes(db: Db, outcomes: DeliveryOutcome[]): Promise<void> {
  if (outcomes.length === 0) return
  await db
    .insert(messages)
    .values(
      outcomes.map((o) => ({
        id: o.id,
        apiKeyId: o.apiKeyId,
        type: o.type,
        phone: o.phone,
        payload: o.payload,
        status: o.status,
        attempts: o.attempts,
        platformMessageId: o.platformMessageId,
        lastErrorCode: o.lastErrorCode,
        lastErrorMessage: o.lastErrorMessage,
        acceptedAt: o.acceptedAt,
        sentAt: o.status === 'sent' ? o.at : null,
        failedAt: o.status === 'failed' ? o.at : null,
        updatedAt: o.at,
      })),
    )
    .onConflictDoUpdate({
      target: messages.id,
      set: {
        status: sql`greatest(${messages.status}, ${excluded('status')})`,
        attempts: sql`greatest(${messages.attempts}, ${excluded('attempts')})`,
        platformMessageId: sql`coalesce(${messages.platformMessageId}, ${excluded('platform_message_id')})`,
        lastErrorCode: sql`coalesce(${excluded('last_error_code')}, ${messages.lastErrorCode})`,
        lastErrorMessage: sql`coalesce(${excluded('last_error_message')}, ${messages.lastErrorMessage})`,
        sentAt: sql`coalesce(${messages.sentAt}, ${excluded('sent_at')})`,
        failedAt: sql`coalesce(${messages.failedAt}, ${excluded('failed_at')})`,
        updatedAt: sql`greatest(${messages.updatedAt}, ${excluded('updated_at')})`,
      },
    })
}
