import type { TemplateView } from '@dispatch/contracts'
import type { MessageTemplateRow } from '@dispatch/db'

/** A catalog row as senders and admins read it: Meta's id as `id`. */
export const toTemplateView = (row: MessageTemplateRow): TemplateView => ({
  id: row.platformTemplateId,
  name: row.name,
  language: row.language,
  status: row.status,
  rejectedReason: row.rejectedReason,
  category: row.category,
  quality: row.quality,
  components: row.components as unknown[],
  variables: row.variables,
  senderId: row.senderId,
  syncedAt: row.syncedAt.toISOString(),
  updatedAt: row.updatedAt.toISOString(),
})
