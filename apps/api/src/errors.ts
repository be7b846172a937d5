import { STATUS_CODES } from 'node:http'
import { type ErrorBody, type ErrorCode, ErrorCodes } from '@dispatch/contracts'

/** The one error type handlers throw; the error handler renders it as the spec's error body. */
export class AppError extends Error {
  override name = 'AppError'
  readonly errorCode: ErrorCode
  readonly statusCode: number
  readonly headers: Record<string, string>

  constructor(errorCode: ErrorCode, message: string, headers: Record<string, string> = {}) {
    super(message)
    this.errorCode = errorCode
    this.statusCode = ErrorCodes[errorCode]
    this.headers = headers
  }
}

/** 503 for a dependency that is down right now: the client should retry in a second. */
export const unavailable = (what: string) =>
  new AppError('SERVICE_UNAVAILABLE', `The service cannot ${what} right now; retry shortly`, {
    'retry-after': '1',
  })

export function errorBody(errorCode: ErrorCode | string, statusCode: number, message: string): ErrorBody {
  return { message, errorCode, statusCode, error: STATUS_CODES[statusCode] ?? 'Error' }
}
