import { boolean, date, index, jsonb, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core'
import { kitStatus, pdfQc, reportStatus } from './catalog-enums.ts'
import { orderItems } from './order-items.ts'
import { orders } from './orders.ts'
import { projects } from './projects.ts'

const day = () => date({ mode: 'string' })
const flag = () => boolean().notNull().default(false)

/** One kit per serial; the serial is unique across the whole system (all tenants). */
export const kits = pgTable(
  'kits',
  {
    id: uuid().primaryKey().defaultRandom(),
    serial: text().notNull().unique(),
    tenantId: text().notNull(),
    orderId: uuid()
      .notNull()
      .references(() => orders.id),
    orderItemId: uuid()
      .notNull()
      .references(() => orderItems.id),
    projectId: uuid()
      .notNull()
      .references(() => projects.id),
    profileId: text(),
    b2dProfileName: text('b2d_profile_name'),
    b2dProfileNameData: jsonb('b2d_profile_name_data').$type<{
      firstName: string
      lastName: string
      fullName: string
    }>(),
    analysisId: text(),
    labId: text(),
    externalId: text(),
    activated: flag(),
    isUnassigned: flag(),
    isSurveyFinished: flag(),
    kronaReportReady: flag(),
    b2cScoreReady: boolean('b2c_score_ready').notNull().default(false),
    abunScoreReady: flag(),
    top10BacteriaReportReady: boolean('top10_bacteria_report_ready').notNull().default(false),
    kitSendOut: flag(),
    pdfPublish: flag(),
    isAliquoted: flag(),
    activatedAt: day(),
    sampleReceivedAt: day(),
    kitSendOutAt: day(),
    completedAt: day(),
    kitReceivedAt: day(),
    surveyStartAt: day(),
    status: kitStatus().notNull().default('UNACTIVATED'),
    notes: text(),
    internalSurveyResultId: text(),
    isFfqSurveyCompletion: text(),
    pdfPath: text(),
    surveyToolResponseId: text(),
    pdfQc: pdfQc('pdf_qc'),
    reportStatus: reportStatus(),
    createdAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
    deletedAt: timestamp({ withTimezone: true }),
  },
  (t) => [
    index('kits_order_item_id_idx').on(t.orderItemId),
    index('kits_order_id_idx').on(t.orderId),
    index('kits_tenant_created_at_idx').on(t.tenantId, t.createdAt, t.id),
    index('kits_project_id_idx').on(t.projectId),
  ],
)
export type KitRow = typeof kits.$inferSelect
