import Type, { type Static } from 'typebox'
import { Nullable } from './catalog.ts'

/** The e-mails an order sends when it commits, each when its channel's flag asks. */
export const ORDER_EMAIL_TEMPLATES = ['order.created.partner', 'order.created.bme'] as const
export type OrderEmailTemplate = (typeof ORDER_EMAIL_TEMPLATES)[number]

/** What the `order.created` e-mails need, captured when the order commits. */
export const OrderEmailData = Type.Object(
  {
    orderId: Type.String(),
    displayId: Type.String(),
    orderedAt: Type.String(),
    total: Type.Integer(),
    projectName: Type.String(),
    channelName: Type.String(),
    partnerName: Nullable(Type.String()),
    tenantId: Type.String(),
    items: Type.Array(
      Type.Object({
        productName: Type.String(),
        quantity: Type.Integer(),
        price: Type.Integer(),
        kitSerials: Type.Array(Type.String()),
      }),
    ),
  },
  { additionalProperties: false },
)
export type OrderEmailData = Static<typeof OrderEmailData>

export const OrderEmailJob = Type.Object(
  {
    outboxId: Type.String({ pattern: '^[0-9]+$' }),
    to: Type.String({ minLength: 3 }),
    template: Type.Enum(ORDER_EMAIL_TEMPLATES),
    data: OrderEmailData,
  },
  { additionalProperties: false },
)
export type OrderEmailJob = Static<typeof OrderEmailJob>
