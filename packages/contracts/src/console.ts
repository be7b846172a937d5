import Type, { type Static } from 'typebox'
import { AdminMessageView } from './admin-messages.ts'
import { MessageView, SenderChangedView } from './messages.ts'
import { QueueView } from './queue-switches.ts'
import { SenderView } from './senders.ts'

/** `POST /api/admin/session`: an admin's name and token, exchanged for a console session. */
export const AdminSignInBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 128 }),
    token: Type.String({ minLength: 1, maxLength: 512 }),
  },
  { additionalProperties: false },
)
export type AdminSignInBody = Static<typeof AdminSignInBody>

/** `POST /api/third-party/session`: a key, exchanged for a portal session (the key is not kept). */
export const PortalSignInBody = Type.Object(
  { apiKey: Type.String({ minLength: 1, maxLength: 512 }) },
  { additionalProperties: false },
)
export type PortalSignInBody = Static<typeof PortalSignInBody>

/**
 * Where the service runs, for the console's banner: `environment` is APP_ENV (`production`,
 * `development`, `test`…), `platform` the messaging platform (`sandbox` reaches no one).
 */
export const ServiceFacts = Type.Object({ environment: Type.String(), platform: Type.String() })
export type ServiceFacts = Static<typeof ServiceFacts>

const sessionFields = {
  service: ServiceFacts,
  /** The admin's name, or the key's id. */
  actor: Type.String(),
  /** Sent back as `x-csrf-token` with every change made with this session. Keep it in memory. */
  csrfToken: Type.String(),
  expiresAt: Type.String({ format: 'date-time' }),
}

export const AdminSession = Type.Object({ kind: Type.Literal('admin'), ...sessionFields })
export type AdminSession = Static<typeof AdminSession>

export const PortalSession = Type.Object({
  kind: Type.Literal('portal'),
  ...sessionFields,
  keyId: Type.String({ format: 'uuid' }),
  clientName: Type.String(),
  scopes: Type.Array(Type.String()),
  tenantId: Type.Union([Type.String(), Type.Null()]),
})
export type PortalSession = Static<typeof PortalSession>

/** `POST /api/admin/sessions/revoke`: the admin whose console sessions all end. */
export const AdminSessionsRevokeBody = Type.Object(
  { admin: Type.String({ pattern: '^[A-Za-z0-9_.-]+$', minLength: 1, maxLength: 128 }) },
  { additionalProperties: false },
)
export type AdminSessionsRevokeBody = Static<typeof AdminSessionsRevokeBody>

export const AdminSessionsRevoked = Type.Object({
  admin: Type.String(),
  /** How many of the admin's sessions were live and are now ended. */
  ended: Type.Integer({ minimum: 0 }),
})
export type AdminSessionsRevoked = Static<typeof AdminSessionsRevoked>

/** One minute of the overview's chart: how many messages reached each status in it. */
export const MinuteCounts = Type.Object({
  minute: Type.String({ format: 'date-time' }),
  counts: Type.Record(Type.String(), Type.Integer({ minimum: 0 })),
})

export const FailingWebhookEndpoint = Type.Object({
  endpointId: Type.String({ format: 'uuid' }),
  url: Type.String(),
  apiKeyId: Type.String({ format: 'uuid' }),
  /** The key's client name. */
  clientName: Type.Optional(Type.String()),
  /** Failed attempts in the last hour. */
  failures: Type.Integer({ minimum: 1 }),
  lastError: Type.Union([Type.String(), Type.Null()]),
  lastStatusCode: Type.Union([Type.Integer(), Type.Null()]),
  lastAttemptAt: Type.String({ format: 'date-time' }),
})

export const ErrorCodeCount = Type.Object({
  code: Type.String(),
  count: Type.Integer({ minimum: 1 }),
  /** What the code means and what to do about it, when Dispatch knows the code. */
  meaning: Type.Union([Type.String(), Type.Null()]),
})

/** `GET /api/admin/overview`: what an admin looks at first. */
/** The overview chart's spans: how far back each reaches, and the bucket it is counted in. */
export const OVERVIEW_RANGES = {
  '1h': { spanSeconds: 3600, bucketSeconds: 60 },
  '24h': { spanSeconds: 86_400, bucketSeconds: 900 },
  '7d': { spanSeconds: 604_800, bucketSeconds: 3600 },
} as const
export type OverviewRange = keyof typeof OVERVIEW_RANGES

