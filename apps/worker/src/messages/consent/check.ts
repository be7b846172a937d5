import type { SuppressionScope } from '@dispatch/contracts'
import { addSuppression, type Db } from '@dispatch/db'
import { copyOptOut, type RecipientHasher } from '@dispatch/runtime'
import type { RedisClient } from '@dispatch/runtime/redis'

/** The code and text a message ends `canceled` with when its recipient opted out before it went. */
export const OPTED_OUT_CODE = 'RECIPIENT_OPTED_OUT'
export const optedOutFields = (scope: SuppressionScope) => ({
  lastErrorCode: OPTED_OUT_CODE,
  lastErrorMessage: `Not sent: the recipient opted out of ${scope === 'all' ? 'messages' : 'marketing messages'} from this sender after it was accepted`,
})

/** Meta's answer to a marketing message for a user who stopped marketing messages from the business. */
export const MARKETING_STOPPED_CODE = '131050'

/**
 * A `131050` failure says the user stopped this number's marketing messages: recorded as an opt-out
 * of marketing (source `131050`), so the next marketing template is refused at the door instead of
 * at the platform. Best effort: the failure itself is already recorded.
 */
export async function recordMarketingStop(
  db: Db,
  redis: RedisClient,
  prefix: string,
  hash: RecipientHasher,
  entry: { phoneNumberId: string; senderId: string; recipient: string },
): Promise<void> {
  const { row } = await addSuppression(db, {
    ...entry,
    scope: 'marketing',
    source: '131050',
    reason: 'The platform answered 131050: the user stopped marketing messages',
    createdBy: 'platform',
  })
  // Announced to every worker, whose deliveries then read this recipient's entry (consent/watch.ts).
  await copyOptOut(redis, prefix, {
    phoneNumberId: row.phoneNumberId,
    recipientHash: hash(row.recipient),
    scope: row.scope,
  })
}
