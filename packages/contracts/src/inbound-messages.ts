import Type, { type Static } from 'typebox'
import { DataEnvelope, listQueryProperties } from './paging.ts'
import { Redacted } from './redaction.ts'

const closed = { additionalProperties: false } as const
const Str = Type.String()
const Opt = Type.Optional

/**
 * What a reply carries, normalized from the platform's message: exactly one of these keys. The
 * `message.received` event carries the same keys beside its own, so they never clash with them.
 */
export const InboundContent = Type.Union([
  Type.Object({ text: Str }, closed),
  Type.Object(
    {
      media: Type.Object(
        {
          /** The platform's media id: fetch the file with it (the Cloud API keeps it 30 days). */
          id: Str,
          mimeType: Str,
          sha256: Opt(Str),
          caption: Opt(Str),
          filename: Opt(Str),
        },
        closed,
      ),
    },
    closed,
  ),
  Type.Object(
    {
      /** A template's quick reply (`text`, `payload`), or an interactive reply button (`id`, `title`). */
      button: Type.Union([
        Type.Object({ text: Str, payload: Str }, closed),
        Type.Object({ id: Str, title: Str }, closed),
      ]),
    },
    closed,
  ),
  Type.Object({ listReply: Type.Object({ id: Str, title: Str, description: Opt(Str) }, closed) }, closed),
  Type.Object(
    {
      location: Type.Object(
        { latitude: Type.Number(), longitude: Type.Number(), name: Opt(Str), address: Opt(Str) },
        closed,
      ),
    },
    closed,
  ),
  Type.Object(
    {
      reaction: Type.Object(
        {
          /** Null when the user removed their reaction. */
          emoji: Type.Union([Str, Type.Null()]),
          /** The platform id (wamid) of the message reacted to. */
          messageId: Str,
        },
        closed,
      ),
    },
    closed,
  ),
  /** Contact cards the user shared, as the Cloud API gives them (`name`, `phones`, `emails`, …). */
  Type.Object({ contacts: Type.Array(Type.Record(Type.String(), Type.Unknown())) }, closed),
  /** Any other type (order, system, the platform's own `unsupported`…): kept, not read. */
  Type.Object({ unsupported: Type.Literal(true) }, closed),
  /** Redacted (the sender's content retention, or an erasure): nothing of what it said is kept. */
  Type.Object({}, { ...closed, description: 'Redacted: the content was removed (`redacted: true`)' }),
])
export type InboundContent = Static<typeof InboundContent>

/** A reply as an admin sees it. `apiKeyId` null: no key had sent to that phone from that number. */
export const InboundMessageView = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    platformMessageId: Str,
    phoneNumberId: Str,
    /** The user's phone, E.164; null when the platform withheld it (a user known by username). */
    phone: Type.Union([Str, Type.Null()]),
    /** The user's business-scoped user id (BSUID), when the platform gave one. */
    userId: Type.Union([Str, Type.Null()]),
    /** The user's WhatsApp username, when the platform gave one. */
    username: Type.Union([Str, Type.Null()]),
    type: Str,
    content: InboundContent,
    /** Its content was removed (`content` is `{}`): the sender's content retention, or an erasure. */
    redacted: Redacted,
    apiKeyId: Type.Union([Type.String({ format: 'uuid' }), Type.Null()]),
    inReplyTo: Type.Union([Type.String({ format: 'uuid' }), Type.Null()]),
    receivedAt: Type.String({ format: 'date-time' }),
    createdAt: Type.String({ format: 'date-time' }),
  },
  closed,
)
export type InboundMessageView = Static<typeof InboundMessageView>

export const INBOUND_MESSAGE_ORDER_FIELDS = ['receivedAt', 'createdAt'] as const

export const InboundMessageListQuery = Type.Object(
  {
    ...listQueryProperties,
    orderField: Type.Enum(INBOUND_MESSAGE_ORDER_FIELDS, { default: 'receivedAt' }),
    routed: Type.Optional(
      Type.Boolean({ description: 'true: routed to a key only; false: unroutable replies only' }),
    ),
    apiKeyId: Type.Optional(Type.String({ format: 'uuid' })),
    phoneNumberId: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  },
  closed,
)
export type InboundMessageListQuery = Static<typeof InboundMessageListQuery>

export const InboundMessageList = DataEnvelope(InboundMessageView)
export type InboundMessageList = Static<typeof InboundMessageList>

/** `POST /messages/:messageId/read`: mark a reply read, and show the typing indicator with it. */
export const MarkReadBody = Type.Object(
  {
    typing: Type.Optional(
      Type.Boolean({
        description: 'Also show "typing…" to the user (up to 25 seconds, or until your next message)',
      }),
    ),
  },
  closed,
)
export type MarkReadBody = Static<typeof MarkReadBody>

export const MarkedRead = Type.Object(
  {
    /** The reply's Dispatch id. */
    messageId: Type.String({ format: 'uuid' }),
    platformMessageId: Str,
    read: Type.Literal(true),
    typing: Type.Boolean(),
    /** False with the sandbox platform, which has no user to tell. */
    delivered: Type.Boolean(),
  },
  closed,
)
export type MarkedRead = Static<typeof MarkedRead>
