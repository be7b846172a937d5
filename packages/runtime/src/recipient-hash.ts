import { createHash, hash } from 'node:crypto'
import Type from 'typebox'

/**
 * A recipient (phone or BSUID) as Dispatch keeps it where it must outlive the recipient's data: the
 * Redis copy of the suppression list (always), a suppression entry after an erasure, an erasure's
 * subject and its audit entry. HMAC-SHA256 under `ERASURE_HASH_KEY`, so the same recipient always
 * gives the same value (an opt-out still matches after an erasure) and a phone cannot be recovered
 * by hashing every number without the key. Never change the key: every hashed opt-out would stop
 * matching (see docs/data-lifecycle.md).
 */
export const recipientHashEnv = {
  /** At least 32 characters (`openssl rand -base64 32`); set it in production, once, for good. */
  ERASURE_HASH_KEY: Type.Optional(Type.String({ minLength: 32 })),
}

/** Outside production, and until one is set, a fixed key from this repository: it protects nothing. */
const DEVELOPMENT_HASH_KEY = 'dispatch-development-only-erasure-hash-key'

/**
 * What production cannot run with: no `ERASURE_HASH_KEY` (the development one would be used), or the
 * development one itself, which anyone with this repository can hash phone numbers under.
 */
export function erasureHashKeyProblems(env: {
  APP_ENV: string
  ERASURE_HASH_KEY?: string | undefined
}): string[] {
  if (env.APP_ENV !== 'production') return []
  if (!env.ERASURE_HASH_KEY) return ['  ERASURE_HASH_KEY: required in production (openssl rand -base64 32)']
  if (env.ERASURE_HASH_KEY === DEVELOPMENT_HASH_KEY) {
    return ['  ERASURE_HASH_KEY: is the development key from the repository; production needs its own']
  }
  return []
}

/** What a hashed recipient starts with: neither a phone (`+…`) nor a BSUID (`US.…`) can. */
export const RECIPIENT_HASH_PREFIX = 'hmac:'

export const isRecipientHash = (value: string) => value.startsWith(RECIPIENT_HASH_PREFIX)

/** Answers a recipient's hash; a value already hashed is answered as it is. */
export type RecipientHasher = (recipient: string) => string

const hashers = new Map<string, RecipientHasher>()

/** The hasher a process's configuration describes (one per key, kept: the accept path calls it per send). */
export function recipientHasher(env: { ERASURE_HASH_KEY?: string | undefined }): RecipientHasher {
  const key = env.ERASURE_HASH_KEY ?? DEVELOPMENT_HASH_KEY
  const known = hashers.get(key)
  if (known) return known
  const hmac = hmacSha256(key)
  const hasher: RecipientHasher = (recipient) =>
    isRecipientHash(recipient) ? recipient : RECIPIENT_HASH_PREFIX + hmac(recipient)
  hashers.set(key, hasher)
  return hasher
}

const BLOCK = 64

/**
 * HMAC-SHA256 under `key` (RFC 2104), base64url: the same bytes as `createHmac`, from two one-shot
 * `hash` calls with the key's pads worked out once. `createHmac` makes a native object per call,
 * which the accept path paid for in GC too: measured in `packages/bench/src/api/recipient-hash.ts`.
 */
export function hmacSha256(key: string): (message: string) => string {
  let bytes = Buffer.from(key, 'utf8')
  if (bytes.length > BLOCK) bytes = createHash('sha256').update(bytes).digest()
  const inner = Buffer.alloc(BLOCK, 0x36)
  const outer = Buffer.alloc(BLOCK + 32, 0x5c)
  for (let i = 0; i < bytes.length; i++) {
    inner[i] = (inner[i] as number) ^ (bytes[i] as number)
    outer[i] = (outer[i] as number) ^ (bytes[i] as number)
  }
  const innerPad = inner.toString('latin1')
  // The pad goes as a string (no Buffer per call) when it is ASCII, so UTF-8 keeps its bytes.
  const asciiPad = inner.every((byte) => byte < 0x80)
  // The inner digest comes back as a latin1 (`binary`) string and is written into the outer block in place:
  // no Buffer is made per call (0.8 µs a hash here, against 1.9 µs for createHmac).
  return (message) => {
    const innerHash = asciiPad
      ? hash('sha256', innerPad + message, 'binary')
      : hash('sha256', Buffer.concat([inner, Buffer.from(message, 'utf8')]), 'binary')
    outer.write(innerHash, BLOCK, 'binary')
    return hash('sha256', outer, 'base64url')
  }
}
