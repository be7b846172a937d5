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
    /** What the SMS cost, when the provider says (Twilio's sign: negative, a charge). */
    Price: Type.Optional(Type.String({ maxLength: 32 })),
    PriceUnit: Type.Optional(Type.String({ maxLength: 8 })),
  },
  { additionalProperties: Type.String({ maxLength: 2000 }) },
)
export type SmsStatusCallback = Static<typeof SmsStatusCallback>

/**
 * A message's fallback timer (queue `QueueNames.smsFallbackTimers`): delayed by its
 * `fallback.afterSeconds` ("no `delivered` in time"), armed when WhatsApp took the message; or made
 * due at once from its 131026 hold (`smsFallbackHoldKey`) by a status webhook reporting 131026.
 * Like the message's own job, it is the only holder of the SMS's text; its id is the message's, so
 * a timer is added once.
 */
export const SmsFallbackTimerJob = Type.Object(
  {
    messageId: Type.String({ format: 'uuid' }),
    acceptedAt: Type.String({ format: 'date-time' }),
    /** The recipient, E.164. */
    to: Type.String({ minLength: 2, maxLength: 20 }),
    text: Type.String({ minLength: 1, maxLength: 1600 }),
    /** When WhatsApp took the message (its platform id recorded). */
    sentAt: Type.String({ format: 'date-time' }),
    /** Made from a hold (no `afterSeconds`): it sends only for a 131026, never for a timeout. */
    undeliverableOnly: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
)
export type SmsFallbackTimerJob = Static<typeof SmsFallbackTimerJob>

/** WhatsApp's "message undeliverable" (not on WhatsApp, or unreachable): what an SMS falls back from. */
export const UNDELIVERABLE_CODE = '131026'

/**
 * How long after its send a message's 131026 still brings its SMS: its hold lives this long, and a
 * sent record's kept SMS is read only this long. Meta reports it within seconds or minutes.
 */
export const UNDELIVERABLE_HOLD_SECONDS = 86_400

/**
 * A message's 131026 hold: what its timer would need (the job's fields but the id), kept as one
 * Redis string for a day after WhatsApp took a message whose fallback has no `afterSeconds` and
 * whose content is discarded (any other's sent record keeps its SMS), beside the timers' queue
 * (`prefix` its queue prefix). A 131026 status webhook turns it into a timer run at once; nothing
 * else reads it, and it expires unread otherwise.
 */
export const smsFallbackHoldKey = (prefix: string, messageId: string) =>
  `${prefix}:sms-fallback-timers:hold:${messageId}`
