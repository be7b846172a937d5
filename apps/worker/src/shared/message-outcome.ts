import {
  CAMPAIGN_CANCELED_CODE,
  CAMPAIGN_CANCELED_MESSAGE,
  KEY_REVOKED_CODE,
  KEY_REVOKED_MESSAGE,
  type MessageJob,
  redactAfter,
  redactPayload,
} from '@dispatch/contracts'
import type { DeliveryOutcome } from '@dispatch/db'
import type { MessagingPlatform } from '../platforms/types.ts'

/**
 * A message's outcome as the recorder takes it: what the job says of the message, through the
 * sender's number, with `attempts` in all (the earlier ones of an admin's retry included). Written
 * by delivery (messages/) and by the sweeps of a revoked key and a canceled campaign (lifecycle/).
 */
export function deliveryOutcome(
  data: MessageJob,
  lane: { senderId: string; platform: Pick<MessagingPlatform, 'phoneNumberId'> },
  status: DeliveryOutcome['status'],
  fields: Partial<DeliveryOutcome> & { attempts: number },
): DeliveryOutcome {
  const {
    messageId,
    apiKeyId,
    acceptedAt,
    clientReference,
    message,
    batchId,
    sendAt,
    expiresAt,
    scheduledReason,
  } = data
  return {
    id: messageId,
    apiKeyId,
    type: message.type,
    phone: message.body.phone ?? null,
    userId: message.body.userId ?? null,
    // A `discard` message's record never holds its content: only this job (in Redis) does.
    payload: data.discardContent ? redactPayload(message.type, message.body) : message.body,
    ...(data.discardContent ? { redacted: true } : {}),
    redactAfter: redactAfter(acceptedAt, data.contentRetentionHours),
    clientReference: clientReference ?? null,
    senderPhoneNumberId: lane.platform.phoneNumberId,
    senderId: lane.senderId,
    batchId: batchId ?? null,
    acceptedAt: new Date(acceptedAt),
    // A hold for the messaging limit is not the caller's time: the record keeps none (its view would
    // call it `send_at`); the job and its log said `scheduled`, `messaging_limit` while it waited.
    sendAt: sendAt && scheduledReason !== 'messaging_limit' ? new Date(sendAt) : null,
    heldForQuietHours: scheduledReason === 'quiet_hours',
    expiresAt: expiresAt ? new Date(expiresAt) : null,
    status,
    platformMessageId: null,
    lastErrorCode: null,
    lastErrorMessage: null,
    at: new Date(),
    ...fields,
  }
}

/**
 * The SMS a `sent` record keeps for a 131026 reported later (docs/fallback.md, "The timer"): the
 * text of a fallback without `afterSeconds`, to a number, whose content may reach Postgres. Such a
 * message needs no hold in Redis. Undefined otherwise (a timer, a BSUID alone, `discardContent`:
 * its hold stays in Redis).
 */
export function smsKeptWithRecord(data: MessageJob): string | undefined {
  const { fallback } = data
  if (fallback === undefined || fallback.afterSeconds !== undefined || data.discardContent) return undefined
  return data.message.body.phone === undefined ? undefined : fallback.sms.text
}

/** The fields of an expiry: never handed to the platform before its validity ended. */
export const expiredFields = (expiresAt: string | undefined) => ({
  lastErrorCode: 'MESSAGE_EXPIRED',
  lastErrorMessage: `Not handed to the platform before ${expiresAt}`,
})

/** The fields of a message canceled because its key was revoked (the view's `cancelReason: key_revoked`). */
export const keyRevokedFields = { lastErrorCode: KEY_REVOKED_CODE, lastErrorMessage: KEY_REVOKED_MESSAGE }

/** The fields of a message canceled with its campaign (the view's `cancelReason: campaign_canceled`). */
export const campaignCanceledFields = {
  lastErrorCode: CAMPAIGN_CANCELED_CODE,
  lastErrorMessage: CAMPAIGN_CANCELED_MESSAGE,
}
