import Type, { type Static } from 'typebox'

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
  recipient_id: Type.Optional(Type.String()),
  biz_opaque_callback_data: Type.Optional(Type.String()),
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

/**
 * The envelope of a delivery. A body that does not have this shape is refused with 400; the items
 * of `statuses[]` are left unchecked here because each is checked on its own against
 * `WhatsAppStatus`.
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
            statuses: Type.Optional(
              Type.Array(Type.Unknown(), {
                description: 'Each item is checked against WhatsAppStatus; bad items are skipped and logged.',
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
