import { eq } from 'drizzle-orm'
import type { Db } from '../client.ts'
import { emailDeliveries } from '../schema/email-deliveries.ts'

export type EmailDeliveryRow = typeof emailDeliveries.$inferSelect
export type EmailDeliveryRecord = Omit<EmailDeliveryRow, 'updatedAt'>

/** Records the latest outcome of an e-mail (one row per outbox entry, updated on each attempt). */
export async function recordEmailDelivery(db: Db, record: EmailDeliveryRecord): Promise<void> {
  const now = new Date()
  await db
    .insert(emailDeliveries)
    .values({ ...record, updatedAt: now })
    .onConflictDoUpdate({ target: emailDeliveries.outboxId, set: { ...record, updatedAt: now } })
}

export async function findEmailDelivery(db: Db, outboxId: number): Promise<EmailDeliveryRow | undefined> {
  const [row] = await db.select().from(emailDeliveries).where(eq(emailDeliveries.outboxId, outboxId))
  return row
}
