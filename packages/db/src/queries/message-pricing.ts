import type { MessagePricing } from '@dispatch/contracts'
import { and, eq, isNull } from 'drizzle-orm'
import type { Db } from '../client.ts'
import { messages } from '../schema/messages.ts'

/**
 * Stores what the platform said a message costs, the first time a status carries it (`sent` usually
 * does, `delivered` repeats it): answers the message's sender when this was the first, so it is
 * counted once, and undefined otherwise (already priced, or no such message).
 */
export async function recordMessagePricing(
  db: Db,
  platformMessageId: string,
  pricing: MessagePricing,
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
        eq(messages.platformMessageId, platformMessageId),
        isNull(messages.pricingModel),
        isNull(messages.pricingCategory),
        isNull(messages.pricingBillable),
      ),
    )
    .returning({ senderId: messages.senderId })
  return row
}
