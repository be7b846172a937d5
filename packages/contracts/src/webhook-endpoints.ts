import Type, { type Static } from 'typebox'
import { PathId } from './ids.ts'
import { DataEnvelope, listQueryProperties } from './paging.ts'

/** The events an endpoint can subscribe to. Names are part of the wire format: never renamed. */
export const WEBHOOK_EVENT_TYPES = [
  'message.sent',
  'message.delivered',
  'message.read',
  'message.failed',
  'message.received',
  'message.expired',
  'message.canceled',
  'template.status_updated',
  'template.quality_updated',
  'template.category_updated',
  'sender.updated',
  'recipient.opted_out',
  'recipient.opted_in',
  'campaign.started',
  'campaign.progress',
  'campaign.completed',
  'message.fallback_sent',
  'message.sender_changed',
  'message.delivered_after_failure',
] as const
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number]
export type WebhookEndpointEvents = WebhookEventType[]

const WebhookEvents = Type.Array(Type.Enum(WEBHOOK_EVENT_TYPES), {
  minItems: 1,
  maxItems: WEBHOOK_EVENT_TYPES.length,
  uniqueItems: true,
})
/** Scheme, host and the rest are checked by the API (https only in production, no private targets). */
const WebhookUrl = Type.String({ minLength: 1, maxLength: 2048 })

export const CreateWebhookEndpointBody = Type.Object(
  {
    url: WebhookUrl,
    events: WebhookEvents,
    description: Type.Optional(Type.String({ maxLength: 200 })),
  },
  { additionalProperties: false },
)
export type CreateWebhookEndpointBody = Static<typeof CreateWebhookEndpointBody>

export const UpdateWebhookEndpointBody = Type.Object(
  {
    url: Type.Optional(WebhookUrl),
    events: Type.Optional(WebhookEvents),
    enabled: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false, minProperties: 1 },
)
export type UpdateWebhookEndpointBody = Static<typeof UpdateWebhookEndpointBody>

export const WebhookEndpointIdParams = Type.Object({ id: PathId('The endpoint id') })

/** An endpoint as its key reads it: never a secret, only when the previous one stops signing. */
export const WebhookEndpointView = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    url: Type.String(),
    events: Type.Array(Type.Enum(WEBHOOK_EVENT_TYPES)),
    description: Type.Union([Type.String(), Type.Null()]),
    enabled: Type.Boolean(),
    /**
     * Why the service disabled it: `gone` (it answered 410) or `failing` (every delivery failed
     * for too long). Null when it is enabled, or was disabled by its owner.
     */
    disabledReason: Type.Union([Type.Enum(['gone', 'failing']), Type.Null()]),
    /** Since when deliveries have failed without a success in between; null while healthy. */
    failingSince: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
    /** Until then the previous secret signs too (null when there is none). */
    previousSecretExpiresAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
    createdAt: Type.String({ format: 'date-time' }),
    updatedAt: Type.String({ format: 'date-time' }),
  },
  { additionalProperties: false },
)
export type WebhookEndpointView = Static<typeof WebhookEndpointView>

/** Creation and rotation answers: the signing secret, shown here and never again. */
export const WebhookEndpointWithSecret = Type.Object(
  {
    ...WebhookEndpointView.properties,
    secret: Type.String({ pattern: '^whsec_[A-Za-z0-9+/]+={0,2}$' }),
  },
  { additionalProperties: false },
)
export type WebhookEndpointWithSecret = Static<typeof WebhookEndpointWithSecret>

export const WEBHOOK_ENDPOINT_ORDER_FIELDS = ['createdAt', 'updatedAt'] as const

export const WebhookEndpointListQuery = Type.Object(
  {
    ...listQueryProperties,
    orderField: Type.Enum(WEBHOOK_ENDPOINT_ORDER_FIELDS, { default: 'createdAt' }),
  },
  { additionalProperties: false },
)
export type WebhookEndpointListQuery = Static<typeof WebhookEndpointListQuery>

export const WebhookEndpointList = DataEnvelope(WebhookEndpointView)
export type WebhookEndpointList = Static<typeof WebhookEndpointList>
