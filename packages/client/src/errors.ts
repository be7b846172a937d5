/**
 * A non-2xx answer. The API answers every failure with `{message, errorCode, statusCode, error}`;
 * an answer without that body (a proxy's 502, say) gets `errorCode: 'UNEXPECTED_RESPONSE'`.
 */
export class DispatchError extends Error {
  override readonly name = 'DispatchError'
  /** The HTTP status. */
  readonly statusCode: number
  /** The API's error code, e.g. `VALIDATION_ERROR`, `RATE_LIMITED`; the list is in the README. */
  readonly errorCode: string
  /** The status's reason phrase, e.g. `Bad Request`. */
  readonly error: string
  /** Seconds the API asked to wait (429, 503), when the client stopped retrying. */
  readonly retryAfterSeconds: number | undefined
  /** The `x-request-id` of the answer, which the API's log lines carry. */
  readonly requestId: string | undefined

  constructor(
    body: { statusCode: number; errorCode: string; message: string; error: string },
    retryAfterSeconds?: number,
    requestId?: string,
  ) {
    super(body.message)
    this.statusCode = body.statusCode
    this.errorCode = body.errorCode
    this.error = body.error
    this.retryAfterSeconds = retryAfterSeconds
    this.requestId = requestId
  }

  static fromResponse(response: Response, body: unknown): DispatchError {
    const retryAfter = response.headers.get('retry-after')
    const seconds = retryAfter && /^\d+$/.test(retryAfter.trim()) ? Number(retryAfter) : undefined
    const requestId = response.headers.get('x-request-id') ?? undefined
    if (isErrorBody(body)) {
      return new DispatchError(body, seconds, requestId)
    }
    const unexpected = {
      statusCode: response.status,
      errorCode: 'UNEXPECTED_RESPONSE',
      message: `HTTP ${response.status} ${response.statusText}`.trim(),
      error: response.statusText,
    }
    return new DispatchError(unexpected, seconds, requestId)
  }
}

interface ErrorBody {
  message: string
  errorCode: string
  statusCode: number
  error: string
}

const isErrorBody = (body: unknown): body is ErrorBody => {
  const b = body as Partial<ErrorBody> | null
  return (
    typeof b === 'object' &&
    b !== null &&
    typeof b.message === 'string' &&
    typeof b.errorCode === 'string' &&
    typeof b.statusCode === 'number' &&
    typeof b.error === 'string'
  )
}
