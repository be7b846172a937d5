import { PlatformError } from './types.ts'

/** Graph API error codes worth retrying: temporary errors, and a throughput upgrade under way. */
const RETRYABLE_CODES = new Set([1, 2, 131000, 131057])
/** Pair rate limit: about one message per 6 s to the same recipient, with short bursts. */
const PAIR_RATE_LIMIT = 131056
const PAIR_RATE_DELAY_MS = 6000
/** Codes that mean "slow down" for the whole phone number: pause, spend no attempt. */
const RATE_LIMIT_CODES = new Set([130429])
/** Codes that mean the same request will always fail (invalid parameter, recipient, template…). */
const PERMANENT_CODES = new Set([100, 131008, 131026, 131047, 132000, 132001])
const TOKEN_EXPIRED = 190
const DEFAULT_RATE_LIMIT_PAUSE_MS = 1000

/** `Retry-After` in seconds or as an HTTP date, in milliseconds from now. */
export function parseRetryAfter(value: string | null, now = Date.now()): number | undefined {
  if (!value) return undefined
  const seconds = Number(value)
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000)
  const at = Date.parse(value)
  return Number.isNaN(at) ? undefined : Math.max(0, at - now)
}

/**
 * Classifies a failed Cloud API answer by the Graph error code first, then the HTTP status:
 * the code is the precise signal, the status the fallback for answers without one.
 */
export function classifyPlatformAnswer(
  status: number,
  graphCode: number | undefined,
  message: string,
  retryAfter: string | null,
): PlatformError {
  const code = graphCode === undefined ? `HTTP_${status}` : String(graphCode)
  const text = message || `HTTP ${status}`
  if (graphCode === TOKEN_EXPIRED || (graphCode === undefined && status === 401)) {
    return new PlatformError(code, 'token-refused', text, { alert: 'platform-token-expired' })
  }
  if (graphCode === PAIR_RATE_LIMIT) {
    return new PlatformError(code, 'recipient-throttled', text, {
      retryAfterMs: parseRetryAfter(retryAfter) ?? PAIR_RATE_DELAY_MS,
    })
  }
  if (status === 429 || (graphCode !== undefined && RATE_LIMIT_CODES.has(graphCode))) {
    return new PlatformError(code, 'rate-limited', text, {
      retryAfterMs: parseRetryAfter(retryAfter) ?? DEFAULT_RATE_LIMIT_PAUSE_MS,
    })
  }
  if (graphCode !== undefined && RETRYABLE_CODES.has(graphCode))
    return new PlatformError(code, 'retryable', text)
  if (graphCode !== undefined && PERMANENT_CODES.has(graphCode))
    return new PlatformError(code, 'permanent', text)
  if (status >= 500) return new PlatformError(code, 'retryable', text)
  return new PlatformError(code, 'permanent', text)
}

/** A request that got no answer: a timeout or a network error, both worth retrying. */
export function classifyTransportFailure(error: unknown): PlatformError {
  const name = (error as Error)?.name
  if (name === 'TimeoutError' || name === 'AbortError') {
    return new PlatformError('TIMEOUT', 'retryable', 'The platform did not answer in time')
  }
  const cause = (error as { cause?: { code?: string } })?.cause?.code
  return new PlatformError(
    'NETWORK',
    'retryable',
    `Network error${cause ? ` (${cause})` : ''}: ${(error as Error)?.message}`,
  )
}
