import type {
  ApiKeyAdminView,
  ApiKeySelf,
  InboundContent,
  InboundMessageView,
  MessageView,
} from '@dispatch/contracts'
import type { ApiKeyRow, InboundMessageRow, MessageRow } from '@dispatch/db'

export const toApiKeySelf = (row: ApiKeyRow): ApiKeySelf => ({
  id: row.id,
  clientName: row.clientName,
  keyPrefix: row.keyPrefix,
  scopes: row.scopes,
  tenantId: row.tenantId,
  status: row.status,
  environment: row.environment,
  createdAt: row.createdAt.toISOString(),
})

export const toApiKeyAdminView = (row: ApiKeyRow): ApiKeyAdminView => ({
  ...toApiKeySelf(row),
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
  status: row.status,
  attempts: row.attempts,
  clientReference: row.clientReference,
  platformMessageId: row.platformMessageId,
  lastError: row.lastErrorCode ? { code: row.lastErrorCode, message: row.lastErrorMessage ?? '' } : null,
  batchId: row.batchId,
  sendAt: row.sendAt?.toISOString() ?? null,
  expiresAt: row.expiresAt?.toISOString() ?? null,
  createdAt: row.acceptedAt.toISOString(),
  updatedAt: row.updatedAt.toISOString(),
})

export const toInboundMessageView = (row: InboundMessageRow): InboundMessageView => ({
  id: row.id,
  platformMessageId: row.platformMessageId,
  phoneNumberId: row.phoneNumberId,
  phone: row.phone,
  type: row.type,
  content: row.content as InboundContent,
  apiKeyId: row.apiKeyId,
  inReplyTo: row.inReplyTo,
  receivedAt: row.receivedAt.toISOString(),
  createdAt: row.createdAt.toISOString(),
})
