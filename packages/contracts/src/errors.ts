import Type, { type Static } from 'typebox'

/**
 * Every error code the service answers with, and the HTTP status it always comes with.
 * One closed list: handlers throw `AppError` with one of these, never a bare status.
 */
export const ErrorCodes = {
  VALIDATION_ERROR: 400,
  API_KEY_MISSING: 401,
  API_KEY_INVALID: 401,
  ADMIN_AUTH_REQUIRED: 401,
  WEBHOOK_SIGNATURE_INVALID: 401,
  API_KEY_NOT_ACTIVE: 403,
  INSUFFICIENT_SCOPE: 403,
  TENANT_FORBIDDEN: 403,
  /** `priority: "high"` from a key an admin has not marked transactional. */
  PRIORITY_NOT_ALLOWED: 403,
  WEBHOOK_VERIFY_TOKEN_INVALID: 403,
  /** A change made with a console or portal session cookie, without its `x-csrf-token`. */
  CSRF_TOKEN_INVALID: 403,
  NOT_FOUND: 404,
  /** CONNECT, which no route of this API answers. */
  METHOD_NOT_ALLOWED: 405,
  /** The request did not arrive in full in time (Node's request and header timeouts). */
  REQUEST_TIMEOUT: 408,
  INVALID_STATE_TRANSITION: 409,
  /** A request with the same Idempotency-Key is still being processed; retry after a second. */
  IDEMPOTENCY_REQUEST_IN_PROGRESS: 409,
  OUT_OF_STOCK: 409,
  KIT_SERIAL_TAKEN: 409,
  /** A sender with this `phoneNumberId` exists already. */
  SENDER_EXISTS: 409,
  /** A sender still bound to keys (or still holding messages) cannot be deleted. */
  SENDER_IN_USE: 409,
  /** A sender pool still bound to keys (or a member still a bound key's own sender) cannot go. */
  SENDER_POOL_IN_USE: 409,
  /** A bounded collection is full (a key's webhook endpoints): the message names the bound. */
  LIMIT_EXCEEDED: 409,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  /** The request's headers are over Node's size limit (16 KiB by default). */
  HEADERS_TOO_LARGE: 431,
  IDEMPOTENCY_KEY_REUSED: 422,
  INVALID_REFERENCE: 422,
  /** A sender pool's members must all be of one business portfolio (the message names the odd one). */
  SENDER_POOL_BUSINESS_MISMATCH: 422,
  /** No template of that name and language in the sender's synced catalog. */
  TEMPLATE_NOT_FOUND: 422,
  /** The template exists but is not APPROVED (the message names its status). */
  TEMPLATE_NOT_APPROVED: 422,
  /** A variable the template needs is missing, or one it lacks was given, or one has the wrong type. */
  TEMPLATE_PARAMETERS_MISMATCH: 422,
  /** A free-form message to a recipient whose 24-hour customer-service window is known closed. */
  OUTSIDE_SERVICE_WINDOW: 422,
  /**
   * A template to a recipient outside their window while the sender's business portfolio has
   * reached its messaging limit, under `messagingLimitPolicy: refuse` (the message says when room frees).
   */
  MESSAGING_LIMIT_REACHED: 422,
  RECIPIENT_OPTED_OUT: 422,
  FREQUENCY_CAP_EXCEEDED: 422,
  RATE_LIMITED: 429,
  /** The key's daily quota (messages per UTC day) is spent; `Retry-After` runs to midnight UTC. */
  QUOTA_EXCEEDED: 429,
  /** The key's queued + scheduled messages are at their bound (MESSAGE_OUTSTANDING_MAX); `Retry-After`. */
  OUTSTANDING_LIMIT_REACHED: 429,
  INTERNAL_ERROR: 500,
  /** The messaging platform refused or garbled a request the service made on the caller's behalf. */
  PLATFORM_ERROR: 502,
  SERVICE_UNAVAILABLE: 503,
} as const

export type ErrorCode = keyof typeof ErrorCodes

/** The spec's error body: `error` is the HTTP reason phrase of `statusCode`. */
export const ErrorBody = Type.Object(
  {
    message: Type.String(),
    errorCode: Type.String({ examples: ['VALIDATION_ERROR'] }),
    statusCode: Type.Integer({ minimum: 400, maximum: 599 }),
    error: Type.String({ examples: ['Bad Request'] }),
  },
  { additionalProperties: false, description: 'The error body every failure answers with' },
)
export type ErrorBody = Static<typeof ErrorBody>
