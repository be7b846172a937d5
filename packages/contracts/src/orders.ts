import Type, { type Static } from 'typebox'
import {
  Channel,
  NullableEnum,
  NullableObject,
  NullableString,
  Product,
  Project,
  ResourceId,
  Text,
} from './catalog.ts'
import {
  KIT_STATUSES,
  ORDER_STATUSES,
  PAYMENT_STATUSES,
  PDF_QC_VALUES,
  PRODUCT_TYPES,
  REPORT_STATUSES,
} from './catalog-enums.ts'
import { PathId } from './ids.ts'
import { DataEnvelope, listQueryProperties } from './paging.ts'

const Str = NullableString()
/** Calendar dates on the wire: `YYYY-MM-DD`. */
/** A calendar date, years 0001 to 9999: Postgres has no year 0, so 0000-01-01 is a 400, not a 500. */
export const CalendarDate = Type.String({ format: 'date', pattern: '^(?!0000)\\d{4}-\\d{2}-\\d{2}$' })

export const DiscountCode = Type.Object({ code: Type.String(), amount: Type.String(), type: Type.String() })
export type DiscountCode = Static<typeof DiscountCode>

export const ExternalMetadata = Type.Object(
  {
    externalId: Text({ maxLength: 200 }),
    volume: Type.Integer({ minimum: 0 }),
    concentration: Type.Integer({ minimum: 0 }),
  },
  { additionalProperties: false },
)
export const OrderItemMetadata = Type.Object(
  {
    customMessageFee: Type.Optional(Type.Integer({ minimum: 0 })),
    customMessage: Type.Optional(Text({ maxLength: 2000 })),
    externalMetadata: Type.Optional(Type.Array(ExternalMetadata, { maxItems: 1000 })),
  },
  { additionalProperties: false },
)
export type OrderItemMetadata = Static<typeof OrderItemMetadata>

export const DiscountAllocations = Type.Object({
  amount: Type.String(),
  discount_application_index: Type.Integer(),
})

export const OrderItem = Type.Object({
  id: Type.String(),
  orderId: Type.String(),
  productId: Type.String(),
  quantity: Type.Integer(),
  price: Type.Integer(),
  metadata: NullableObject(OrderItemMetadata),
  kitSerials: Type.Array(Type.String()),
  discountAllocations: NullableObject(DiscountAllocations),
  product: Product,
})
export type OrderItem = Static<typeof OrderItem>

export const Order = Type.Object({
  id: Type.String(),
  userId: Type.String(),
  tenantId: Type.String(),
  channelId: Type.String(),
  addressId: Str,
  projectId: Type.String(),
  orderedAt: CalendarDate,
  orderStatus: Type.Enum(ORDER_STATUSES),
  paymentStatus: Type.Enum(PAYMENT_STATUSES),
  total: Type.Integer(),
  trackingNumber: Str,
  displayId: Type.String(),
  notPrintOut: Type.Boolean(),
  unregisterOrder: Type.Boolean(),
  unregisterEmailAddress: Str,
  actualBiomeOrderId: Str,
  discountCodes: Type.Array(DiscountCode),
  totalDiscounts: Type.Integer(),
  notes: Str,
  isSolvedNotes: Type.Boolean(),
  idTrackingSpecialOrder: Str,
  invoiceNo: Str,
  partnerName: Str,
  chanel: Channel,
  project: Project,
  orderItems: Type.Array(OrderItem),
})
export type Order = Static<typeof Order>

