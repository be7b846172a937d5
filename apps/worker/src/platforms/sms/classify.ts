import { parseRetryAfter } from '../classify.ts'
import { SmsProviderError } from './types.ts'

/** Twilio's "Too Many Requests" error code, with HTTP 429. */
const TOO_MANY_REQUESTS = 20429
/** Twilio's "Authenticate" error code (a wrong account SID or auth token), with HTTP 401. */
const AUTHENTICATE = 20003
const DEFAULT_RATE_LIMIT_PAUSE_MS = 1000

/**
 * Classifies a failed answer of Twilio's Messages API by its error code first, then the HTTP status,
 * as `../classify.ts` does for the Cloud API. An error answer (4xx) means the SMS was not created;
 * a 5xx may hide one that was, so its outcome is unknown.
 */
export function classifySmsAnswer(
  status: number,
  providerCode: number | undefined,
  message: string,
  retryAfter: string | null,
): SmsProviderError {
  const code = providerCode === undefined ? `HTTP_${status}` : String(providerCode)
  const text = message || `HTTP ${status}`
  if (providerCode === AUTHENTICATE || status === 401 || status === 403) {
    return new SmsProviderError(code, 'credentials-refused', text, { outcomeKnown: true })
  }
  if (status === 429 || providerCode === TOO_MANY_REQUESTS) {
    return new SmsProviderError(code, 'rate-limited', text, {
      outcomeKnown: true,
      retryAfterMs: parseRetryAfter(retryAfter) ?? DEFAULT_RATE_LIMIT_PAUSE_MS,
    })
  }
  if (status >= 500) return new SmsProviderError(code, 'retryable', text, { outcomeKnown: false })
  return new SmsProviderError(code, 'permanent', text, { outcomeKnown: true })
}

/** Network errors met before the request left: nothing reached the provider. */
const BEFORE_REQUEST = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH'])

/**
 * A request that got no answer. Refused or unresolved before it left: retryable, nothing sent. A
 * timeout or a connection lost midway: the provider may have created the SMS, so the outcome is
 * unknown.
 */
export function classifySmsTransportFailure(error: unknown): SmsProviderError {
  const name = (error as Error)?.name
  if (name === 'TimeoutError' || name === 'AbortError') {
    return new SmsProviderError('TIMEOUT', 'retryable', 'The SMS provider did not answer in time', {
      outcomeKnown: false,
    })
  }
  const cause = (error as { cause?: { code?: string } })?.cause?.code
  return new SmsProviderError(
    'NETWORK',
    'retryable',
    `Network error${cause ? ` (${cause})` : ''}: ${(error as Error)?.message}`,
    { outcomeKnown: cause !== undefined && BEFORE_REQUEST.has(cause) },
  )
}
