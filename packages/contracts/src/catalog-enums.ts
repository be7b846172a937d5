/** The spec's enumerations, each enforced as a Postgres enum and in the TypeBox schemas. */
export const TIMELINES = ['AMD', 'BME', 'RESEARCH', 'FMT', 'FFH'] as const
export const SAMPLE_TYPES = [
  'STOOL',
  'URINE',
  'SALIVA',
  'VENDOR_MEDIUM',
  'ETHANOL',
  'CALPROTEIN',
  'RAW',
  'INVITRO',
] as const
export const REPORT_TYPES = ['NONE', 'ASV', 'PDF', 'SCORE_TABLE', 'TAXA_TABLE', 'DISEASE_RISK'] as const
export const COLLECTION_MEDIUMS = ['VENDOR_MEDIUM', 'ETHANOL', 'INVITRO', 'RAW'] as const
export const COLLABORATORS = ['RESEARCH', 'LAB', 'CLINIC', 'BUSINESS'] as const
export const EXTERNAL_SAMPLE_TYPES = ['STOOL', 'DNA', 'FASTQ'] as const
export const EXTERNAL_SPECIES_TYPES = ['HUMAN', 'ANIMAL', 'BACTERIA'] as const
export const EXTERNAL_TISSUE_NUCLEIC_ACID_TYPES = ['GENOMIC_DNA'] as const
export const EXTERNAL_TISSUE_ORGANS = ['STOOL', 'SALIVA'] as const
export const EXTERNAL_ELUTION_BUFFERS = ['DDH2O', 'TE_BUFFER', 'RNA_FREE_OR_DEPC', 'PURE_ETHANOL'] as const
export const EXTERNAL_PIPELINES = ['V2_5', 'V3_0'] as const
export const ML_PREFIXES = ['KIT_ID', 'ANALYSIS_ID', 'EXTERNAL_ID'] as const
export const PRODUCT_TYPES = ['KIT', 'PROBIOTIC', 'BUNDLE'] as const
export const ORDER_STATUSES = [
  'CANCELLED',
  'PENDING',
  'CONFIRMED',
  'DELIVERING',
  'DELIVERED',
  'RETURNED',
  'REFUNDED',
] as const
export const PAYMENT_STATUSES = ['PAID', 'UNPAID', 'REFUNDED'] as const
export const KIT_STATUSES = [
  'UNACTIVATED',
  'SENT_OUT',
  'ACTIVATED',
  'KIT_RECEIVED',
  'DNA_EXTRACTED',
  'SEQUENCING',
  'UNDER_SUPPORT',
  'COMPLETED',
  'FFQ_SURVEY_COMPLETED',
  'ALIQUOTED',
] as const
export const PDF_QC_VALUES = ['SUCCESS', 'FAILED'] as const
export const REPORT_STATUSES = ['UNDER_SUPPORT', 'PUBLISHED', 'UNPUBLISHED'] as const

export type ProductType = (typeof PRODUCT_TYPES)[number]
export type KitStatus = (typeof KIT_STATUSES)[number]
