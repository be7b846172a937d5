import Type, { type Static } from 'typebox'

/**
 * Why a message ended `canceled` when the service, not its key, canceled it (the view's
 * `cancelReason`; null for a key's own cancel). More come with campaigns and messaging limits.
 */
export const CANCEL_REASONS = ['key_revoked'] as const
export type CancelReason = (typeof CANCEL_REASONS)[number]

/** The last error code a message canceled by its key's revocation is recorded with. */
export const KEY_REVOKED_CODE = 'KEY_REVOKED'
export const KEY_REVOKED_MESSAGE = 'Not sent: its API key was revoked before it went'

/** The record's last error code that says why the service canceled a message. */
export const CANCEL_REASON_OF_CODE: Record<string, CancelReason> = { [KEY_REVOKED_CODE]: 'key_revoked' }

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
