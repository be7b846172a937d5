import Type, { type Static, type TObject, type TSchema } from 'typebox'
import {
  COLLABORATORS,
  COLLECTION_MEDIUMS,
  EXTERNAL_ELUTION_BUFFERS,
  EXTERNAL_PIPELINES,
  EXTERNAL_SAMPLE_TYPES,
  EXTERNAL_SPECIES_TYPES,
  EXTERNAL_TISSUE_NUCLEIC_ACID_TYPES,
  EXTERNAL_TISSUE_ORGANS,
  ML_PREFIXES,
  PRODUCT_TYPES,
  REPORT_TYPES,
  SAMPLE_TYPES,
  TIMELINES,
} from './catalog-enums.ts'
import { listQueryProperties, PageMeta } from './paging.ts'

/** Text of bounded length (NUL and unpaired surrogates are refused for every route, before validation). */
export const Text = (options: { minLength?: number; maxLength: number }) => Type.String(options)

export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()])
/**
 * Nullable strings and enums as `type: ['string', 'null']` rather than `anyOf`: the same JSON
 * Schema meaning, but the response serializer writes them directly instead of trying each branch.
 */
export const NullableString = (options: { format?: string } = {}) =>
  Type.Unsafe<string | null>({ ...options, type: ['string', 'null'] })
/** A nullable object the same way (`type: ['object', 'null']`), for the same reason. */
export const NullableObject = <T extends TObject>(schema: T) =>
  Type.Unsafe<Static<T> | null>({ ...schema, type: ['object', 'null'] })
export const NullableEnum = <T extends readonly string[]>(values: T) =>
  Type.Unsafe<T[number] | null>({ type: ['string', 'null'], enum: [...values, null] })
/** Resource ids are UUIDs on the wire as strings; a malformed one in a filter is a 400. */
export const ResourceId = Type.String({ format: 'uuid' })

export const WorkflowValue = Type.Object(
  {
    sampleType: Type.Array(Type.Enum(SAMPLE_TYPES), { uniqueItems: true }),
    ffq: Type.Boolean(),
    reibursement: Type.Boolean(),
    report: Type.Array(Type.Enum(REPORT_TYPES), { uniqueItems: true }),
    collectionMedium: Type.Array(Type.Enum(COLLECTION_MEDIUMS), { uniqueItems: true }),
  },
  { additionalProperties: false },
)
export type WorkflowValue = Static<typeof WorkflowValue>

export const Channel = Type.Object({
  id: Type.String(),
  name: Type.String(),
  autoGenerateKit: Type.Boolean(),
  autoCreateOrderFromSurveyTool: Type.Boolean(),
  sendBMEEmail: Type.Boolean(),
  sendPartnerEmail: Type.Boolean(),
  timeline: Type.Enum(TIMELINES),
  showAddressSection: Type.Boolean(),
  defaultWorkflowValue: WorkflowValue,
})
export type Channel = Static<typeof Channel>

const Str = NullableString()
export const Project = Type.Object({
  id: Type.String(),
  name: Type.String(),
  channelId: Type.String(),
  displayId: Type.String(),
  clinicCode: Str,
  addressId: Str,
  principalInvestigatorName: Str,
  surveyToolSurveyId: Type.Array(Type.String()),
  workflow: WorkflowValue,
  externalResearchProjectId: Str,
  surveyCollectionId: Str,
  vendorPIC: Str,
  isPartnerEmailD2D31Trigger: Type.Boolean(),
  isPartnerEmailD4Trigger: Type.Boolean(),
  organizationName: Str,
  tenantId: Type.String(),
  collaborator: NullableEnum(COLLABORATORS),
  externalSampleType: NullableEnum(EXTERNAL_SAMPLE_TYPES),
  externalSpeciesType: NullableEnum(EXTERNAL_SPECIES_TYPES),
  externalTissueNucleicAcidType: NullableEnum(EXTERNAL_TISSUE_NUCLEIC_ACID_TYPES),
  externalTissueOrgan: NullableEnum(EXTERNAL_TISSUE_ORGANS),
  externalElutionBuffer: NullableEnum(EXTERNAL_ELUTION_BUFFERS),
  externalPipeline: NullableEnum(EXTERNAL_PIPELINES),
  externalOutputType: Type.Array(Type.Enum(REPORT_TYPES)),
  pdfTemplateName: Str,
  externalSequencingTypeId: Str,
  externalHaveSentB1: Type.Boolean(),
  externalHaveSentB2: Type.Boolean(),
  externalEmail: Str,
  inputMLPrefix: NullableEnum(ML_PREFIXES),
  outputMLPrefix: NullableEnum(ML_PREFIXES),
  prefix: Str,
})
export type Project = Static<typeof Project>

export const Product = Type.Object({
  id: Type.String(),
  name: Type.String(),
  description: Type.String(),
  stock: Type.Integer(),
  price: Type.Integer(),
  active: Type.Boolean(),
  image: Str,
  displayId: Type.String(),
  tenantId: Type.String(),
  channelId: Type.String(),
  productType: Type.Enum(PRODUCT_TYPES),
})
export type Product = Static<typeof Product>

/** The project and product lists: an array holding one paging envelope, items under `datas`. */
export const DatasEnvelopeArray = <T extends TSchema>(item: T) =>
  Type.Array(
    Type.Object({ ...PageMeta.properties, datas: Type.Array(item) }, { additionalProperties: false }),
    {
      minItems: 1,
      maxItems: 1,
    },
  )

/** `channelIds=a&channelIds=b` and `channelIds=a,b` both arrive here as a list. */
const IdList = Type.Array(ResourceId, { maxItems: 100 })

export const CHANNEL_ORDER_FIELDS = ['createdAt', 'name'] as const
export const PROJECT_ORDER_FIELDS = ['createdAt', 'updatedAt', 'name', 'displayId'] as const
export const PRODUCT_ORDER_FIELDS = ['createdAt', 'updatedAt', 'name', 'displayId', 'price', 'stock'] as const

export const ChannelListQuery = Type.Object(
  {
    ...listQueryProperties,
    orderField: Type.Enum(CHANNEL_ORDER_FIELDS, { default: 'createdAt' }),
    channelIds: Type.Optional(IdList),
  },
  { additionalProperties: false },
)
export type ChannelListQuery = Static<typeof ChannelListQuery>

export const ProjectListQuery = Type.Object(
  {
    ...listQueryProperties,
    orderField: Type.Enum(PROJECT_ORDER_FIELDS, { default: 'createdAt' }),
    channelIds: Type.Optional(IdList),
  },
  { additionalProperties: false },
)
export type ProjectListQuery = Static<typeof ProjectListQuery>

export const ProductListQuery = Type.Object(
  {
    ...listQueryProperties,
    orderField: Type.Enum(PRODUCT_ORDER_FIELDS, { default: 'createdAt' }),
    channelId: Type.Optional(ResourceId),
    productType: Type.Optional(Type.Array(Type.Enum(PRODUCT_TYPES), { maxItems: 3 })),
  },
  { additionalProperties: false },
)
export type ProductListQuery = Static<typeof ProductListQuery>

export const ChannelList = Type.Array(Channel)
export const ProjectList = DatasEnvelopeArray(Project)
export const ProductList = DatasEnvelopeArray(Product)
