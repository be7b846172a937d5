import type { Db } from '../client.ts'
import { adminAuditLog } from '../schema/admin-audit-log.ts'

/** One admin action on its own (actions that change a row record theirs in that row's transaction). */
export async function recordAdminAction(
  db: Db,
  entry: {
    actor: string
    action: string
    targetType: string
    targetId: string
    details?: Record<string, unknown>
  },
): Promise<void> {
  await db.insert(adminAuditLog).values({ ...entry, details: entry.details ?? {} })
}
