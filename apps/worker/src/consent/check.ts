import { type SuppressionScope, suppressionKey } from '@dispatch/contracts'
import type { RedisClient } from '@dispatch/contracts/redis'

/** The code and text a message ends `canceled` with when its recipient opted out before it went. */
export const OPTED_OUT_CODE = 'RECIPIENT_OPTED_OUT'
export const optedOutFields = {
  lastErrorCode: OPTED_OUT_CODE,
  lastErrorMessage: 'Not sent: the recipient opted out of messages from this sender after it was accepted',
}

/**
 * The recipient's opt-out of this business number as the Redis copy has it, read beside the
 * message's claim (no round trip more on the job's way). Unreadable or absent: none known.
 */
export async function optOutAtDelivery(
  redis: RedisClient,
  prefix: string,
  phoneNumberId: string,
  recipient: string,
): Promise<SuppressionScope | null> {
  try {
    return (await redis.get(suppressionKey(prefix, phoneNumberId, recipient))) as SuppressionScope | null
  } catch {
    return null
  }
}
