import { createHmac, timingSafeEqual } from 'node:crypto'

const HEADER = 'x-hub-signature-256'
/** Exactly what Meta sends: the lowercase prefix and the 32-byte HMAC in hex, nothing around it. */
const SIGNATURE = /^sha256=([0-9a-fA-F]{64})$/

/**
 * The one `X-Hub-Signature-256` value, read from the raw headers: sent twice (which Node would
 * join with ", ") or not at all, there is none.
 */
export function signatureHeader(rawHeaders: readonly string[]): string | undefined {
  let found: string | undefined
  let count = 0
  for (let i = 0; i < rawHeaders.length; i += 2) {
    if (rawHeaders[i]?.toLowerCase() === HEADER) {
      count++
      found = rawHeaders[i + 1]
    }
  }
  return count === 1 ? found : undefined
}

/** Whether a header is shaped as a signature at all: one that is not is refused before the body is read. */
export const signatureWellFormed = (header: string | undefined) =>
  header !== undefined && SIGNATURE.test(header)

/** `sha256=<64 hex>` of the raw body under the app secret, parsed strictly, compared in constant time. */
export function signatureMatches(secret: string, body: Buffer, header: string | undefined): boolean {
  const hex = header === undefined ? undefined : SIGNATURE.exec(header)?.[1]
  if (!hex) return false
  const given = Buffer.from(hex, 'hex')
  const expected = createHmac('sha256', secret).update(body).digest()
  return given.length === expected.length && timingSafeEqual(given, expected)
}
