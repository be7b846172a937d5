/** One SMS to send: our message id travels along for correlation (logs, the fake's records). */
export interface SmsSend {
  messageId: string
  /** The recipient, E.164. */
  to: string
  text: string
}

export interface SmsAccepted {
  /** The provider's id of the SMS (Twilio's `SM…` sid): its status callbacks name it. */
  providerMessageId: string
  /** The provider's status in its answer (`queued`, `accepted`…). */
  status: string
}

/** The one interface every SMS provider adapter implements (docs/fallback.md, "The SMS provider"). */
export interface SmsProvider {
  readonly name: string
  send(sms: SmsSend): Promise<SmsAccepted>
  /**
   * What the provider charged for an SMS it took, as its record of the SMS says now: undefined while
   * it says none (a price comes a while after the delivery). Absent: the provider tells no prices.
   */
  price?(providerMessageId: string): Promise<{ amount: string; currency: string } | undefined>
}

export type SmsFailureKind =
  /** Worth another try later (a 5xx, a network error). */
  | 'retryable'
  /** The provider asks us to slow down (429, 20429). */
  | 'rate-limited'
  /** Will fail the same way again (a bad number, an unsubscribed recipient, a refused body). */
  | 'permanent'
  /** The account's credentials were refused (401, 403, 20003): ops must act. */
  | 'credentials-refused'

/**
 * A classified SMS provider failure. `outcomeKnown` is what the at-most-once rule reads: false when
 * the provider may have taken the SMS all the same (a timeout, a connection lost after the request
 * went, a 5xx, a 2xx without an id), so it must never be sent again, whatever `kind` says.
 */
export class SmsProviderError extends Error {
  override name = 'SmsProviderError'
  readonly code: string
  readonly kind: SmsFailureKind
  readonly outcomeKnown: boolean
  readonly retryAfterMs: number | undefined

  constructor(
    code: string,
    kind: SmsFailureKind,
    message: string,
    extra: { outcomeKnown: boolean; retryAfterMs?: number | undefined },
  ) {
    super(message)
    this.code = code
    this.kind = kind
    this.outcomeKnown = extra.outcomeKnown
    this.retryAfterMs = extra.retryAfterMs
  }
}
