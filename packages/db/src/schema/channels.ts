import type { WorkflowValue } from '@dispatch/contracts'
import { boolean, index, jsonb, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core'
import { timeline } from './catalog-enums.ts'

export const EMPTY_WORKFLOW: WorkflowValue = {
  sampleType: [],
  ffq: false,
  reibursement: false,
  report: [],
  collectionMedium: [],
}

/** Channels are shared reference data: every tenant's projects and products hang off them. */
export const channels = pgTable(
  'channels',
  {
    id: uuid().primaryKey().defaultRandom(),
    name: text().notNull(),
    autoGenerateKit: boolean().notNull().default(false),
    autoCreateOrderFromSurveyTool: boolean().notNull().default(false),
    sendBmeEmail: boolean('send_bme_email').notNull().default(false),
    sendPartnerEmail: boolean().notNull().default(false),
    timeline: timeline().notNull(),
    showAddressSection: boolean().notNull().default(false),
    defaultWorkflowValue: jsonb().$type<WorkflowValue>().notNull().default(EMPTY_WORKFLOW),
    createdAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
    deletedAt: timestamp({ withTimezone: true }),
  },
  (t) => [index('channels_created_at_idx').on(t.createdAt, t.id)],
)
export type ChannelRow = typeof channels.$inferSelect
