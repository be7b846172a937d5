import type { ApiKeyAdminView, ApiKeySelf } from '@dispatch/contracts'
import type { ApiKeyRow } from '@dispatch/db'

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
  email: row.email,
  statusReason: row.statusReason,
  decidedBy: row.decidedBy,
  decidedAt: row.decidedAt?.toISOString() ?? null,
  updatedAt: row.updatedAt.toISOString(),
})
