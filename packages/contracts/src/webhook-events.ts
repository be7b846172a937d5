import Type, { type Static } from 'typebox'
import { PathId } from './ids.ts'
import { DataEnvelope, listQueryProperties } from './paging.ts'

/**
 * One delivery of one event to one endpoint, as the relay (or a retry, or a replay) queues it.
 * `body` is the exact JSON the receiver gets, fixed when the event is first queued: every
 * redelivery sends the same bytes under the same `webhook-id` (`eventId`).
 */
export const WebhookJob = Type.Object(
  {
    eventId: Type.String({ minLength: 1 }),
    endpointId: Type.String({ format: 'uuid' }),
    eventType: Type.String({ minLength: 1 }),
    body: Type.String({ minLength: 2 }),
    /** What queued it: the event itself, a manual retry, or a replay since a time. */
    reason: Type.Enum(['event', 'retry', 'replay']),
    /** Tries made before this job, in a bundle (WebhookBundleJob) whose try failed: 0 when absent. */
    triesBefore: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 })),
  },
  { additionalProperties: false },
)
export type WebhookJob = Static<typeof WebhookJob>

/** How many events of one endpoint a relayed bundle may carry, at most. */
export const WEBHOOK_BUNDLE_MAX = 100

/**
 * The first try of several events for one endpoint, as the relay queues them: one job where there
 * would be one per event, so the queue's work (an add, a take, a completion) is paid once for them.
 * It carries no bodies: the worker reads the events when it delivers them, so an erasure made in
 * the meantime is what goes out. An event whose try fails goes on alone, as a `WebhookJob` of the
 * event's own id (`webhookJobId`) with `triesBefore` set.
 */
export const WebhookBundleJob = Type.Object(
  {
    endpointId: Type.String({ format: 'uuid' }),
    eventIds: Type.Array(Type.String({ minLength: 1 }), { minItems: 1, maxItems: WEBHOOK_BUNDLE_MAX }),
  },
  { additionalProperties: false },
)
export type WebhookBundleJob = Static<typeof WebhookBundleJob>

/** The job name of a bundle: a `webhooks` job of another name is a `WebhookJob`. */
export const WEBHOOK_BUNDLE_JOB_NAME = 'bundle'

/**
 * How a bundle is added. Removed once done: it holds no body to look at, and its events' own jobs
 * (a failed try's) are kept as any delivery's.
 */
export const WEBHOOK_BUNDLE_JOB_OPTIONS = {
  attempts: 50,
  backoff: { type: 'webhook' },
  removeOnComplete: true,
  removeOnFail: { age: 7 * 24 * 3600, count: 50_000 },
} as const

/**
 * How every `webhooks` job is added. The worker decides when to stop (its retry schedule); the
 * attempts here are only a ceiling, high enough for any schedule.
 */
export const WEBHOOK_JOB_OPTIONS = {
  attempts: 50,
  backoff: { type: 'webhook' },
  removeOnComplete: { age: 24 * 3600, count: 50_000 },
  removeOnFail: { age: 7 * 24 * 3600, count: 50_000 },
} as const

/** A queue job id is the event and the endpoint (`:` is reserved by BullMQ); retries add a tag. */
export const webhookJobId = (eventId: string, endpointId: string, tag?: string) =>
  tag ? `${eventId}-${endpointId}-${tag}` : `${eventId}-${endpointId}`

/** The order receivers see an event's fields in (Postgres's jsonb keeps its own order). */
const DATA_KEY_ORDER = ['messageId', 'clientReference', 'status', 'sequence', 'type', 'phone']

/**
 * The body of an event as receivers get it, from the stored payload: `{type, timestamp, data}`
 * (`{type, timestamp, example: true, data}` for an example) with `data`'s best-known keys first.
 * The same payload always gives the same bytes.
 */
export function webhookEventBody(payload: unknown): string {
  const { type, timestamp, example, data } = payload as {
    type: string
    timestamp: string
    example?: unknown
    data: Record<string, unknown>
  }
  const ordered: Record<string, unknown> = {}
  for (const key of DATA_KEY_ORDER) if (key in data) ordered[key] = data[key]
  for (const key of Object.keys(data).sort()) if (!(key in ordered)) ordered[key] = data[key]
  // An example sent from the portal says so (`POST /webhook-endpoints/:id/send-example`); no real event does.
  return JSON.stringify(
    example === true ? { type, timestamp, example: true, data: ordered } : { type, timestamp, data: ordered },
  )
}

/** One try at delivering one event to one endpoint (`GET /webhook-endpoints/:id/attempts`). */
export const WebhookAttemptView = Type.Object(
  {
    id: Type.String(),
    eventId: Type.String(),
    eventType: Type.String(),
    /** 1 for the first try of a delivery; a manual retry or a replay starts again at 1. */
    attempt: Type.Integer({ minimum: 1 }),
    success: Type.Boolean(),
    /** Null when no answer came (timeout, refused connection, blocked address). */
    statusCode: Type.Union([Type.Integer(), Type.Null()]),
    durationMs: Type.Integer({ minimum: 0 }),
    /** At most 1 KiB of the answer's body. */
    responseExcerpt: Type.Union([Type.String(), Type.Null()]),
    error: Type.Union([Type.String(), Type.Null()]),
    /** When the next try is due; null after a success or the last try. */
    nextRetryAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
    createdAt: Type.String({ format: 'date-time' }),
  },
  { additionalProperties: false },
)
export type WebhookAttemptView = Static<typeof WebhookAttemptView>

export const WebhookAttemptListQuery = Type.Object(
  {
    order: listQueryProperties.order,
    page: listQueryProperties.page,
    take: listQueryProperties.take,
    eventId: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    success: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
)
export type WebhookAttemptListQuery = Static<typeof WebhookAttemptListQuery>

export const WebhookAttemptList = DataEnvelope(WebhookAttemptView)
export type WebhookAttemptList = Static<typeof WebhookAttemptList>

export const WebhookEventParams = Type.Object({ id: PathId('The endpoint id'), eventId: Type.String() })

/** An event as its deliveries send it (`GET /webhook-endpoints/:id/events/:eventId`). */
export const WebhookEventView = Type.Object(
  {
    /** The `webhook-id` header of each of its deliveries. */
    id: Type.String(),
    type: Type.String(),
    createdAt: Type.String({ format: 'date-time' }),
    /** The exact body each delivery sends and signs: `{type, timestamp, data}` as JSON. */
    body: Type.String(),
  },
  { additionalProperties: false },
)
export type WebhookEventView = Static<typeof WebhookEventView>

/** Every event since a time (up to an optional end) is sent again, after the receiver's own outage. */
export const WebhookReplayBody = Type.Object(
  {
    since: Type.String({ format: 'date-time' }),
    until: Type.Optional(Type.String({ format: 'date-time' })),
  },
  { additionalProperties: false },
)
export type WebhookReplayBody = Static<typeof WebhookReplayBody>

export const WebhookReplayAnswer = Type.Object(
  {
    /** How many events were queued again for this endpoint. */
    events: Type.Integer({ minimum: 0 }),
    since: Type.String({ format: 'date-time' }),
    until: Type.String({ format: 'date-time' }),
  },
  { additionalProperties: false },
)

export const WebhookRetryAnswer = Type.Object(
  { eventId: Type.String(), endpointId: Type.String({ format: 'uuid' }) },
  { additionalProperties: false },
)
