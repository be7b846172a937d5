import Type, { type Static, type TObject } from 'typebox'
import { Text as PlainText, WorkflowValue } from './catalog.ts'
import {
  COLLABORATORS,
  EXTERNAL_ELUTION_BUFFERS,
  EXTERNAL_PIPELINES,
  EXTERNAL_SAMPLE_TYPES,
  EXTERNAL_SPECIES_TYPES,
  EXTERNAL_TISSUE_NUCLEIC_ACID_TYPES,
  EXTERNAL_TISSUE_ORGANS,
  ML_PREFIXES,
  PRODUCT_TYPES,
  REPORT_TYPES,
  TIMELINES,
} from './catalog-enums.ts'
import { PathId } from './ids.ts'

const Name = Type.String({ minLength: 1, maxLength: 200, pattern: '\\S' })
const Text = (maxLength = 200) => Type.Optional(PlainText({ maxLength }))
const Flag = Type.Optional(Type.Boolean())
const TenantId = Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9][A-Za-z0-9._-]*$' })
const Id = Type.String({ format: 'uuid' })

/** Every update is a partial create: only the fields given change. */
const partial = <T extends TObject>(schema: T) =>
  Type.Partial(schema, { additionalProperties: false, minProperties: 1 })

export const CreateChannelBody = Type.Object(
  {
    name: Name,
    timeline: Type.Enum(TIMELINES),
    autoGenerateKit: Flag,
    autoCreateOrderFromSurveyTool: Flag,
    sendBMEEmail: Flag,
    sendPartnerEmail: Flag,
    showAddressSection: Flag,
    defaultWorkflowValue: Type.Optional(WorkflowValue),
  },
  { additionalProperties: false },
)
export type CreateChannelBody = Static<typeof CreateChannelBody>
export const UpdateChannelBody = partial(CreateChannelBody)
export type UpdateChannelBody = Static<typeof UpdateChannelBody>

const Opt = <T extends readonly string[]>(values: T) =>
  Type.Optional(Type.Union([Type.Enum(values), Type.Null()]))
const OptText = (maxLength = 200) => Type.Optional(Type.Union([PlainText({ maxLength }), Type.Null()]))

export const CreateProjectBody = Type.Object(
  {
    name: Name,
    channelId: Id,
    tenantId: TenantId,
    clinicCode: OptText(),
    addressId: Type.Optional(Type.Union([Type.Integer({ minimum: 1, maximum: 2147483647 }), Type.Null()])),
    principalInvestigatorName: OptText(),
    surveyToolSurveyId: Type.Optional(Type.Array(PlainText({ maxLength: 200 }), { maxItems: 100 })),
    workflow: Type.Optional(WorkflowValue),
    externalResearchProjectId: OptText(),
    surveyCollectionId: OptText(),
    vendorPIC: OptText(),
    isPartnerEmailD2D31Trigger: Flag,
    isPartnerEmailD4Trigger: Flag,
    organizationName: OptText(),
    collaborator: Opt(COLLABORATORS),
    externalSampleType: Opt(EXTERNAL_SAMPLE_TYPES),
    externalSpeciesType: Opt(EXTERNAL_SPECIES_TYPES),
    externalTissueNucleicAcidType: Opt(EXTERNAL_TISSUE_NUCLEIC_ACID_TYPES),
    externalTissueOrgan: Opt(EXTERNAL_TISSUE_ORGANS),
    externalElutionBuffer: Opt(EXTERNAL_ELUTION_BUFFERS),
    externalPipeline: Opt(EXTERNAL_PIPELINES),
    externalOutputType: Type.Optional(Type.Array(Type.Enum(REPORT_TYPES), { uniqueItems: true })),
    pdfTemplateName: OptText(),
    externalSequencingTypeId: OptText(),
    externalHaveSentB1: Flag,
    externalHaveSentB2: Flag,
    externalEmail: Type.Optional(Type.Union([Type.String({ format: 'email', maxLength: 254 }), Type.Null()])),
    inputMLPrefix: Opt(ML_PREFIXES),
    outputMLPrefix: Opt(ML_PREFIXES),
    prefix: OptText(50),
  },
  { additionalProperties: false },
)
export type CreateProjectBody = Static<typeof CreateProjectBody>
/** A project's tenant is fixed at creation: moving it would hand its orders to another tenant. */
export const UpdateProjectBody = partial(Type.Omit(CreateProjectBody, ['tenantId']))
export type UpdateProjectBody = Static<typeof UpdateProjectBody>

export const CreateProductBody = Type.Object(
  {
    name: Name,
    description: Text(5000),
    stock: Type.Integer({ minimum: 0, maximum: 2147483647 }),
    price: Type.Integer({ minimum: 0, maximum: 100_000_000 }),
    active: Flag,
    image: OptText(2000),
    tenantId: TenantId,
    channelId: Id,
    productType: Type.Enum(PRODUCT_TYPES),
  },
  { additionalProperties: false },
)
export type CreateProductBody = Static<typeof CreateProductBody>
export const UpdateProductBody = partial(Type.Omit(CreateProductBody, ['tenantId']))
export type UpdateProductBody = Static<typeof UpdateProductBody>

export const CatalogIdParams = Type.Object({ id: PathId() })
