import Type, { type Static, type TSchema } from 'typebox'
import { USER_ID_PATTERN } from './recipients.ts'

/** The statuses a WhatsApp status webhook reports that move a message forward. */
export const WHATSAPP_STATUSES = ['sent', 'delivered', 'read', 'failed'] as const

/**
 * One item of `statuses[]`, as Dispatch reads it. The webhook route checks each item on its own
 * (a bad item is skipped, never the whole delivery). Meta adds fields over time, so unknown
 * properties are allowed everywhere here.
 */
export const WhatsAppStatus = Type.Object({
  id: Type.String({ minLength: 1 }),
  status: Type.Enum(WHATSAPP_STATUSES),
  /** Unix seconds, as a string. */
  timestamp: Type.String({ pattern: '^[0-9]{1,12}$' }),
  /** The user's phone, digits only; absent when Meta withholds it from a user known by username. */
  recipient_id: Type.Optional(Type.String()),
  /**
   * The user's business-scoped user id (BSUID), beside or instead of `recipient_id`. Read leniently
   * (a malformed one is ignored, never the status it came with).
   */
  recipient_user_id: Type.Optional(Type.String()),
  biz_opaque_callback_data: Type.Optional(Type.String()),
  /** What the message costs (`PMP` per message since July 2025). Lenient: a malformed one is ignored. */
  pricing: Type.Optional(Type.Unknown()),
  errors: Type.Optional(
    Type.Array(
      Type.Object({
        code: Type.Integer(),
        title: Type.Optional(Type.String()),
        message: Type.Optional(Type.String()),
      }),
    ),
  ),
})
export type WhatsAppStatus = Static<typeof WhatsAppStatus>

/** A wamid: Meta's ids are short; a cap keeps a stored one within its unique index's row size. */
const Wamid = Type.String({ minLength: 1, maxLength: 256 })
const Str = Type.String()
const Opt = <T extends TSchema>(schema: T) => Type.Optional(schema)

/**
 * One item of `messages[]` (a user's message to a business number), as Dispatch reads it: the
 * fields every item has. The body under the item's `type` key is checked on its own against
 * `WhatsAppInboundBodies` when Dispatch knows the type; other types are stored as unsupported.
 * `from` is the user's phone number, digits only (E.164 without the `+`), absent when Meta withholds
 * it from a user known by username; `from_user_id` is the user's business-scoped user id (BSUID).
 * At least one of the two is there (checked by the reader).
 */
export const WhatsAppInboundMessage = Type.Object({
  id: Wamid,
  from: Opt(Type.String({ pattern: '^[1-9][0-9]{7,14}$' })),
  from_user_id: Opt(Type.String({ pattern: USER_ID_PATTERN })),
  /** Unix seconds, as a string. */
  timestamp: Type.String({ pattern: '^[0-9]{1,12}$' }),
  type: Type.String({ minLength: 1, maxLength: 64 }),
  /** Set when the user replied to (quoted) a message, or pressed a button on one: its wamid. */
  context: Opt(Type.Object({ id: Opt(Wamid), from: Opt(Str) })),
})
export type WhatsAppInboundMessage = Static<typeof WhatsAppInboundMessage>

/** A change's `metadata`, as read for its messages: the business number they were sent to. */
export const WhatsAppMetadata = Type.Object({
  phone_number_id: Type.String({ pattern: '^[0-9]{1,32}$' }),
  display_phone_number: Opt(Str),
})
export type WhatsAppMetadata = Static<typeof WhatsAppMetadata>

/** The message types whose body is a media object (`{id, mime_type, sha256, …}`). */
export const WHATSAPP_MEDIA_TYPES = ['image', 'document', 'audio', 'video', 'sticker'] as const
export type WhatsAppMediaType = (typeof WHATSAPP_MEDIA_TYPES)[number]

const WhatsAppMedia = Type.Object({
  id: Type.String({ minLength: 1 }),
  mime_type: Str,
  sha256: Opt(Str),
  caption: Opt(Str),
  filename: Opt(Str),
})
const Reply = Type.Object({ id: Str, title: Str, description: Opt(Str) })

/** The body of each message type Dispatch normalizes, under the key named like the type. */
export const WhatsAppInboundBodies = {
  text: Type.Object({ body: Str }),
  ...(Object.fromEntries(WHATSAPP_MEDIA_TYPES.map((type) => [type, WhatsAppMedia])) as Record<
    WhatsAppMediaType,
    typeof WhatsAppMedia
  >),
  /** A template's quick-reply button. */
  button: Type.Object({ text: Str, payload: Str }),
  /** `type` says which reply it carries; other kinds (flows' `nfm_reply`, …) are unsupported. */
  interactive: Type.Object({ type: Str, button_reply: Opt(Reply), list_reply: Opt(Reply) }),
  location: Type.Object({
    latitude: Type.Number({ minimum: -90, maximum: 90 }),
    longitude: Type.Number({ minimum: -180, maximum: 180 }),
    name: Opt(Str),
    address: Opt(Str),
  }),
  /** Without `emoji` when the user removed their reaction. */
  reaction: Type.Object({ message_id: Wamid, emoji: Opt(Str) }),
  /** Contact cards the user shared, as the Cloud API's `contacts[]` (each with a `name`). */
  contacts: Type.Array(Type.Object({ name: Type.Object({ formatted_name: Str }) }), {
    minItems: 1,
    maxItems: 257,
  }),
} as const
export type WhatsAppInboundType = keyof typeof WhatsAppInboundBodies

/**
 * The envelope of a delivery. A body that does not have this shape is refused with 400; the items
 * of `statuses[]` and `messages[]` are left unchecked here because each is checked on its own
 * (against `WhatsAppStatus`, `WhatsAppInboundMessage`), and so is `metadata`: a change whose
 * business number is missing costs only its own messages, never the delivery.
 */
export const WhatsAppWebhook = Type.Object({
  object: Type.String(),
  entry: Type.Array(
    Type.Object({
      id: Type.Optional(Type.String()),
      changes: Type.Array(
        Type.Object({
          field: Type.String(),
          value: Type.Object({
            metadata: Type.Optional(
              Type.Unknown({
                description:
                  '`{phone_number_id, display_phone_number}`: the business number. Messages of a change without a phone_number_id are skipped and logged.',
              }),
            ),
            statuses: Type.Optional(
              Type.Array(Type.Unknown(), {
                description: 'Each item is checked against WhatsAppStatus; bad items are skipped and logged.',
              }),
            ),
            contacts: Type.Optional(
              Type.Array(Type.Unknown(), {
                description:
                  'The senders of `messages[]` (`profile.name`, `profile.username`, `wa_id`, `user_id`): read for the username and to pair a phone with its BSUID.',
              }),
            ),
            messages: Type.Optional(
              Type.Array(Type.Unknown(), {
                description:
                  'Messages users sent to the business number. Each item is checked against WhatsAppInboundMessage; bad items are skipped and logged.',
              }),
            ),
          }),
        }),
      ),
    }),
  ),
})
export type WhatsAppWebhook = Static<typeof WhatsAppWebhook>

export const WhatsAppVerifyQuery = Type.Object({
  'hub.mode': Type.String(),
  'hub.verify_token': Type.String(),
  'hub.challenge': Type.String({ maxLength: 1000 }),
})
