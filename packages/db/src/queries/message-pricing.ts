import type { MessagePricing } from '@dispatch/contracts'
import { and, isNull, type SQL } from 'drizzle-orm'
import type { Db } from '../client.ts'
import { messages } from '../schema/messages.ts'
import { messageWithPlatformId, platformIdIs } from './message-ids.ts'
import { type MessagesTable, onPartitionOf } from './message-partitions.ts'

/**
 * Stores what the platform said a message costs, the first time a status carries it (`sent` usually
 * does, `delivered` repeats it): answers the message's sender when this was the first, so it is
 * counted once, and undefined otherwise (already priced, or no such message).
 */
export async function recordMessagePricing(
  db: Db,
  platformMessageId: string,
  pricing: MessagePricing,
  /** Our id for it, as the status echoed it: narrows the search to its day (`messageWithPlatformId`). */
  messageId?: string,
): Promise<{ senderId: string | null } | undefined> {
  const record = (t: MessagesTable, found: SQL) =>
    db
      .update(t)
      .set({
        pricingBillable: pricing.billable,
        pricingModel: pricing.pricingModel,
        pricingCategory: pricing.category,
        pricingType: pricing.type,
      })
      .where(and(found, isNull(t.pricingModel), isNull(t.pricingCategory), isNull(t.pricingBillable)))
      .returning({ senderId: t.senderId })
  const [row] = await onPartitionOf(
    db,
    messageId,
    (day) => record(day, platformIdIs(day, platformMessageId)),
    () => record(messages, messageWithPlatformId(platformMessageId, messageId)),
  )
  return row
}
