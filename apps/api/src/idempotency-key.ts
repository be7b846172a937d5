import { createHash } from 'node:crypto'
import { AppError } from './errors.ts'

/** 1 to 255 printable ASCII characters, as Stripe and Twilio take them. */
const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/

/** The request's `Idempotency-Key`, if it sent one; a malformed one is a 400. */
export function readIdempotencyKey(header: string | string[] | undefined): string | undefined {
  if (header === undefined) return undefined
  if (typeof header !== 'string' || !IDEMPOTENCY_KEY.test(header)) {
    throw new AppError(
      'VALIDATION_ERROR',
      'headers.idempotency-key must be 1 to 255 printable ASCII characters',
    )
  }
  return header
}

/** JSON with object keys sorted, so the same body sent with its keys reordered is the same body. */
const canonical = (value: unknown): string =>
  Array.isArray(value)
    ? `[${value.map(canonical).join(',')}]`
    : value && typeof value === 'object'
      ? `{${Object.keys(value)
          .sort()
          .map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`)
          .join(',')}}`
      : JSON.stringify(value)

export const sha256 = (text: string) => createHash('sha256').update(text).digest('hex')

/** What makes two requests under one key "the same request": the route and the body's content. */
export const requestFingerprint = (route: string, body: unknown) => sha256(`${route} ${canonical(body)}`)
