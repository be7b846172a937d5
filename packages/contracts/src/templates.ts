import Type, { type Static } from 'typebox'
import { DataEnvelope, listQueryProperties } from './paging.ts'

/**
 * A sender's WhatsApp message templates, as Dispatch keeps them: synced from the Cloud API
 * (`GET /{waba-id}/message_templates`) and kept current by Meta's template webhooks. Statuses,
 * categories and qualities are Meta's own words, kept as Meta sends them (upper case).
 */
export const TEMPLATE_STATUSES = [
  'APPROVED',
  'PENDING',
  'REJECTED',
  'PAUSED',
  'DISABLED',
  'PENDING_DELETION',
  'DELETED',
  'ARCHIVED',
  'IN_APPEAL',
  'LIMIT_EXCEEDED',
] as const
export type TemplateStatus = (typeof TEMPLATE_STATUSES)[number]

export const TEMPLATE_CATEGORIES = ['MARKETING', 'UTILITY', 'AUTHENTICATION'] as const
export type TemplateCategory = (typeof TEMPLATE_CATEGORIES)[number]

export const TEMPLATE_QUALITIES = ['GREEN', 'YELLOW', 'RED', 'UNKNOWN'] as const
export type TemplateQuality = (typeof TEMPLATE_QUALITIES)[number]

/** Media a template header may carry: a send fills it with `headerVariables[0]` of that type. */
export const TEMPLATE_MEDIA_HEADERS = ['image', 'video', 'document'] as const

/**
 * What a send of this template must fill, read from its components (see `templateVariables`):
 * - `body`: the body's placeholders, in order: `["1", "2"]` for positional `{{1}} {{2}}`, or the
 *   names of named ones (`{{first_name}}`); a send gives them in `variables`.
 * - `header`: `null` without a variable header; `{type: "text", variables}` for a text header
 *   with a placeholder (`headerVariables[0]`, type `text`, its `value`); `{type: "image" |
 *   "video" | "document"}` for a media header (`headerVariables[0]` of that type, `originalMediaId`);
 *   `{type: "location"}` for a location header (filled by the platform's own parameters; not
 *   checked).
 * - `buttons`: each button with a dynamic part: a URL button whose `url` has a placeholder needs
 *   `buttonVariables` `{buttonIndex, type: "URL", text: <the suffix>}`.
 */
export const TemplateVariables = Type.Object(
  {
    parameterFormat: Type.Enum(['positional', 'named']),
    body: Type.Array(Type.String()),
    header: Type.Union([
      Type.Null(),
      Type.Object({ type: Type.Literal('text'), variables: Type.Array(Type.String()) }),
      Type.Object({ type: Type.Enum([...TEMPLATE_MEDIA_HEADERS, 'location']) }),
    ]),
    buttons: Type.Array(
      Type.Object({
        index: Type.Integer({ minimum: 0 }),
        type: Type.Literal('URL'),
        variables: Type.Array(Type.String()),
      }),
    ),
  },
  { additionalProperties: false },
)
export type TemplateVariables = Static<typeof TemplateVariables>

/** A template as `GET /templates` shows it. `id` is Meta's template id. */
export const TemplateView = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    language: Type.String(),
    status: Type.String({ description: `One of ${TEMPLATE_STATUSES.join(', ')} (Meta may add more)` }),
    /** Why Meta rejected (or paused, disabled) it, as Meta says; null otherwise. */
    rejectedReason: Type.Union([Type.String(), Type.Null()]),
    category: Type.Union([Type.String(), Type.Null()]),
    quality: Type.Union([Type.String(), Type.Null()]),
    /** The template's components exactly as the Cloud API gives them. */
    components: Type.Array(Type.Unknown()),
    variables: TemplateVariables,
    /** The sender it belongs to. */
    senderId: Type.String(),
    syncedAt: Type.String({ format: 'date-time' }),
    updatedAt: Type.String({ format: 'date-time' }),
  },
  { additionalProperties: false },
)
export type TemplateView = Static<typeof TemplateView>

export const TemplateListQuery = Type.Object(
  {
    ...listQueryProperties,
    orderField: Type.Enum(['name', 'updatedAt'], { default: 'name' }),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 512 })),
    language: Type.Optional(Type.String({ pattern: '^[a-z]{2,3}(_[A-Z]{2})?$' })),
    status: Type.Optional(Type.Enum(TEMPLATE_STATUSES)),
    category: Type.Optional(Type.Enum(TEMPLATE_CATEGORIES)),
  },
  { additionalProperties: false },
)
export type TemplateListQuery = Static<typeof TemplateListQuery>

