import Type, { type Static } from 'typebox'

/**
 * Why a message ended `canceled` when the service, not its key, canceled it (the view's
 * `cancelReason`; null for a key's own cancel). More come with campaigns and messaging limits.
 */
export const CANCEL_REASONS = ['key_revoked', 'campaign_canceled'] as const
export type CancelReason = (typeof CANCEL_REASONS)[number]

/** The last error code a message canceled by its key's revocation is recorded with. */
export const KEY_REVOKED_CODE = 'KEY_REVOKED'
export const KEY_REVOKED_MESSAGE = 'Not sent: its API key was revoked before it went'

/** The last error code a message canceled with its campaign is recorded with. */
export const CAMPAIGN_CANCELED_CODE = 'CAMPAIGN_CANCELED'
export const CAMPAIGN_CANCELED_MESSAGE = 'Not sent: its campaign was canceled before it went'

/** The record's last error code that says why the service canceled a message. */
export const CANCEL_REASON_OF_CODE: Record<string, CancelReason> = {
  [KEY_REVOKED_CODE]: 'key_revoked',
  [CAMPAIGN_CANCELED_CODE]: 'campaign_canceled',
}

/**
 * A revoked key's sweep (queue `key-revocations`): written to the outbox in the revocation's own
 * transaction, relayed, and run by a `lifecycle` worker, which cancels every queued and scheduled
 * message of the key still in Redis. Safe to run twice.
 */
export const KeyRevocationJob = Type.Object(
  {
    outboxId: Type.String({ pattern: '^[0-9]+$' }),
    apiKeyId: Type.String({ format: 'uuid' }),
  },
  { additionalProperties: false },
)
export type KeyRevocationJob = Static<typeof KeyRevocationJob>
export type KeyRevocationPayload = Omit<KeyRevocationJob, 'outboxId'>

/**
 * A canceled campaign's sweep (queue `campaign-cancels`): written to the outbox in the cancel's own
 * transaction, relayed, and run by a `lifecycle` worker, which cancels every queued and scheduled
 * message of the campaign (its `batchId`) still in Redis. Safe to run twice.
 */
export const CampaignCancelJob = Type.Object(
  {
    outboxId: Type.String({ pattern: '^[0-9]+$' }),
    campaignId: Type.String({ format: 'uuid' }),
  },
  { additionalProperties: false },
)
export type CampaignCancelJob = Static<typeof CampaignCancelJob>
export type CampaignCancelPayload = Omit<CampaignCancelJob, 'outboxId'>

/**
 * Redis pub/sub channel (under the queue prefix) on which a canceled campaign's id is announced (by
 * its sweep), so every messages worker cancels its messages it takes from then on.
 */
export const CAMPAIGN_CANCELS_CHANNEL = 'campaigns:canceled'
