import { afterAll, beforeAll, expect, it } from 'vitest'
import { buildTestApp, createWorld, type TestApp, type TestWorld } from '../helpers.ts'
import { get, placeOrder, seedTenant } from './fixtures.ts'

/** The spec's field lists, written out by hand: every field, nothing more, misspellings included. */
const SPEC = {
  order: `id userId tenantId channelId addressId projectId orderedAt orderStatus paymentStatus total
    trackingNumber displayId notPrintOut unregisterOrder unregisterEmailAddress actualBiomeOrderId
    discountCodes totalDiscounts notes isSolvedNotes idTrackingSpecialOrder invoiceNo partnerName
    chanel project orderItems`,
  orderItem: 'id orderId productId quantity price metadata kitSerials discountAllocations product',
  product: 'id name description stock price active image displayId tenantId channelId productType',
  channel: `id name autoGenerateKit autoCreateOrderFromSurveyTool sendBMEEmail sendPartnerEmail timeline
    showAddressSection defaultWorkflowValue`,
  workflow: 'sampleType ffq reibursement report collectionMedium',
  project: `id name channelId displayId clinicCode addressId principalInvestigatorName surveyToolSurveyId
    workflow externalResearchProjectId surveyCollectionId vendorPIC isPartnerEmailD2D31Trigger
    isPartnerEmailD4Trigger organizationName tenantId collaborator externalSampleType
    externalSpeciesType externalTissueNucleicAcidType externalTissueOrgan externalElutionBuffer
    externalPipeline externalOutputType pdfTemplateName externalSequencingTypeId externalHaveSentB1
    externalHaveSentB2 externalEmail inputMLPrefix outputMLPrefix prefix`,
  kit: `id profileId b2dProfileName b2dProfileNameData orderItemId projectId serial analysisId labId
    externalId tenantId activated isUnassigned isSurveyFinished kronaReportReady b2cScoreReady
    abunScoreReady top10BacteriaReportReady kitSendOut pdfPublish isAliquoted activatedAt
    sampleReceivedAt kitSendOutAt completedAt kitReceivedAt surveyStartAt status notes
    internalSurveyResultId isFfqSurveyCompletion pdfPath surveyToolResponseId pdfQC reportStatus`,
  envelope: 'page take itemCount pageCount hasPreviousPage hasNextPage',
}
const fields = (list: string) => list.split(/\s+/).filter(Boolean).sort()
const keys = (value: object) => Object.keys(value).sort()

let world: TestWorld
let app: TestApp
beforeAll(async () => {
  world = await createWorld()
  app = await buildTestApp(world)
})
afterAll(async () => {
  await app?.close()
  await world?.close()
})

it('every record carries exactly the spec fields, on every route', async () => {
  const t = await seedTenant(app, 'shapes')
  const created = await placeOrder(app, t)
  const [single] = (await get(app, t.key, `/api/third-party/orders/${created.id}`)).json()
  const list = (await get(app, t.key, '/api/third-party/orders')).json()
  for (const order of [created, single, list.data[0]]) {
    expect(keys(order)).toEqual(fields(SPEC.order))
    expect(keys(order.chanel)).toEqual(fields(SPEC.channel))
    expect(keys(order.chanel.defaultWorkflowValue)).toEqual(fields(SPEC.workflow))
    expect(keys(order.project)).toEqual(fields(SPEC.project))
    expect(keys(order.project.workflow)).toEqual(fields(SPEC.workflow))
    expect(keys(order.orderItems[0])).toEqual(fields(SPEC.orderItem))
    expect(keys(order.orderItems[0].product)).toEqual(fields(SPEC.product))
  }
  expect(keys(list)).toEqual(fields(`${SPEC.envelope} data`))
  const [projects] = (await get(app, t.key, '/api/third-party/projects')).json()
  expect(keys(projects)).toEqual(fields(`${SPEC.envelope} datas`))
  expect(keys(projects.datas[0])).toEqual(fields(SPEC.project))
  const [products] = (await get(app, t.key, '/api/third-party/products')).json()
  expect(keys(products)).toEqual(fields(`${SPEC.envelope} datas`))
  expect(keys(products.datas[0])).toEqual(fields(SPEC.product))
  const [channel] = (await get(app, t.key, '/api/third-party/channels')).json()
  expect(keys(channel)).toEqual(fields(SPEC.channel))
  const kits = (await get(app, t.key, '/api/third-party/kits')).json()
  expect(keys(kits)).toEqual(fields(`${SPEC.envelope} data`))
  expect(keys(kits.data[0])).toEqual(fields(SPEC.kit))
})

it('documents the routes in the OpenAPI document', async () => {
  const res = await app.inject({ method: 'GET', url: '/docs/json' })
  expect(res.statusCode).toBe(200)
  const paths = Object.keys(res.json().paths)
  for (const path of [
    '/api/third-party/orders',
    '/api/third-party/orders/{orderId}',
    '/api/admin/products/{id}',
  ]) {
    expect(paths).toContain(path)
  }
})
