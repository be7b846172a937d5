import Type, { type Static } from 'typebox'
import { MESSAGE_STATUSES, MESSAGE_TYPES } from './message-types.ts'
import { ClientReference, MESSAGE_CHANNELS, MessageView, Phone } from './messages.ts'
import { listQueryProperties, PageMeta } from './paging.ts'
import { UserId } from './recipients.ts'

/** `createdAt` is when the message was accepted (its 202); `updatedAt` its last change. */
export const MESSAGE_ORDER_FIELDS = ['createdAt', 'updatedAt'] as const

/**
 * A bound of the acceptance window: a calendar day (UTC) or an instant with its offset. Checked by
 * `parseTimeBound` rather than by formats here, so a bad value gets one message naming both forms.
 */
const AcceptedBound = (edge: string) =>
  Type.String({
    maxLength: 40,
    description: `${edge} of the acceptance time, inclusive: a date (YYYY-MM-DD, the whole UTC day) or a date-time with its offset (RFC 3339)`,
    examples: ['2026-03-01', '2026-03-01T09:30:00-03:00'],
  })

/**
 * The `fallback` filter's values: a channel fallback's states (docs/fallback.md), and `none` for a
 * message with no fallback decided.
 */
export const FALLBACK_FILTERS = [
  'none',
  'decided',
  'calling',
  'sent',
  'failed',
  'unknown',
  'withdrawn',
] as const
export type FallbackFilter = (typeof FALLBACK_FILTERS)[number]

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
    userId: Type.Optional(UserId),
    clientReference: Type.Optional(ClientReference),
    batchId: Type.Optional(Type.String({ format: 'uuid' })),
    startDate: Type.Optional(AcceptedBound('Start')),
    endDate: Type.Optional(AcceptedBound('End')),
    channel: Type.Optional(
      Type.Enum(MESSAGE_CHANNELS, {
        description:
          '`sms`: its channel fallback sent the SMS (the provider took it); `whatsapp`: every other',
      }),
    ),
    fallback: Type.Optional(
      Type.Array(Type.Enum(FALLBACK_FILTERS), {
        maxItems: FALLBACK_FILTERS.length,
        description:
          "Its channel fallback's state (`sent`, `failed`, `unknown`, …), or `none` (no fallback decided); a list",
      }),
    ),
  },
  { additionalProperties: false },
)
export type MessageListQuery = Static<typeof MessageListQuery>

/** Matches are counted up to this many (or to the end of the requested page, if further). */
export const MESSAGE_COUNT_LIMIT = 10_000

/**
 * The paging envelope with `data`, plus `itemCountExact`: `false` when more messages matched than
 * were counted, `itemCount` then being a lower bound (see docs/statuses.md, Listing messages).
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

const DATE = /^([1-9][0-9]{3})-([0-9]{2})-([0-9]{2})$/
const DATE_TIME =
  /^([1-9][0-9]{3}-[0-9]{2}-[0-9]{2})T([01][0-9]|2[0-3]):([0-5][0-9]):([0-5][0-9])(\.[0-9]{1,6})?(Z|[+-](?:0[0-9]|1[0-4]):[0-5][0-9])$/i

export const TIME_BOUND_RULE =
  'must be a date (2026-03-01) or a date-time with its offset (2026-03-01T09:30:00Z, …-03:00)'

/** A bound as Postgres reads it: a day's midnight (UTC) or the instant as given. */
export interface TimeBound {
  at: string
  wholeDay: boolean
}

/**
 * `2026-03-01` (that UTC day) or an RFC 3339 date-time with an offset, up to microseconds; a day
 * that does not exist (2026-02-30) or a year before 1000 is refused (Postgres has no year 0).
 */
export function parseTimeBound(value: string): TimeBound | undefined {
  const time = DATE_TIME.exec(value)
  const day = time ? (time[1] as string) : value
  const [, year, month, date] = (DATE.exec(day) ?? []).map(Number)
  if (year === undefined || month === undefined || date === undefined) return undefined
  const midnight = new Date(Date.UTC(year, month - 1, date))
  if (midnight.getUTCMonth() !== month - 1 || midnight.getUTCDate() !== date) return undefined
  return time ? { at: value.toUpperCase(), wholeDay: false } : { at: `${day}T00:00:00Z`, wholeDay: true }
}

export interface AcceptedWindow {
  from?: string | undefined
  /** Exclusive: the day after an end date. */
  before?: string | undefined
  /** Inclusive: an end date-time. */
  until?: string | undefined
}

/**
 * The acceptance window of two bounds, both inclusive: from the start (a day from its midnight)
 * until the end (a day through its last instant: before the next midnight).
 */
export function acceptedWindow(start?: TimeBound, end?: TimeBound): AcceptedWindow {
  return {
    from: start?.at,
    before: end?.wholeDay ? new Date(Date.parse(end.at) + 86_400_000).toISOString() : undefined,
    until: end && !end.wholeDay ? end.at : undefined,
  }
}
