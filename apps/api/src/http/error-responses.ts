import { ErrorBody, type ErrorCode, ErrorCodes } from '@dispatch/contracts'

/** Documents the error answers a route can give, each with the spec's error body. */
export function errorResponses(...codes: ErrorCode[]) {
  return Object.fromEntries(codes.map((code) => [ErrorCodes[code], ErrorBody]))
}