const OverviewRangeName = Type.Union([Type.Literal('1h'), Type.Literal('24h'), Type.Literal('7d')])

export const AdminOverviewQuery = Type.Object(
  {
    /** How far back the chart reaches: `1h` (by minute), `24h` (by quarter hour), `7d` (by hour). */
    range: Type.Optional(OverviewRangeName),
  },
  { additionalProperties: false },
)
export type AdminOverviewQuery = Static<typeof AdminOverviewQuery>

export const AdminOverview = Type.Object({
  generatedAt: Type.String({ format: 'date-time' }),
  /** The span the chart covers (`24h` unless asked), and the size of its buckets in seconds. */
  range: OverviewRangeName,
  bucketSeconds: Type.Integer({ minimum: 60 }),
  /**
   * The range's buckets, oldest first, each named by its start (`minute`), buckets without a
   * message left out. By minute for `1h`; by the range's bucket otherwise.
   */
  messagesPerMinute: Type.Array(MinuteCounts),
  /** Each sender's queue, with its counts and switches. */
  backlog: Type.Array(QueueView),
  sendersNeedingAttention: Type.Array(SenderView),
  /** Endpoints with failed attempts in the last hour, most failures first. */
  failingWebhookEndpoints: Type.Array(FailingWebhookEndpoint),
  /** The last hour's error codes of failed attempts and messages, most frequent first. */
  topErrors: Type.Array(ErrorCodeCount),
})
export type AdminOverview = Static<typeof AdminOverview>

export const TIMELINE_KINDS = [
  'accepted',
  'scheduled',
  'attempt_failed',
  'sent',
  'delivered',
  'read',
  'failed',
  'expired',
  'canceled',
  'retried',
  'webhook_event',
  'webhook_attempt',
  /** The channel fallback (docs/fallback.md): decided, the SMS taken or not, its delivery reports. */
  'fallback_decided',
  'fallback_sent',
  'fallback_not_sent',
  'fallback_delivery',
  /** A pool's worker moved it off a number that left the rotation to another member (docs/sender-pools.md). */
  'sender_changed',
] as const
export type TimelineKind = (typeof TIMELINE_KINDS)[number]

export const TimelineEntry = Type.Object({
  at: Type.String({ format: 'date-time' }),
  kind: Type.Enum(TIMELINE_KINDS),
  /** One line a person reads. */
  summary: Type.String(),
  errorCode: Type.Optional(Type.String()),
  /** The time it waits for, for `scheduled` (the summary names it too, as this ISO string). */
  sendAt: Type.Optional(Type.String({ format: 'date-time' })),
  /** The delivery attempt's number, for `attempt_failed`. */
  attempt: Type.Optional(Type.Integer({ minimum: 0 })),
  /** The webhook event's id, for `webhook_event` and `webhook_attempt`. */
  eventId: Type.Optional(Type.String()),
  /** The endpoint tried, for `webhook_attempt`. */
  endpointId: Type.Optional(Type.String({ format: 'uuid' })),
  statusCode: Type.Optional(Type.Union([Type.Integer(), Type.Null()])),
  /** The move, for `sender_changed`: from which sender, to which, when and why. */
  senderChanged: Type.Optional(SenderChangedView),
})
export type TimelineEntry = Static<typeof TimelineEntry>

/**
 * The send's body as stored: the recipient and the content asked for. A message whose content was
 * removed (`redacted`: its retention, `contentRetention: "discard"`, an erasure) keeps only what
 * says what it was (its type, its template's name and language), never the content.
 */
export const MessageRequest = Type.Record(Type.String(), Type.Unknown(), {
  description:
    'The send as stored (recipient and content). When the message is `redacted`, only what names it is left.',
})

/** A message's whole life, oldest first: `GET …/messages/:id/timeline`. */
export const MessageTimeline = Type.Object({
  message: MessageView,
  request: MessageRequest,
  entries: Type.Array(TimelineEntry),
})
export type MessageTimeline = Static<typeof MessageTimeline>

export const AdminMessageTimeline = Type.Object({
  message: AdminMessageView,
  request: MessageRequest,
  entries: Type.Array(TimelineEntry),
})
export type AdminMessageTimeline = Static<typeof AdminMessageTimeline>
