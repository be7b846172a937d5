import type { WorkflowValue } from '@dispatch/contracts'
import { sql } from 'drizzle-orm'
import { boolean, index, integer, jsonb, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core'
import { addresses } from './addresses.ts'
import {
  collaborator,
  displayIdDefault,
  externalElutionBuffer,
  externalPipeline,
  externalSampleType,
  externalSpeciesType,
  externalTissueNucleicAcidType,
  externalTissueOrgan,
  mlPrefix,
  reportType,
} from './catalog-enums.ts'
import { channels, EMPTY_WORKFLOW } from './channels.ts'

export const projects = pgTable(
  'projects',
  {
    id: uuid().primaryKey().defaultRandom(),
    displayId: text().notNull().unique().default(displayIdDefault('PRJ-', 'project_display_id_seq')),
    tenantId: text().notNull(),
    channelId: uuid()
      .notNull()
      .references(() => channels.id),
    name: text().notNull(),
    clinicCode: text(),
    addressId: integer().references(() => addresses.id),
    principalInvestigatorName: text(),
    surveyToolSurveyId: text().array().notNull().default(sql`'{}'`),
    workflow: jsonb().$type<WorkflowValue>().notNull().default(EMPTY_WORKFLOW),
    externalResearchProjectId: text(),
    surveyCollectionId: text(),
    vendorPic: text('vendor_pic'),
    isPartnerEmailD2d31Trigger: boolean('is_partner_email_d2d31_trigger').notNull().default(false),
    isPartnerEmailD4Trigger: boolean('is_partner_email_d4_trigger').notNull().default(false),
    organizationName: text(),
    collaborator: collaborator(),
    externalSampleType: externalSampleType(),
    externalSpeciesType: externalSpeciesType(),
    externalTissueNucleicAcidType: externalTissueNucleicAcidType(),
    externalTissueOrgan: externalTissueOrgan(),
    externalElutionBuffer: externalElutionBuffer(),
    externalPipeline: externalPipeline(),
    externalOutputType: reportType().array().notNull().default(sql`'{}'`),
    pdfTemplateName: text(),
    externalSequencingTypeId: text(),
    externalHaveSentB1: boolean('external_have_sent_b1').notNull().default(false),
    externalHaveSentB2: boolean('external_have_sent_b2').notNull().default(false),
    externalEmail: text(),
    inputMlPrefix: mlPrefix('input_ml_prefix'),
    outputMlPrefix: mlPrefix('output_ml_prefix'),
    prefix: text(),
    createdAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
    deletedAt: timestamp({ withTimezone: true }),
  },
  (t) => [
    index('projects_tenant_created_at_idx').on(t.tenantId, t.createdAt, t.id),
    index('projects_channel_id_idx').on(t.channelId),
  ],
)
export type ProjectRow = typeof projects.$inferSelect
