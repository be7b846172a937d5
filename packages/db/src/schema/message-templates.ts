import type { TemplateVariables } from '@dispatch/contracts'
import { index, jsonb, pgTable, text, timestamp, uniqueIndex, uuid } from 'drizzle-orm/pg-core'
import { senders } from './senders.ts'

/**
 * Each sender's WhatsApp templates, synced from its WhatsApp Business Account and kept current by
 * Meta's template webhooks. A send is checked against them (in memory, never here on the hot path).
 */
export const messageTemplates = pgTable(
  'message_templates',
  {
    id: uuid().primaryKey().defaultRandom(),
    senderId: text()
      .notNull()
      .references(() => senders.id, { onDelete: 'cascade' }),
    /** Meta's template id (`message_template_id` in its webhooks). */
    platformTemplateId: text().notNull(),
    name: text().notNull(),
    language: text().notNull(),
    status: text().notNull(),
    /** Meta's reason for a rejection (or a pause, a disablement); null otherwise. */
    rejectedReason: text(),
    category: text(),
    quality: text(),
    /** `POSITIONAL` or `NAMED`, as Meta gives it. */
    parameterFormat: text().notNull().default('POSITIONAL'),
    /** The components exactly as the Cloud API gives them. */
    components: jsonb().notNull(),
    /** What a send must fill, read from the components (`templateVariables`). */
    variables: jsonb().$type<TemplateVariables>().notNull(),
    syncedAt: timestamp({ withTimezone: true }).notNull(),
    createdAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('message_templates_sender_name_language_idx').on(t.senderId, t.name, t.language),
    uniqueIndex('message_templates_sender_platform_id_idx').on(t.senderId, t.platformTemplateId),
    index('message_templates_platform_id_idx').on(t.platformTemplateId),
  ],
)

export type MessageTemplateRow = typeof messageTemplates.$inferSelect
