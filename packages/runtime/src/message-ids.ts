import { randomUUID } from 'node:crypto'

/**
 * Message ids are UUIDv7 (RFC 9562): the first 48 bits are the acceptance time in milliseconds, the
 * same instant as the message's `acceptedAt`. Messages are stored in partitions by `accepted_at`
 * (docs/data-lifecycle.md), so a lookup by id reads the time off the id and touches one
 * partition instead of every one. Ids from before (UUIDv4) carry no time and are found by id alone.
 *
 * Made from a v4 UUID (Node's, drawn from a pool of random bytes: no allocation and no draw per id
 * on the accept path) with the time written over its first 48 bits and the version set to 7; its
 * other 74 random bits and its variant are what v7 asks for.
 */
export function messageIdAt(acceptedAtMs: number): string {
  const time = acceptedAtMs.toString(16).padStart(12, '0')
  return `${time.slice(0, 8)}-${time.slice(8, 12)}-7${randomUUID().slice(15)}`
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
