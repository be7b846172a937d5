import Type, { type Static } from 'typebox'

/**
 * An SMS provider's status callback, as Twilio posts it (form-encoded): the SMS's sid and its new
 * status, `ErrorCode` for `undelivered` and `failed`. Its other parameters (`AccountSid`, `From`,
 * `To`, `SmsSid`, `ApiVersion`, …) are signed too, so they are kept, not refused.
 */
export const SmsStatusCallback = Type.Object(
  {
    MessageSid: Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9]+$' }),
    MessageStatus: Type.String({ minLength: 1, maxLength: 32 }),
    ErrorCode: Type.Optional(Type.String({ maxLength: 16 })),
  },
  { additionalProperties: Type.String({ maxLength: 2000 }) },
)
export type SmsStatusCallback = Static<typeof SmsStatusCallback>
