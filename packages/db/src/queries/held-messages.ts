import { sql } from 'drizzle-orm'
import type { Db } from '../client.ts'
import { writingToPeriods } from '../partitions.ts'
import { messages } from '../schema/messages.ts'
import type { DeliveryOutcome } from './message-deliveries.ts'

/** Why the worker holds a message `scheduled` at delivery. */
export type DeliveryHoldReason = 'messaging_limit'

/**
 * A message the worker holds at delivery: its outcome's fields, but no outcome yet; `sendAt` is when
 * the hold ends (for the messaging limit, when room frees as the worker saw it).
 */
export type HeldMessage = Omit<
  DeliveryOutcome,
  'status' | 'platformMessageId' | 'lastErrorCode' | 'lastErrorMessage' | 'fallbackUsed' | 'sendAt'
> & { scheduledReason: DeliveryHoldReason; sendAt: Date }

/**
 * Records messages the worker holds at delivery (its portfolio's messaging limit) as `scheduled`
 * with why, so Postgres (a campaign's counts, the message's view) knows them held, not pending.
 * Only on a hold, never on the way to the platform: the sent path's statement
 * (`recordDeliveryOutcomes`) is not touched. Forward only: a row already past `scheduled` (sent,
 * canceled, or `queued` by an admin's retry) is left as it is, so a hold written after a faster
 * outcome never moves it back; and every later outcome moves the status on from `scheduled`. A
 * scheduled row (the caller's `sendAt`, quiet hours) takes the hold's reason and time: it goes
 * then, not before.
 */
export async function recordHeldMessages(db: Db, held: HeldMessage[]): Promise<void> {
  if (held.length === 0) return
  await writingToPeriods(db.$client, () =>
    db
      .insert(messages)
      .values(
        held.map((m) => ({
          id: m.id,
          apiKeyId: m.apiKeyId,
          type: m.type,
          phone: m.phone,
          userId: m.userId,
          payload: m.payload,
          redactedAt: m.redacted ? m.at : null,
          redactAfter: m.redactAfter ?? null,
          clientReference: m.clientReference,
          senderPhoneNumberId: m.senderPhoneNumberId,
          senderId: m.senderId,
          batchId: m.batchId,
          status: 'scheduled' as const,
          attempts: m.attempts,
          acceptedAt: m.acceptedAt,
          sendAt: m.sendAt,
          heldForQuietHours: m.heldForQuietHours ?? false,
          scheduledReason: m.scheduledReason,
          expiresAt: m.expiresAt,
          updatedAt: m.at,
        })),
      )
      .onConflictDoUpdate({
        target: [messages.id, messages.acceptedAt],
        set: {
          scheduledReason: sql`excluded.scheduled_reason`,
          sendAt: sql`excluded.send_at`,
          senderPhoneNumberId: sql`coalesce(${messages.senderPhoneNumberId}, excluded.sender_phone_number_id)`,
          updatedAt: sql`greatest(${messages.updatedAt}, excluded.updated_at)`,
        },
        setWhere: sql`${messages.status} = 'scheduled'`,
      }),
  )
}
