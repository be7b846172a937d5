import {
  COLLABORATORS,
  EXTERNAL_ELUTION_BUFFERS,
  EXTERNAL_PIPELINES,
  EXTERNAL_SAMPLE_TYPES,
  EXTERNAL_SPECIES_TYPES,
  EXTERNAL_TISSUE_NUCLEIC_ACID_TYPES,
  EXTERNAL_TISSUE_ORGANS,
  KIT_STATUSES,
  ML_PREFIXES,
  ORDER_STATUSES,
  PAYMENT_STATUSES,
  PDF_QC_VALUES,
  PRODUCT_TYPES,
  REPORT_STATUSES,
  REPORT_TYPES,
  TIMELINES,
} from '@dispatch/contracts'
import { sql } from 'drizzle-orm'
import { pgEnum, pgSequence } from 'drizzle-orm/pg-core'

/** The spec's enumerations, enforced by Postgres (values from contracts, so the two never drift). */
export const timeline = pgEnum('timeline', TIMELINES)
export const reportType = pgEnum('report_type', REPORT_TYPES)
export const collaborator = pgEnum('collaborator', COLLABORATORS)
export const externalSampleType = pgEnum('external_sample_type', EXTERNAL_SAMPLE_TYPES)
export const externalSpeciesType = pgEnum('external_species_type', EXTERNAL_SPECIES_TYPES)
export const externalTissueNucleicAcidType = pgEnum(
  'external_tissue_nucleic_acid_type',
  EXTERNAL_TISSUE_NUCLEIC_ACID_TYPES,
)
export const externalTissueOrgan = pgEnum('external_tissue_organ', EXTERNAL_TISSUE_ORGANS)
export const externalElutionBuffer = pgEnum('external_elution_buffer', EXTERNAL_ELUTION_BUFFERS)
export const externalPipeline = pgEnum('external_pipeline', EXTERNAL_PIPELINES)
export const mlPrefix = pgEnum('ml_prefix', ML_PREFIXES)
export const productType = pgEnum('product_type', PRODUCT_TYPES)
export const orderStatus = pgEnum('order_status', ORDER_STATUSES)
export const paymentStatus = pgEnum('payment_status', PAYMENT_STATUSES)
export const kitStatus = pgEnum('kit_status', KIT_STATUSES)
export const pdfQc = pgEnum('pdf_qc', PDF_QC_VALUES)
export const reportStatus = pgEnum('report_status', REPORT_STATUSES)

/** Human-readable ids (`ORD-00000042`) come from these sequences through `display_id()` (see migration). */
export const orderDisplayIdSeq = pgSequence('order_display_id_seq')
export const projectDisplayIdSeq = pgSequence('project_display_id_seq')
export const productDisplayIdSeq = pgSequence('product_display_id_seq')

export const displayIdDefault = (prefix: string, sequence: string) =>
  sql.raw(`display_id('${prefix}', nextval('${sequence}'))`)
