import { createHmac, createSecretKey, type KeyObject } from 'node:crypto'

/** The three Standard Webhooks headers every delivery carries. */
export interface WebhookSignatureHeaders {
  'webhook-id': string
  'webhook-timestamp': string
  'webhook-signature': string
}

export interface WebhookToSign {
  /** The message id, the same on every attempt of one message so receivers can drop repeats. */
  id: string
  /** When this attempt is sent: a Date or Unix seconds. Receivers reject one more than 5 min off. */
  timestamp: Date | number
  /** The exact body that will be sent: the signature covers its bytes. */
  body: string
  /** The endpoint's secrets, `whsec_<base64>`: several while a secret is being rotated. */
  secrets: readonly string[]
}

const SECRET_PREFIX = 'whsec_'
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/

/**
 * Keys already made, by secret: `createHmac` given raw bytes rebuilds its key on every call (about
 * 30 µs), a KeyObject does not (about 4 µs). Bounded: cleared when it grows past the limit.
 */
const keys = new Map<string, KeyObject>()
const MAX_KEYS = 10_000

/** The HMAC key of a `whsec_` secret. The error never quotes the secret. */
function signingKey(secret: string, index: number): KeyObject {
  const known = keys.get(secret)
  if (known) return known
  const encoded = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : ''
  if (!BASE64.test(encoded)) {
    throw new Error(`webhook secret #${index + 1} is not "whsec_" followed by base64`)
  }
  const key = createSecretKey(Buffer.from(encoded, 'base64'))
  if (keys.size >= MAX_KEYS) keys.clear()
  keys.set(secret, key)
  return key
}

/**
 * Signs one delivery the Standard Webhooks way: `webhook-signature` holds `v1,<base64
 * HMAC-SHA256(key, "id.timestamp.body")>` once per secret, space-separated, so a receiver holding
 * either the old or the new secret during a rotation accepts it. Throws when there is no secret or
 * one is malformed: an unsigned webhook must never go out.
 */
export function signWebhook({ id, timestamp, body, secrets }: WebhookToSign): WebhookSignatureHeaders {
  if (secrets.length === 0) throw new Error('a webhook needs at least one secret to be signed')
  const seconds = typeof timestamp === 'number' ? timestamp : Math.floor(timestamp.getTime() / 1000)
  if (!Number.isSafeInteger(seconds) || seconds < 0) {
    throw new Error(`webhook timestamp must be whole Unix seconds, got ${seconds}`)
  }
  const signedContent = `${id}.${seconds}.${body}`
  const signatures = secrets.map(
    (secret, index) =>
      `v1,${createHmac('sha256', signingKey(secret, index)).update(signedContent).digest('base64')}`,
  )
  return {
    'webhook-id': id,
    'webhook-timestamp': String(seconds),
    'webhook-signature': signatures.join(' '),
  }
}
