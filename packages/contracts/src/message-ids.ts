import { randomBytes } from 'node:crypto'

/**
 * Message ids are UUIDv7 (RFC 9562): the first 48 bits are the acceptance time in milliseconds, the
 * same instant as the message's `acceptedAt`. Messages are stored in partitions by `accepted_at`
 * (docs/operations.md, Data lifecycle), so a lookup by id reads the time off the id and touches one
 * partition instead of every one. Ids from before (UUIDv4) carry no time and are found by id alone.
 */
export function messageIdAt(acceptedAtMs: number): string {
  const bytes = randomBytes(16)
  const time = BigInt(acceptedAtMs)
  for (let i = 0; i < 6; i++) bytes[i] = Number((time >> BigInt(8 * (5 - i))) & 0xffn)
  bytes[6] = ((bytes[6] ?? 0) & 0x0f) | 0x70 // version 7
  bytes[8] = ((bytes[8] ?? 0) & 0x3f) | 0x80 // variant 10
  const hex = bytes.toString('hex')
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
}

/** The acceptance time a UUIDv7 message id carries, in milliseconds; null for any other id. */
export function acceptedAtOfMessageId(id: string): number | null {
  if (id.length !== 36 || id[14] !== '7') return null
  const ms = Number.parseInt(id.slice(0, 8) + id.slice(9, 13), 16)
  return Number.isFinite(ms) ? ms : null
}

/**
 * The time a webhook event's id carries, in milliseconds; null for an id that carries none. Events
 * are stored in partitions by `created_at` and, since migration 0024, their ids (the `webhook-id`
 * header: `msg_` and 32 hex digits) are the hex of a UUIDv7 of that instant, written by the database
 * (`dispatch_emit_webhook_event`). Older ids are random and found by id alone.
 */
export function createdAtOfWebhookEventId(id: string): number | null {
  if (id.length !== 36 || !id.startsWith('msg_') || id[16] !== '7') return null
  const ms = Number.parseInt(id.slice(4, 16), 16)
  return Number.isFinite(ms) ? ms : null
}
