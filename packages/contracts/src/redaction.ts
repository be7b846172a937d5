import Type, { type Static } from 'typebox'
import type { MessageType } from './message-types.ts'

/** The longest a key or sender may keep content before it is redacted: a year, in hours. */
export const CONTENT_RETENTION_MAX_HOURS = 8760

/**
 * How long a key's messages (or a sender's replies) keep their content in Postgres: `retain`
 * (the default: until erased), `discard` (never written: only the queue holds it, until delivery),
 * or a number of hours after acceptance (or receipt) at which it is redacted.
 */
export const ContentRetention = Type.Union(
  [
    Type.Literal('retain'),
    Type.Literal('discard'),
    Type.Integer({ minimum: 1, maximum: CONTENT_RETENTION_MAX_HOURS }),
  ],
  {
    description:
      '`retain` (default): content is kept. `discard`: content is never stored in Postgres (delivery ' +
      'works from the queue). 1–8760: content is redacted that many hours after the message was accepted.',
  },
)
export type ContentRetention = Static<typeof ContentRetention>

/**
 * As stored, in one nullable integer column: how many hours content is kept. Null: `retain`;
 * 0: `discard` (kept zero hours); N: N hours.
 */
export const retentionHours = (value: ContentRetention): number | null =>
  value === 'retain' ? null : value === 'discard' ? 0 : value

export const contentRetentionOf = (hours: number | null): ContentRetention =>
  hours === null ? 'retain' : hours === 0 ? 'discard' : hours

/** `redacted: true` on a view or event whose content was removed; absent while it is kept. */
export const Redacted = Type.Optional(
  Type.Literal(true, { description: 'Present (true) when the content was removed; absent while kept' }),
)
export const redactedField = (redactedAt: Date | null) =>
  redactedAt === null ? {} : { redacted: true as const }

type Body = Record<string, unknown>
/** A field of a body, as the path to it (`['interactive', 'type']`). */
export type BodyPath = readonly [string] | readonly [string, string]

/**
 * What a message body keeps once its content is removed, per type: an allow-list, so a field added
 * to a kind later is removed until someone decides it is not content. Every kind keeps the message
 * it quotes, its category and priority; a template which template and language (not its variables);
 * an interactive message its kind (`button`, `list`…); a reaction the message it reacts to (not the
 * emoji). Text, captions, variables, media ids and links, file names, locations, contact cards and
 * interactive bodies all go. The one definition: `redactPayload` applies it in TypeScript, and the
 * erasure's statements in SQL (packages/db, `stripContentSql`), both from these paths.
 */
export const KEPT_FIELDS: { all: readonly BodyPath[] } & { [T in MessageType]: readonly BodyPath[] } = {
  all: [['replyTo'], ['category'], ['priority']],
  text: [],
  template: [['templateId'], ['language']],
  image: [],
  document: [],
  video: [],
  audio: [],
  sticker: [],
  location: [],
  contacts: [],
  interactive: [['interactive', 'type']],
  reaction: [['reaction', 'messageId']],
}

/** The recipient's fields: kept by redaction (counts and statuses stay attributable), not by an erasure. */
export const RECIPIENT_FIELDS: readonly BodyPath[] = [['phone'], ['userId']]

/**
 * A send body (as a job carries it) without its content: what Postgres may hold of it. With
 * `recipient: false` (an erasure), without who it was for either.
 */
export function redactPayload(type: MessageType, body: object, options: { recipient?: boolean } = {}): Body {
  const paths = [
    ...(options.recipient === false ? [] : RECIPIENT_FIELDS),
    ...KEPT_FIELDS.all,
    ...(KEPT_FIELDS[type] ?? []),
  ]
  const kept: Body = {}
  for (const [field, inner] of paths) {
    const value = (body as Body)[field]
    if (value === undefined) continue
    if (inner === undefined) {
      kept[field] = value
      continue
    }
    const innerValue = typeof value === 'object' && value !== null ? (value as Body)[inner] : undefined
    if (innerValue !== undefined) kept[field] = { ...(kept[field] as Body), [inner]: innerValue }
  }
  return kept
}

/**
 * The keys of a reply's content (`InboundContent`), as they also sit in its `message.received`
 * event's `data`: what redaction removes from both. A redacted reply's content is `{}`.
 */
export const INBOUND_CONTENT_KEYS = [
  'text',
  'media',
  'button',
  'listReply',
  'location',
  'reaction',
  'contacts',
  'unsupported',
] as const

/** When content kept `hours` from `from` is due for redaction; null when it is not timed. */
export const redactAfter = (from: string | Date, hours: number | undefined | null): Date | null =>
  hours ? new Date(new Date(from).getTime() + hours * 3600_000) : null
