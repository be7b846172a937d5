import Type, { type Static, type TSchema } from 'typebox'
import { WEBHOOK_EVENT_TYPES, type WebhookEventType } from './webhook-endpoints.ts'
import { EXAMPLE_EVENT_TIME, WEBHOOK_EVENT_DATA } from './webhook-event-data.ts'

/**
 * The event catalog (`GET /webhook-event-types`): every type an endpoint can subscribe to, what it
 * means, its `data`'s schema and an example body, all from `WEBHOOK_EVENT_DATA`. A type without
 * its entry there fails to compile.
 */
const CATALOG: Record<WebhookEventType, readonly [string, TSchema]> = WEBHOOK_EVENT_DATA

type Schema = TSchema & {
  examples?: unknown[]
  const?: unknown
  enum?: unknown[]
  anyOf?: Schema[]
  type?: string
  format?: string
  properties?: Record<string, Schema>
  required?: string[]
  items?: Schema
  minimum?: number
}

/**
 * A value of `schema` made from its examples: a field's first example, else an object of its
 * properties' (an optional one when it has an example), the first branch of a union that is not
 * null, an enum's first value.
 */
export function exampleOf(schema: TSchema): unknown {
  const s = schema as Schema
  if (s.examples && s.examples.length > 0) return s.examples[0]
  if (s.const !== undefined) return s.const
  if (s.enum && s.enum.length > 0) return s.enum[0]
  if (s.anyOf) {
    const branch = s.anyOf.find((b) => b.type !== 'null') ?? s.anyOf[0]
    return branch ? exampleOf(branch) : null
  }
  switch (s.type) {
    case 'object': {
      // An optional field shows when it has an example of its own; a flag only some events carry
      // (`redacted`, `fallbackUsed`) stays out, as it is absent from most real ones.
      const required = new Set(s.required ?? [])
      return Object.fromEntries(
        Object.entries(s.properties ?? {})
          .filter(([key, value]) => required.has(key) || (value.examples?.length ?? 0) > 0)
          .map(([key, value]) => [key, exampleOf(value)]),
      )
    }
    case 'array':
      return s.items ? [exampleOf(s.items)] : []
    case 'string':
      return s.format === 'date-time' ? EXAMPLE_EVENT_TIME : ''
    case 'integer':
    case 'number':
      return s.minimum ?? 0
    case 'boolean':
      return false
    case 'null':
      return null
    default:
      return null
  }
}

/**
 * An event's stored payload as an example of its type: `{type, timestamp, example: true, data}`.
 * `example: true` marks it (a real event never has it) and reaches the receiver in the body.
 */
export function webhookEventExample(type: WebhookEventType, timestamp = EXAMPLE_EVENT_TIME) {
  const [, data] = CATALOG[type]
  return { type, timestamp, example: true as const, data: exampleOf(data) as Record<string, unknown> }
}

export const WebhookEventTypeView = Type.Object(
  {
    type: Type.Enum(WEBHOOK_EVENT_TYPES),
    description: Type.String(),
    /** The JSON Schema of the event's `data`. */
    schema: Type.Unknown(),
    /** The body a delivery of it sends, with example values (`example: true`, as examples sent are). */
    example: Type.Unknown(),
  },
  { additionalProperties: false },
)
export type WebhookEventTypeView = Static<typeof WebhookEventTypeView>

export const WebhookEventTypeList = Type.Object(
  { data: Type.Array(WebhookEventTypeView) },
  { additionalProperties: false },
)
export type WebhookEventTypeList = Static<typeof WebhookEventTypeList>

/** Every type in the catalog, in the order endpoints list them. */
export const webhookEventCatalog = (): WebhookEventTypeView[] =>
  WEBHOOK_EVENT_TYPES.map((type) => {
    const [description, data] = CATALOG[type]
    return { type, description, schema: data, example: webhookEventExample(type) }
  })

export const SendExampleEventBody = Type.Object(
  { eventType: Type.Enum(WEBHOOK_EVENT_TYPES, { description: 'The type of event to send an example of' }) },
  { additionalProperties: false },
)
export type SendExampleEventBody = Static<typeof SendExampleEventBody>

export const SendExampleEventAnswer = Type.Object(
  {
    /** The example's `webhook-id`: its attempts are listed under it. */
    eventId: Type.String(),
    endpointId: Type.String({ format: 'uuid' }),
    eventType: Type.Enum(WEBHOOK_EVENT_TYPES),
  },
  { additionalProperties: false },
)
export type SendExampleEventAnswer = Static<typeof SendExampleEventAnswer>
