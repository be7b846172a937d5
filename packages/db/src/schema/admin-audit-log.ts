import { bigserial, index, jsonb, pgTable, text, timestamp } from 'drizzle-orm/pg-core'

/**
 * What admins did outside a key's own history: a failed message retried, a queue paused or resumed.
 * One row per action and target (a bulk retry writes one per message), with the admin token's name
 * as `actor`; `details` holds what the action changed (the message's status, attempts and error
 * before it went out again; a switch's reason).
 */
export const adminAuditLog = pgTable(
  'admin_audit_log',
  {
    id: bigserial({ mode: 'number' }).primaryKey(),
    actor: text().notNull(),
    /** `message.retry`, `queue.pause`, `queue.resume`. */
    action: text().notNull(),
    /** `message` or `queue`. */
    targetType: text().notNull(),
    /** The message id, or the queue's switch name (`messages`, `messages.<senderId>`, `email`, `webhooks`). */
    targetId: text().notNull(),
    details: jsonb().$type<Record<string, unknown>>().notNull().default({}),
    createdAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index('admin_audit_log_target_idx').on(t.targetType, t.targetId, t.id)],
)

export type AdminAuditRow = typeof adminAuditLog.$inferSelect
