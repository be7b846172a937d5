import {
  type ApiKeyAdminView,
  type ApiKeySelf,
  CANCEL_REASON_OF_CODE,
  contentRetentionOf,
  type InboundContent,
  type InboundMessageView,
  type MessageView,
  redactedField,
} from '@dispatch/contracts'
import type { ApiKeyRow, InboundMessageRow, MessageRow } from '@dispatch/db'

const keyFields = (row: ApiKeyRow) => ({
  id: row.id,
  clientName: row.clientName,
  keyPrefix: row.keyPrefix,
  scopes: row.scopes,
  tenantId: row.tenantId,
  status: row.status,
  environment: row.environment,
  createdAt: row.createdAt.toISOString(),
})

/** Today's count against the key's quota, read from Redis by the caller. */
export interface KeyUsage {
  today: number
  resetsAt: Date
}

export const toApiKeySelf = (row: ApiKeyRow, usage: KeyUsage, defaultRatePerSecond: number): ApiKeySelf => ({
  ...keyFields(row),
  limits: {
    senderId: row.senderId,
    ratePerSecond: row.ratePerSecond,
    dailyQuota: row.dailyQuota,
    transactional: row.transactional,
    quietHours: row.quietHours,
    contentRetention: contentRetentionOf(row.contentRetentionHours),
    effectiveRatePerSecond: row.ratePerSecond ?? defaultRatePerSecond,
  },
  usage: usageView(row, usage),
})

/** Today's usage against the key's quota. */
export const usageView = (row: ApiKeyRow, usage: KeyUsage): ApiKeySelf['usage'] => ({
  today: usage.today,
  remainingToday: row.dailyQuota === null ? null : Math.max(0, row.dailyQuota - usage.today),
  resetsAt: usage.resetsAt.toISOString(),
})

export const toApiKeyAdminView = (row: ApiKeyRow): ApiKeyAdminView => ({
  ...keyFields(row),
  senderId: row.senderId,
  senderPoolId: row.senderPoolId,
  ratePerSecond: row.ratePerSecond,
  dailyQuota: row.dailyQuota,
  transactional: row.transactional,
  quietHours: row.quietHours,
  contentRetention: contentRetentionOf(row.contentRetentionHours),
  requestedTenantId: row.requestedTenantId,
  email: row.email,
  statusReason: row.statusReason,
  decidedBy: row.decidedBy,
  decidedAt: row.decidedAt?.toISOString() ?? null,
  updatedAt: row.updatedAt.toISOString(),
})

export const toMessageView = (row: MessageRow): MessageView => ({
  messageId: row.id,
  type: row.type,
  phone: row.phone,
  userId: row.userId,
  status: row.status,
  attempts: row.attempts,
  clientReference: row.clientReference,
  platformMessageId: row.platformMessageId,
  lastError: row.lastErrorCode ? { code: row.lastErrorCode, message: row.lastErrorMessage ?? '' } : null,
  batchId: row.batchId,
  sendAt: row.sendAt?.toISOString() ?? null,
  // A hold at delivery (the messaging limit) is the latest reason; else quiet hours, else the caller's.
  scheduledReason:
    row.scheduledReason === 'messaging_limit'
      ? 'messaging_limit'
      : row.heldForQuietHours
        ? 'quiet_hours'
        : row.sendAt
          ? 'send_at'
          : null,
  expiresAt: row.expiresAt?.toISOString() ?? null,
  senderId: row.senderId,
  senderPhoneNumberId: row.senderPhoneNumberId,
  fallbackUsed: row.fallbackUsed,
  pricing:
    row.pricingModel === null && row.pricingCategory === null && row.pricingBillable === null
      ? null
      : {
          billable: row.pricingBillable,
          pricingModel: row.pricingModel,
          category: row.pricingCategory,
          type: row.pricingType,
        },
  ...redactedField(row.redactedAt),
  ...cancelReasonField(row),
  createdAt: row.acceptedAt.toISOString(),
  updatedAt: row.updatedAt.toISOString(),
})

/** Why the service canceled a message, read from the code it was recorded with (absent: no such reason). */
const cancelReasonField = (row: Pick<MessageRow, 'status' | 'lastErrorCode'>) => {
  const reason =
    row.status === 'canceled' && row.lastErrorCode ? CANCEL_REASON_OF_CODE[row.lastErrorCode] : undefined
  return reason ? { cancelReason: reason } : {}
}

export const toInboundMessageView = (row: InboundMessageRow): InboundMessageView => ({
  id: row.id,
  platformMessageId: row.platformMessageId,
  phoneNumberId: row.phoneNumberId,
  phone: row.phone,
  userId: row.userId,
  username: row.username,
  type: row.type,
  content: row.content as InboundContent,
  ...redactedField(row.redactedAt),
  apiKeyId: row.apiKeyId,
  inReplyTo: row.inReplyTo,
  receivedAt: row.receivedAt.toISOString(),
  createdAt: row.createdAt.toISOString(),
})
