import Type, { type Static } from 'typebox'
import { PathId } from './ids.ts'
import { MessageList, MessageListQuery } from './message-list.ts'
import { MessageView } from './messages.ts'
import { PageMeta } from './paging.ts'

/** The most messages one bulk retry moves (`POST /api/admin/messages/retry`), and its default. */
export const RETRY_LIMIT_MAX = 1000
export const RETRY_LIMIT_DEFAULT = 100

const key = MessageListQuery.properties

/**
 * Filters of the admin's view of every key's messages: the key list's own, plus the key, the
 * sender and the last error code. `tenantId` is not one: messages belong to keys.
 */
const adminFilters = {
  type: key.type,
  phone: key.phone,
  userId: key.userId,
  clientReference: key.clientReference,
  batchId: key.batchId,
  startDate: key.startDate,
  endDate: key.endDate,
  q: key.q,
  apiKeyId: Type.Optional(Type.String({ format: 'uuid', description: 'The key that sent it' })),
  senderId: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 64,
      description: 'The sender it went out through (`default`, …)',
    }),
  ),
  errorCode: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 64,
      description: 'Its last error code, exact (`131026`, `MESSAGE_EXPIRED`, …)',
    }),
  ),
}

/** `GET /api/admin/messages`: the key list's paging, order and filters, across every key. */
export const AdminMessageListQuery = Type.Object(
  {
    order: key.order,
    page: key.page,
    take: key.take,
    orderField: key.orderField,
    deleted: key.deleted,
    itemCount: key.itemCount,
    status: key.status,
    ...adminFilters,
    channel: key.channel,
    fallback: key.fallback,
  },
  { additionalProperties: false },
)
export type AdminMessageListQuery = Static<typeof AdminMessageListQuery>

/** A message as admins see it: the key's view, the key it belongs to, and its admin retries. */
export const AdminMessageView = Type.Object({
  ...MessageView.properties,
  apiKeyId: Type.String({ format: 'uuid' }),
  /** Its key's client name, in lists and on the timeline (so a person can tell keys apart without opening each). */
  clientName: Type.Optional(Type.String()),
  /** How many times an admin sent it out again after it failed. */
  retryCount: Type.Integer({ minimum: 0 }),
  retriedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
})
export type AdminMessageView = Static<typeof AdminMessageView>

export const AdminMessageList = Type.Object(
  {
    ...PageMeta.properties,
    itemCountExact: MessageList.properties.itemCountExact,
    data: Type.Array(AdminMessageView),
  },
  { additionalProperties: false },
)
export type AdminMessageList = Static<typeof AdminMessageList>

export const AdminMessageIdParams = Type.Object({ id: PathId('The message id') })

/**
 * `POST /api/admin/messages/retry`: the list's filters (the status is always `failed`), and how
 * many at most, oldest accepted first.
 */
export const RetryMessagesBody = Type.Object(
  {
    ...adminFilters,
    limit: Type.Integer({ minimum: 1, maximum: RETRY_LIMIT_MAX, default: RETRY_LIMIT_DEFAULT }),
  },
  { additionalProperties: false },
)
export type RetryMessagesBody = Static<typeof RetryMessagesBody>

export const RetryMessagesResult = Type.Object(
  {
    retried: Type.Integer({ minimum: 0 }),
    messageIds: Type.Array(Type.String({ format: 'uuid' })),
  },
  { additionalProperties: false },
)
export type RetryMessagesResult = Static<typeof RetryMessagesResult>