/**
 * A key's `GET /templates`: a pooled key's lists every member's catalog, `senderId` narrows it to
 * one of its senders (another matches nothing).
 */
export const KeyTemplateListQuery = Type.Object(
  {
    ...TemplateListQuery.properties,
    senderId: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 64,
        description:
          "One of the key's senders (its own, or a member of its sender pool): that sender's templates only.",
      }),
    ),
  },
  { additionalProperties: false },
)
export type KeyTemplateListQuery = Static<typeof KeyTemplateListQuery>

export const TemplateList = DataEnvelope(TemplateView)
export type TemplateList = Static<typeof TemplateList>

/** What one sync changed in a sender's catalog. */
export const TemplateSyncResult = Type.Object(
  {
    senderId: Type.String(),
    added: Type.Integer({ minimum: 0 }),
    changed: Type.Integer({ minimum: 0 }),
    removed: Type.Integer({ minimum: 0 }),
    /** Templates in the catalog after the sync. */
    total: Type.Integer({ minimum: 0 }),
    syncedAt: Type.String({ format: 'date-time' }),
  },
  { additionalProperties: false },
)
export type TemplateSyncResult = Static<typeof TemplateSyncResult>

/** Redis pub/sub channel (under the queue prefix): a sender's catalog changed; the message is its id. */
export const TEMPLATE_CHANGES_CHANNEL = 'templates:changed'

/** The lock one template sync holds, across processes, per sender (a Redis key under the prefix). */
export const templateSyncLockKey = (prefix: string, senderId: string) =>
  `${prefix}:templates:sync-lock:${senderId}`

const POSITIONAL = /\{\{\s*([0-9]+)\s*\}\}/g
const NAMED = /\{\{\s*([a-z_][a-z0-9_]*)\s*\}\}/g

/** The placeholders of one text, in order of first appearance, each once. */
export function placeholdersOf(text: unknown, format: 'positional' | 'named'): string[] {
  if (typeof text !== 'string') return []
  const found = [...text.matchAll(format === 'positional' ? POSITIONAL : NAMED)].map((m) => m[1] as string)
  const unique = [...new Set(found)]
  return format === 'positional' ? unique.sort((a, b) => Number(a) - Number(b)) : unique
}

interface MetaComponent {
  type?: unknown
  format?: unknown
  text?: unknown
  buttons?: unknown
}

/**
 * What a send must fill for a template with these components (Meta's shape:
 * `[{type: "HEADER", format, text}, {type: "BODY", text}, {type: "BUTTONS", buttons: [...]}]`).
 * `parameter_format` is Meta's (`POSITIONAL` or `NAMED`; absent on older templates: positional).
 */
export function templateVariables(components: unknown, parameterFormat?: unknown): TemplateVariables {
  const format = String(parameterFormat ?? '').toUpperCase() === 'NAMED' ? 'named' : 'positional'
  const list = Array.isArray(components) ? (components as MetaComponent[]) : []
  const of = (type: string) => list.find((c) => String(c?.type ?? '').toUpperCase() === type)
  const header = of('HEADER')
  const headerFormat = String(header?.format ?? '').toLowerCase()
  let headerVariables: TemplateVariables['header'] = null
  if (header && headerFormat === 'text') {
    const variables = placeholdersOf(header.text, format)
    if (variables.length > 0) headerVariables = { type: 'text', variables }
  } else if (header && (TEMPLATE_MEDIA_HEADERS as readonly string[]).includes(headerFormat)) {
    headerVariables = { type: headerFormat as (typeof TEMPLATE_MEDIA_HEADERS)[number] }
  } else if (header && headerFormat === 'location') {
    headerVariables = { type: 'location' }
  }
  const buttons: TemplateVariables['buttons'] = []
  const buttonList = of('BUTTONS')?.buttons
  if (Array.isArray(buttonList)) {
    buttonList.forEach((button: { type?: unknown; url?: unknown }, index) => {
      if (String(button?.type ?? '').toUpperCase() !== 'URL') return
      // A URL's placeholder is always positional ({{1}}), whatever the body's format.
      const variables = placeholdersOf(button.url, 'positional')
      if (variables.length > 0) buttons.push({ index, type: 'URL', variables })
    })
  }
  return {
    parameterFormat: format,
    body: placeholdersOf(of('BODY')?.text, format),
    header: headerVariables,
    buttons,
  }
}
