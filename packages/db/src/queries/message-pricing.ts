import type { MessagePricing } from '@dispatch/contracts'
import { and, isNull } from 'drizzle-orm'
import type { Db } from '../client.ts'
import { messages } from '../schema/messages.ts'
import { messageWithPlatformId } from './message-ids.ts'

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
  const [row] = await db
    .update(messages)
    .set({
      pricingBillable: pricing.billable,
      pricingModel: pricing.pricingModel,
      pricingCategory: pricing.category,
      pricingType: pricing.type,
    })
    .where(
      and(
        messageWithPlatformId(platformMessageId, messageId),
        isNull(messages.pricingModel),
        isNull(messages.pricingCategory),
        isNull(messages.pricingBillable),
      ),
    )
    .returning({ senderId: messages.senderId })
  return row
}
