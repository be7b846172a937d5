import Type, { type Static } from 'typebox'

/**
 * The part of a WhatsApp Cloud API webhook delivery that Dispatch reads: message status changes.
 * Meta adds fields over time, so unknown properties are allowed everywhere here.
 */
export const WhatsAppStatus = Type.Object({
  id: Type.String({ minLength: 1 }),
  status: Type.String(),
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

export const WhatsAppWebhook = Type.Object({
  object: Type.String(),
  entry: Type.Array(
    Type.Object({
      id: Type.Optional(Type.String()),
      changes: Type.Array(
        Type.Object({
          field: Type.String(),
          value: Type.Object({ statuses: Type.Optional(Type.Array(WhatsAppStatus)) }),
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