const B2dProfileNameData = Type.Object({
  firstName: Type.String(),
  lastName: Type.String(),
  fullName: Type.String(),
})
const KitDate = NullableString({ format: 'date' })
export const Kit = Type.Object({
  id: Type.String(),
  profileId: Str,
  b2dProfileName: Str,
  b2dProfileNameData: NullableObject(B2dProfileNameData),
  orderItemId: Type.String(),
  projectId: Type.String(),
  serial: Type.String(),
  analysisId: Str,
  labId: Str,
  externalId: Str,
  tenantId: Type.String(),
  activated: Type.Boolean(),
  isUnassigned: Type.Boolean(),
  isSurveyFinished: Type.Boolean(),
  kronaReportReady: Type.Boolean(),
  b2cScoreReady: Type.Boolean(),
  abunScoreReady: Type.Boolean(),
  top10BacteriaReportReady: Type.Boolean(),
  kitSendOut: Type.Boolean(),
  pdfPublish: Type.Boolean(),
  isAliquoted: Type.Boolean(),
  activatedAt: KitDate,
  sampleReceivedAt: KitDate,
  kitSendOutAt: KitDate,
  completedAt: KitDate,
  kitReceivedAt: KitDate,
  surveyStartAt: KitDate,
  status: Type.Enum(KIT_STATUSES),
  notes: Str,
  internalSurveyResultId: Str,
  isFfqSurveyCompletion: Str,
  pdfPath: Str,
  surveyToolResponseId: Str,
  pdfQC: NullableEnum(PDF_QC_VALUES),
  reportStatus: NullableEnum(REPORT_STATUSES),
})
export type Kit = Static<typeof Kit>

export const ORDER_ORDER_FIELDS = ['orderedAt', 'displayId', 'total'] as const
export const KIT_ORDER_FIELDS = ['createdAt', 'serial'] as const

export const OrderListQuery = Type.Object(
  {
    ...listQueryProperties,
    orderField: Type.Enum(ORDER_ORDER_FIELDS, { default: 'orderedAt' }),
    projectId: Type.Optional(ResourceId),
    productType: Type.Optional(Type.Enum(PRODUCT_TYPES)),
    startDate: Type.Optional(CalendarDate),
    endDate: Type.Optional(CalendarDate),
  },
  { additionalProperties: false },
)
export type OrderListQuery = Static<typeof OrderListQuery>

export const KitListQuery = Type.Object(
  {
    ...listQueryProperties,
    orderField: Type.Enum(KIT_ORDER_FIELDS, { default: 'createdAt' }),
    orderId: Type.Optional(ResourceId),
    projectId: Type.Optional(ResourceId),
    serial: Type.Optional(Text({ minLength: 1, maxLength: 64 })),
    status: Type.Optional(Type.Enum(KIT_STATUSES)),
  },
  { additionalProperties: false },
)
export type KitListQuery = Static<typeof KitListQuery>

export const OrderList = DataEnvelope(Order)
export const KitList = DataEnvelope(Kit)
/** A single order comes back in an array, as the spec shows it. */
export const SingleOrder = Type.Array(Order, { minItems: 1, maxItems: 1 })
export const OrderIdParams = Type.Object({ orderId: PathId('The order id') })

export const KitSerial = Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9][A-Za-z0-9._-]*$' })
const OptionalText = (maxLength: number) => Type.Optional(Text({ maxLength }))

/** The order registration payload. `addressId` is an integer here and a string in the response. */
export const CreateOrderBody = Type.Object(
  {
    order: Type.Object(
      {
        partnerName: OptionalText(200),
        invoiceNo: OptionalText(100),
        addressId: Type.Optional(Type.Integer({ minimum: 1, maximum: 2147483647 })),
        projectId: Type.String({ minLength: 1, maxLength: 64 }),
        channelId: Type.String({ minLength: 1, maxLength: 64 }),
        notes: OptionalText(5000),
      },
      { additionalProperties: false },
    ),
    orderItems: Type.Array(
      Type.Object(
        {
          productId: Type.String({ minLength: 1, maxLength: 64 }),
          price: Type.Integer({ minimum: 0, maximum: 100_000_000 }),
          quantity: Type.Integer({ minimum: 1, maximum: 1000 }),
          metadata: Type.Optional(OrderItemMetadata),
          kitSerials: Type.Array(KitSerial, { maxItems: 1000 }),
        },
        { additionalProperties: false },
      ),
      { minItems: 1, maxItems: 100 },
    ),
  },
  { additionalProperties: false },
)
export type CreateOrderBody = Static<typeof CreateOrderBody>
