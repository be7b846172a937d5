import type { Channel, Product, Project } from '@dispatch/contracts'
import type { ChannelRow } from '../schema/channels.ts'
import type { ProductRow } from '../schema/products.ts'
import type { ProjectRow } from '../schema/projects.ts'

/** Rows to the spec's wire shapes: its field names (`sendBMEEmail`, `vendorPIC`), ids as strings. */
export const toChannel = (r: ChannelRow): Channel => ({
  id: r.id,
  name: r.name,
  autoGenerateKit: r.autoGenerateKit,
  autoCreateOrderFromSurveyTool: r.autoCreateOrderFromSurveyTool,
  sendBMEEmail: r.sendBmeEmail,
  sendPartnerEmail: r.sendPartnerEmail,
  timeline: r.timeline,
  showAddressSection: r.showAddressSection,
  defaultWorkflowValue: r.defaultWorkflowValue,
})

export const toProject = (r: ProjectRow): Project => ({
  id: r.id,
  name: r.name,
  channelId: r.channelId,
  displayId: r.displayId,
  clinicCode: r.clinicCode,
  addressId: r.addressId === null ? null : String(r.addressId),
  principalInvestigatorName: r.principalInvestigatorName,
  surveyToolSurveyId: r.surveyToolSurveyId,
  workflow: r.workflow,
  externalResearchProjectId: r.externalResearchProjectId,
  surveyCollectionId: r.surveyCollectionId,
  vendorPIC: r.vendorPic,
  isPartnerEmailD2D31Trigger: r.isPartnerEmailD2d31Trigger,
  isPartnerEmailD4Trigger: r.isPartnerEmailD4Trigger,
  organizationName: r.organizationName,
  tenantId: r.tenantId,
  collaborator: r.collaborator,
  externalSampleType: r.externalSampleType,
  externalSpeciesType: r.externalSpeciesType,
  externalTissueNucleicAcidType: r.externalTissueNucleicAcidType,
  externalTissueOrgan: r.externalTissueOrgan,
  externalElutionBuffer: r.externalElutionBuffer,
  externalPipeline: r.externalPipeline,
  externalOutputType: r.externalOutputType,
  pdfTemplateName: r.pdfTemplateName,
  externalSequencingTypeId: r.externalSequencingTypeId,
  externalHaveSentB1: r.externalHaveSentB1,
  externalHaveSentB2: r.externalHaveSentB2,
  externalEmail: r.externalEmail,
  inputMLPrefix: r.inputMlPrefix,
  outputMLPrefix: r.outputMlPrefix,
  prefix: r.prefix,
})

export const toProduct = (r: ProductRow): Product => ({
  id: r.id,
  name: r.name,
  description: r.description,
  stock: r.stock,
  price: r.price,
  active: r.active,
  image: r.image,
  displayId: r.displayId,
  tenantId: r.tenantId,
  channelId: r.channelId,
  productType: r.productType,
})
