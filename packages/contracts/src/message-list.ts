import Type, { type Static } from 'typebox'
import { ClientReference, MESSAGE_STATUSES, MESSAGE_TYPES, MessageView, Phone } from './messages.ts'
import { listQueryProperties, PageMeta } from './paging.ts'

/** `createdAt` is when the message was accepted (its 202); `updatedAt` its last change. */
export const MESSAGE_ORDER_FIELDS = ['createdAt', 'updatedAt'] as const

/**
 * A calendar day (UTC) or an instant with its offset. Years 1000–2999: a year 0000 would reach
 * Postgres, which refuses it, and no message is older than the service.
 */
const AcceptedBound = (edge: string) =>
  Type.Union(
    [
      Type.String({ format: 'date', pattern: '^[12][0-9]{3}-[0-9]{2}-[0-9]{2}$' }),
      Type.String({ format: 'date-time', pattern: '^[12][0-9]{3}-[0-9]{2}-[0-9]{2}T' }),
    ],
    {
      description: `${edge} of the acceptance time, inclusive: a date (YYYY-MM-DD, the whole UTC day) or a date-time with its offset`,
    },
  )

/**
 * `GET /messages`: the common list parameters (`take` defaults to 1) and the message filters.
 * `status` and `type` are lists: `status=failed&status=expired` and `status=failed,expired` alike.
 */
export const MessageListQuery = Type.Object(
  {
    ...listQueryProperties,
    orderField: Type.Enum(MESSAGE_ORDER_FIELDS, { default: 'createdAt' }),
    status: Type.Optional(Type.Array(Type.Enum(MESSAGE_STATUSES), { maxItems: MESSAGE_STATUSES.length })),
    type: Type.Optional(Type.Array(Type.Enum(MESSAGE_TYPES), { maxItems: MESSAGE_TYPES.length })),
    phone: Type.Optional(Phone),
    clientReference: Type.Optional(ClientReference),
    batchId: Type.Optional(Type.String({ format: 'uuid' })),
    startDate: Type.Optional(AcceptedBound('Start')),
    endDate: Type.Optional(AcceptedBound('End')),
  },
  { additionalProperties: false },
)
export type MessageListQuery = Static<typeof MessageListQuery>

/** Matches are counted up to this many (or to the end of the requested page, if further). */
export const MESSAGE_COUNT_LIMIT = 10_000

/**
 * The paging envelope with `data`, plus `itemCountExact`: `false` when more messages matched than
 * were counted, `itemCount` then being a lower bound (see docs/messaging.md, Listing messages).
 */
export const MessageList = Type.Object(
  {
    ...PageMeta.properties,
    itemCountExact: Type.Boolean(),
    data: Type.Array(MessageView),
  },
  { additionalProperties: false },
)
export type MessageList = Static<typeof MessageList>
