/** Every kind of message Dispatch sends: the spec's three, then the rest of the Cloud API's. */
export const MESSAGE_TYPES = [
  'text',
  'template',
  'image',
  'document',
  'video',
  'audio',
  'sticker',
  'location',
  'contacts',
  'interactive',
  'reaction',
] as const
export type MessageType = (typeof MESSAGE_TYPES)[number]

/**
 * A message's life. `scheduled` (a `sendAt` ahead) → `queued` → `sending` → `sent` come from our
 * side; `delivered`, `read` come from the platform's webhooks; `failed` from either. `expired` (not
 * handed to the platform within its validity) and `canceled` (by its sender before a worker took
 * it) end a message that was never sent. The order is the rank (and the Postgres enum's order), so
 * a late event never moves a message backwards (a `delivered` arriving after `read` changes
 * nothing), and nothing moves a message out of `failed`, `expired` or `canceled`.
 */
export const MESSAGE_STATUSES = [
  'scheduled',
  'queued',
  'sending',
  'sent',
  'delivered',
  'read',
  'failed',
  'expired',
  'canceled',
] as const
export type MessageStatus = (typeof MESSAGE_STATUSES)[number]
export const MESSAGE_STATUS_RANK = Object.fromEntries(MESSAGE_STATUSES.map((s, i) => [s, i])) as Record<
  MessageStatus,
  number
>
