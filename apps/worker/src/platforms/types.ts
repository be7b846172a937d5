import type { OutboundMessage } from '@dispatch/contracts'

/** What a platform is asked to deliver: our message id travels along for correlation. */
export interface Delivery {
  messageId: string
  message: OutboundMessage
}

export interface Delivered {
  platformMessageId: string
}

/** The one interface every messaging platform adapter implements. */
export interface MessagingPlatform {
  readonly name: string
  /** The business number messages go out from (`phone_number_id`): replies are routed on it. */
  readonly phoneNumberId: string
  deliver(delivery: Delivery): Promise<Delivered>
}

export type FailureKind =
  /** Worth another attempt, after a backoff. */
  | 'retryable'
  /** The platform asks us to slow down: pause the queue, spend no attempt. */
  | 'rate-limited'
  /** Will fail the same way again: fail the message now. */
  | 'permanent'
  /** Too many messages to this one recipient (131056): delay this message only, spend no attempt. */
  | 'recipient-throttled'
  /** The sender's access token was refused (190, 401): pause the sender, alert, spend no attempt. */
  | 'token-refused'

/** A classified delivery failure: `code` is the platform's error code, or NETWORK, TIMEOUT, HTTP_<status>. */
export class PlatformError extends Error {
  override name = 'PlatformError'
  readonly code: string
  readonly kind: FailureKind
  readonly retryAfterMs: number | undefined
  /** Set when ops must act (an expired token): logged at error level with this alert name. */
  readonly alert: string | undefined

  constructor(
    code: string,
    kind: FailureKind,
    message: string,
    extra: { retryAfterMs?: number; alert?: string } = {},
  ) {
    super(message)
    this.code = code
    this.kind = kind
    this.retryAfterMs = extra.retryAfterMs
    this.alert = extra.alert
  }
}
