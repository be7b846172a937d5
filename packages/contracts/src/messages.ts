import Type, { type Static, type TSchema } from 'typebox'
import { ErrorBody } from './errors.ts'
import { PathId } from './ids.ts'
import { CANCEL_REASONS } from './key-revocations.ts'
import {
  AudioObject,
  ContactsArray,
  DocumentObject,
  HttpsLink,
  InteractiveObject,
  LocationObject,
  ReactionObject,
  StickerObject,
  VideoObject,
} from './message-kinds.ts'
import { MESSAGE_STATUSES, MESSAGE_TYPES, type MessageType } from './message-types.ts'
import { SENDER_POOL_MAX_MEMBERS } from './pool-limits.ts'
import { QuietHours, SCHEDULED_REASONS, TimeZone } from './quiet-hours.ts'
import { Phone, recipientFields } from './recipients.ts'
import { CONTENT_RETENTION_MAX_HOURS, Redacted } from './redaction.ts'
import { TEMPLATE_CATEGORIES } from './templates.ts'

export { Phone }

const NonBlank = (maxLength: number) => Type.String({ minLength: 1, maxLength, pattern: '\\S' })

/**
 * The sender's own reference for a message (its notification id, say), optional on every send,
 * returned by `GET /messages/:id` and, later, in every event about the message.
 */
export const ClientReference = Type.String({
  minLength: 1,
  maxLength: 256,
  description: 'Your own reference for this message, returned with its status',
})

/**
 * When a message is due: ISO 8601 with an offset, at least a minute (`SCHEDULE_MIN_AHEAD_SECONDS`)
 * and at most 35 days ahead (checked by the API against its clock).
 */
export const SendAt = Type.String({
  format: 'date-time',
  description: 'Send later: at least 1 minute and at most 35 days ahead',
})

/** How long a message may wait to be handed to the platform before it expires instead. */
export const ValiditySeconds = Type.Integer({
  // The API holds it to at least MESSAGE_VALIDITY_MIN_SECONDS (60) against its configuration.
  minimum: 1,
  maximum: 86_400,
  description: 'Never send it later than this many seconds after it is due: 60 to 86400 (default 14400)',
})

/** Delivery priority on the key's sender: `high` only for keys an admin marked transactional. */
export const MESSAGE_PRIORITIES = ['high', 'normal', 'low'] as const
export type MessagePriority = (typeof MESSAGE_PRIORITIES)[number]
export const Priority = Type.Enum(MESSAGE_PRIORITIES, {
  description:
    'On the same sender, `high` goes before `normal` before `low`, fair between keys within a level. ' +
    '`high` needs a key an admin marked transactional (else 403 PRIORITY_NOT_ALLOWED). Default `normal`.',
})

/**
 * A send's own content retention: only `discard` (the key's setting decides otherwise). Its content
 * is then never written to Postgres; only the queue holds it until delivery.
 */
export const SendContentRetention = Type.Literal('discard', {
  description:
    '`discard`: the content (text, variables, captions, media, …) is never stored; it is delivered from the ' +
    "queue, and views say `redacted: true`. Absent: the key's setting applies.",
})

/** The bounds of `fallback.afterSeconds`: long enough for WhatsApp to report, at most a day. */
export const FALLBACK_AFTER_MIN_SECONDS = 10
export const FALLBACK_AFTER_MAX_SECONDS = 86_400

/**
 * The channel fallback (docs/fallback.md): the SMS sent instead when WhatsApp cannot deliver the
 * message. Needs the `send:sms-fallback` scope.
 */
export const MessageFallback = Type.Object(
  {
    sms: Type.Object(
      { text: NonBlank(1600) },
      { additionalProperties: false, description: 'The SMS: its text (up to 1,600 characters, 10 segments)' },
    ),
    afterSeconds: Type.Optional(
      Type.Integer({
        minimum: FALLBACK_AFTER_MIN_SECONDS,
        maximum: FALLBACK_AFTER_MAX_SECONDS,
        description:
          'Also sent when WhatsApp has not reported the message `delivered` this many seconds after it was `sent` ' +
          `(${FALLBACK_AFTER_MIN_SECONDS}–${FALLBACK_AFTER_MAX_SECONDS}). ` +
          'Absent: never once WhatsApp reported it `sent`.',
      }),
    ),
  },
  {
    additionalProperties: false,
    description:
      'Sent as an SMS, at most once, when WhatsApp cannot deliver the message: it answers 131026, the ' +
      'message expired (`validitySeconds`) before it went, or (with `afterSeconds`) no `delivered` came in time. ' +
      'Requires the `send:sms-fallback` scope (else 403 INSUFFICIENT_SCOPE).',
  },
)
export type MessageFallback = Static<typeof MessageFallback>

/** What every send takes beside the message itself; none of it reaches the platform. */
export const deliveryOptions = {
  contentRetention: Type.Optional(SendContentRetention),
  clientReference: Type.Optional(ClientReference),
  sendAt: Type.Optional(SendAt),
  validitySeconds: Type.Optional(ValiditySeconds),
  priority: Type.Optional(Priority),
  quietHours: Type.Optional(QuietHours),
  timeZone: Type.Optional(TimeZone),
  fallback: Type.Optional(MessageFallback),
  senderId: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 64,
      description:
        "The number to send through: the key's own sender, or a member of the sender pool the key is bound to " +
        "(docs/sender-pools.md). Absent: the key's sender, or the pool's choice. Another is 422 " +
        'INVALID_REFERENCE.',
    }),
  ),
}
export const DELIVERY_OPTION_KEYS = [
  'contentRetention',
  'clientReference',
  'sendAt',
  'validitySeconds',
  'priority',
  'quietHours',
  'timeZone',
  'fallbackTemplate',
  'category',
  'fallback',
  'senderId',
] as const

export const HeaderVariable = Type.Object(
  {
    type: Type.String({ minLength: 1, maxLength: 20 }),
    value: Type.Union([Type.String({ maxLength: 1024 }), Type.Null()]),
    originalMediaId: Type.String({ minLength: 1, maxLength: 256 }),
  },
  { additionalProperties: false },
)
export type HeaderVariable = Static<typeof HeaderVariable>

export const ButtonVariable = Type.Object(
  {
    buttonIndex: Type.Integer({ minimum: 0, maximum: 9 }),
    text: Type.String({ maxLength: 2000 }),
    type: Type.String({ minLength: 1, maxLength: 20 }),
  },
  { additionalProperties: false },
)
export type ButtonVariable = Static<typeof ButtonVariable>

/** What names a template and fills its variables: a template send without its recipient. */
const templateFields = {
  templateId: NonBlank(512),
  language: Type.String({ pattern: '^[a-z]{2,3}(_[A-Z]{2})?$', description: 'e.g. pt_BR, en' }),
  variables: Type.Optional(
    Type.Record(Type.String({ pattern: '^[A-Za-z0-9_.-]{1,64}$' }), Type.String({ maxLength: 1024 }), {
      maxProperties: 100,
    }),
  ),
  headerVariables: Type.Optional(Type.Array(HeaderVariable, { maxItems: 10 })),
  buttonVariables: Type.Optional(Type.Array(ButtonVariable, { maxItems: 10 })),
}

/**
 * A template send's own category: what the consent checks (an opt-out of marketing, the frequency
 * cap) take the template for when the sender's catalog does not know it. The catalog's wins.
 */
export const SendCategory = Type.Enum(TEMPLATE_CATEGORIES, {
  description:
    "The template's category, for the marketing opt-out and frequency cap when the sender's synced catalog " +
    "does not know the template (the catalog's category wins when it does). Not sent to the platform.",
})

export const SendTemplateBody = Type.Object(
  { ...recipientFields, ...templateFields, ...deliveryOptions, category: Type.Optional(SendCategory) },
  { additionalProperties: false },
)
export type SendTemplateBody = Static<typeof SendTemplateBody>

/**
 * On a free-form send: the template sent instead when the recipient's 24-hour window is closed at
 * delivery time (known closed under the sender's `enforce` policy, or answered 131047 by the
 * platform). Checked against the catalog at accept like a template send.
 */
export const FallbackTemplate = Type.Object(templateFields, {
  additionalProperties: false,
  description: 'The template to send instead when the 24-hour window is closed at delivery time',
})
export type FallbackTemplate = Static<typeof FallbackTemplate>

/** The delivery options of a free-form send: those of every send, and a fallback template. */
const freeFormOptions = { ...deliveryOptions, fallbackTemplate: Type.Optional(FallbackTemplate) }

export const SendTextBody = Type.Object(
  { ...recipientFields, text: NonBlank(4096), ...freeFormOptions },
  { additionalProperties: false },
)
export type SendTextBody = Static<typeof SendTextBody>

export const SendImageBody = Type.Object(
  {
    ...recipientFields,
    image: Type.Object(
      {
        /** What `POST /media` answered, or a media id uploaded to Meta directly; or a `link`. */
        mediaId: Type.Optional(NonBlank(256)),
        link: Type.Optional(HttpsLink),
        /** The caption. */
        text: Type.Optional(Type.String({ maxLength: 1024 })),
      },
      { additionalProperties: false },
    ),
    ...freeFormOptions,
  },
  { additionalProperties: false },
)
export type SendImageBody = Static<typeof SendImageBody>

const kindBody = <K extends string, S extends TSchema>(key: K, object: S, options = freeFormOptions) =>
  Type.Object(
    { ...recipientFields, [key]: object, ...options } as { [P in K]: S } & typeof recipientFields &
      typeof freeFormOptions,
    {
      additionalProperties: false,
    },
  )

export const SendDocumentBody = kindBody('document', DocumentObject)
export type SendDocumentBody = Static<typeof SendDocumentBody>
export const SendVideoBody = kindBody('video', VideoObject)
export type SendVideoBody = Static<typeof SendVideoBody>
export const SendAudioBody = kindBody('audio', AudioObject)
export type SendAudioBody = Static<typeof SendAudioBody>
export const SendStickerBody = kindBody('sticker', StickerObject)
export type SendStickerBody = Static<typeof SendStickerBody>
export const SendLocationBody = kindBody('location', LocationObject)
export type SendLocationBody = Static<typeof SendLocationBody>
export const SendContactsBody = kindBody('contacts', ContactsArray)
export type SendContactsBody = Static<typeof SendContactsBody>
export const SendInteractiveBody = kindBody('interactive', InteractiveObject)
export type SendInteractiveBody = Static<typeof SendInteractiveBody>
export const SendReactionBody = kindBody('reaction', ReactionObject)
export type SendReactionBody = Static<typeof SendReactionBody>

/** Each type's send body: what its endpoint takes, and (with `type`) a batch item. */
export const SEND_BODIES = {
  text: SendTextBody,
  template: SendTemplateBody,
  image: SendImageBody,
  document: SendDocumentBody,
  video: SendVideoBody,
  audio: SendAudioBody,
  sticker: SendStickerBody,
  location: SendLocationBody,
  contacts: SendContactsBody,
  interactive: SendInteractiveBody,
  reaction: SendReactionBody,
} as const satisfies Record<MessageType, TSchema>
type SendBodies = typeof SEND_BODIES

const DateTime = Type.String({ format: 'date-time' })
const MessageId = Type.String({ format: 'uuid' })

/** 202: the message is in the queue. */
export const MessageAccepted = Type.Object({
  messageId: MessageId,
  /** `scheduled` when it has a `sendAt`, or the recipient's quiet hours hold it. */
  status: Type.Enum(['queued', 'scheduled']),
  type: Type.Enum(MESSAGE_TYPES),
  /** The recipient's phone; null for a send to a `userId`. */
  phone: Type.Union([Type.String(), Type.Null()]),
  /** The recipient's BSUID, for a send to a `userId`. */
  userId: Type.Optional(Type.String()),
  /** A scheduled message's time: its `sendAt`, or when the recipient's quiet hours end. */
  sendAt: Type.Optional(DateTime),
  /** Why it is scheduled: `send_at`, or `quiet_hours` (held until they end). */
  scheduledReason: Type.Optional(Type.Enum(SCHEDULED_REASONS)),
  createdAt: DateTime,
})
export type MessageAccepted = Static<typeof MessageAccepted>

/** Why the last attempt failed: the platform's code (or NETWORK, TIMEOUT, HTTP_<status>) and text. */
export const MessageError = Type.Object({ code: Type.String(), message: Type.String() })
export type MessageError = Static<typeof MessageError>

/** What the platform said the message costs, from its status webhooks (`pricing`). */
export const MessagePricing = Type.Object({
  billable: Type.Union([Type.Boolean(), Type.Null()]),
  /** `PMP` (per message, since July 2025), or `CBP` on older deliveries. */
  pricingModel: Type.Union([Type.String(), Type.Null()]),
  /** `marketing`, `utility`, `authentication`, `service`, … */
  category: Type.Union([Type.String(), Type.Null()]),
  /** `regular`, `free_customer_service`, `free_entry_point`. */
  type: Type.Union([Type.String(), Type.Null()]),
})
export type MessagePricing = Static<typeof MessagePricing>

export const MESSAGE_CHANNELS = ['whatsapp', 'sms'] as const

/** A message's channel fallback as its view shows it. */
export const FallbackView = Type.Object({
  channel: Type.Literal('sms'),
  /**
   * `whatsapp_undeliverable` (131026), `expired` (its validity ended before it went),
   * `not_delivered_in_time` (no `delivered` within `afterSeconds` of WhatsApp's `sent`).
   */
  reason: Type.String(),
  /** The platform's code behind it, when one. */
  reasonCode: Type.Union([Type.String(), Type.Null()]),
  /** When it was decided. */
  at: DateTime,
  /**
   * `decided`, `calling` (the provider is being called), `sent`, `failed` (not sent), `unknown`
   * (the provider may have taken it; never sent again), `withdrawn` (WhatsApp delivered first).
   */
  state: Type.String(),
  /** The SMS's delivery as the provider reports it: `queued`, `sent`, `delivered`, `undelivered`, `failed`. */
  status: Type.Union([Type.String(), Type.Null()]),
  error: Type.Union([MessageError, Type.Null()]),
  /**
   * When WhatsApp reported the message delivered (or read), if it ever did: set beside an SMS
   * `sent`, both channels reached the recipient. Reported after the message `failed` (a 131026,
   * then WhatsApp's `delivered`), it is recorded here and on the timeline; `status` stays `failed`.
   */
  whatsappDeliveredAt: Type.Optional(DateTime),
  /** What the provider charged for the SMS, once a report (or the provider's message) said: a decimal amount and its currency. */
  price: Type.Optional(
    Type.Object(
      { amount: Type.String({ pattern: '^[0-9]+(\\.[0-9]+)?$' }), currency: Type.String() },
      { additionalProperties: false },
    ),
  ),
})
export type FallbackView = Static<typeof FallbackView>

/**
 * A pooled message's move off a number that left its pool's rotation while it waited
 * (docs/sender-pools.md, "Messages waiting on a fallen number"): its latest, when it moved more than
 * once (its timeline lists each).
 */
export const SenderChangedView = Type.Object({
  /** The sender it waited on. */
  from: Type.String({ examples: ['default'] }),
  /** The pool member it goes through since (its `senderId` now). */
  to: Type.String({ examples: ['second-number'] }),
  at: DateTime,
  /**
   * Why `from` was out of rotation: its `outOfRotation` (`paused`, `needs_attention`,
   * `account_banned`, `account_restricted`, `account_disconnected`, `quality_red`, `flagged`,
   * `rate_limited`).
   */
  reason: Type.String({ examples: ['quality_red'] }),
})
export type SenderChangedView = Static<typeof SenderChangedView>

export const MessageView = Type.Object({
  messageId: MessageId,
  type: Type.Enum(MESSAGE_TYPES),
  /** The recipient's phone, E.164; null when it was sent to a `userId` whose phone is unknown. */
  phone: Type.Union([Type.String(), Type.Null()]),
  /** The recipient's BSUID, when it was sent to one (or the platform paired it with the phone). */
  userId: Type.Union([Type.String(), Type.Null()]),
  status: Type.Enum(MESSAGE_STATUSES),
  attempts: Type.Integer({ minimum: 0 }),
  clientReference: Type.Union([Type.String(), Type.Null()]),
  platformMessageId: Type.Union([Type.String(), Type.Null()]),
  lastError: Type.Union([MessageError, Type.Null()]),
  batchId: Type.Union([MessageId, Type.Null()]),
  sendAt: Type.Union([DateTime, Type.Null()]),
  /**
   * Why it was scheduled: `send_at` (the caller's), `quiet_hours` (held until they ended),
   * `messaging_limit` (held at delivery until its portfolio had room); null: never.
   */
  scheduledReason: Type.Union([Type.Enum(SCHEDULED_REASONS), Type.Null()]),
  expiresAt: Type.Union([DateTime, Type.Null()]),
  /** The sender (business number) it goes out through: `default` is the environment's. */
  senderId: Type.Union([Type.String(), Type.Null()]),
  /** That sender's `phone_number_id`, once a worker has taken the message. */
  senderPhoneNumberId: Type.Union([Type.String(), Type.Null()]),
  /**
   * Set once a worker moved it off a pool's number that fell while it waited: from which sender, to
   * which, when and why (the latest move; its timeline lists each). In its view (`GET …/messages/:id`)
   * and timelines, not in the lists.
   */
  senderChanged: Type.Optional(SenderChangedView),
  /** True when the window was closed at delivery and its `fallbackTemplate` went out instead. */
  fallbackUsed: Type.Boolean(),
  /** The channel it went out on: `sms` once its channel fallback sent the SMS (docs/fallback.md). */
  channel: Type.Optional(Type.Enum(MESSAGE_CHANNELS)),
  /** Its channel fallback, once decided: why, when, and how the SMS fared. */
  fallback: Type.Optional(FallbackView),
  /** The platform's pricing, once a status webhook reported it; null before. */
  pricing: Type.Union([MessagePricing, Type.Null()]),
  /** Its content was removed (the key's or the send's content retention, or an erasure). */
  redacted: Redacted,
  /**
   * Present on a message the service canceled, saying why: `key_revoked` (its key was revoked
   * before it went). Absent otherwise, a key's own cancel included.
   */
  cancelReason: Type.Optional(Type.Enum(CANCEL_REASONS)),
  createdAt: DateTime,
  updatedAt: DateTime,
})
export type MessageView = Static<typeof MessageView>

export const MessageIdParams = Type.Object({ messageId: PathId('The message id') })
/** A reply to mark read: its Dispatch id (the `messageId` of `message.received`) or its wamid. */
export const ReplyIdParams = Type.Object({ messageId: Type.String({ maxLength: 64 }) })

const jobMessage = <T extends MessageType>(type: T) =>
  Type.Object(
    { type: Type.Literal(type), body: SEND_BODIES[type] as SendBodies[T] },
    { additionalProperties: false },
  )
/** A job's message: its type and its send body. */
const JobMessage = Type.Union([
  jobMessage('text'),
  jobMessage('template'),
  jobMessage('image'),
  jobMessage('document'),
  jobMessage('video'),
  jobMessage('audio'),
  jobMessage('sticker'),
  jobMessage('location'),
  jobMessage('contacts'),
  jobMessage('interactive'),
  jobMessage('reaction'),
])

/**
 * The `messages` queue's job: everything the worker needs, so the API writes nothing to Postgres.
 * The sender's `clientReference` travels beside the message, not in its body (what the platform gets).
 */
export const MessageJob = Type.Object(
  {
    messageId: MessageId,
    apiKeyId: Type.String({ format: 'uuid' }),
    acceptedAt: DateTime,
    /**
     * Its key's tenant when it was accepted: the entries that tenant added to the suppression list
     * block it at delivery too (`suppressionOwner`). Absent: the key has none (its own entries do).
     */
    tenantId: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    clientReference: Type.Optional(ClientReference),
    /** The batch it came in. */
    batchId: Type.Optional(MessageId),
    /** Set for a scheduled message: the job is delayed until then. */
    sendAt: Type.Optional(DateTime),
    /**
     * Set when `sendAt` is not the caller's time: the end of the recipient's quiet hours, or when the
     * portfolio's messaging limit frees room (set by a worker that held it).
     */
    scheduledReason: Type.Optional(
      Type.Union([Type.Literal('quiet_hours'), Type.Literal('messaging_limit')]),
    ),
    /** Not handed to the platform by then, it expires (absent on jobs queued before expiry existed). */
    expiresAt: Type.Optional(DateTime),
    /** The sender it goes out through (absent on jobs queued before senders existed: `default`). */
    senderId: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    /**
     * The sender pool its number was chosen from (docs/sender-pools.md): a worker may move it to another
     * member while it waits on a fallen one. Absent: it goes through `senderId` only.
     */
    senderPoolId: Type.Optional(Type.String({ format: 'uuid' })),
    /**
     * A pooled message's numbers whose opt-outs stop it too (docs/consent.md, "Sender pools"), as
     * phone number ids: set by earlier versions only, on jobs they accepted (the worker now reads
     * the pool's numbers by `senderPoolId`); honored when present.
     */
    optOutNumbers: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { maxItems: SENDER_POOL_MAX_MEMBERS }),
    ),
    /**
     * Set when a worker moved it off a pool's number that fell while it waited (docs/sender-pools.md,
     * "Messages waiting on a fallen number"): from which sender, to which, when and why.
     */
    senderChanged: Type.Optional(
      Type.Object(
        {
          from: Type.String({ minLength: 1, maxLength: 64 }),
          to: Type.String({ minLength: 1, maxLength: 64 }),
          at: DateTime,
          reason: Type.String({ minLength: 1, maxLength: 64 }),
        },
        { additionalProperties: false },
      ),
    ),
    /** Its level on that sender (absent: `normal`). */
    priority: Type.Optional(Priority),
    /** The accepting request's trace context (W3C `traceparent`…, as JSON), when tracing is on. */
    traceContext: Type.Optional(Type.String({ maxLength: 2048 })),
    /** Attempts made before an admin retried it (absent: none): the record's count goes on from there. */
    priorAttempts: Type.Optional(Type.Integer({ minimum: 0 })),
    /**
     * Attempts jobs before this one already spent toward this send's maximum (a bundle that handed
     * it on, a number it was moved off): its jobs make only the rest (absent: none). An admin's retry
     * starts afresh.
     */
    attemptsSpent: Type.Optional(Type.Integer({ minimum: 0 })),
    /**
     * The bundle that handed this message on to a job of its own (message-bundles.ts): its claim is
     * still held in that bundle's name, which this job takes over.
     */
    claimedBy: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    /**
     * Handed out again by admission (its first hand-out was never confirmed: an admitter died): its
     * first job may have delivered it, and released its claim since, so the worker reads its record
     * before sending (message-claims.ts).
     */
    readmitted: Type.Optional(Type.Literal(true)),
    /**
     * A template counted against its portfolio's messaging limit: when the recipient's 24-hour
     * window closes, as the accept path read it (epoch ms; 0: closed, or none, when accepted). A
     * worker delivering it soon after (`WINDOW_KNOWN_AT_ACCEPT_MS`) counts it by this, without
     * reading the window again. Absent: not read (delivery reads it).
     */
    windowClosesAt: Type.Optional(Type.Integer({ minimum: 0 })),
    /** A free-form message's template for a closed window (see `FallbackTemplate`). */
    fallbackTemplate: Type.Optional(FallbackTemplate),
    /**
     * Its channel fallback (`MessageFallback`): only this job holds the SMS's text until WhatsApp
     * took the message (then its timer, its sent record or its hold does).
     */
    fallback: Type.Optional(MessageFallback),
    /**
     * A marketing template, as the accept path judged it (the catalog's category, else the send's
     * own): an opt-out of marketing made since cancels it at delivery. Absent: not marketing.
     */
    marketing: Type.Optional(Type.Literal(true)),
    /**
     * Its content must never reach Postgres (the key's `discard` or the send's): the worker records
     * it redacted. Only this job holds the content. Absent: recorded as given.
     */
    discardContent: Type.Optional(Type.Literal(true)),
    /**
     * Its key keeps content this many hours (`contentRetention` when it was accepted): the record
     * is due for redaction then. Absent: kept (or discarded).
     */
    contentRetentionHours: Type.Optional(Type.Integer({ minimum: 1, maximum: CONTENT_RETENTION_MAX_HOURS })),
    message: JobMessage,
  },
  { additionalProperties: false },
)
export type MessageJob = Static<typeof MessageJob>
export type OutboundMessage = MessageJob['message']

/** How many messages one batch may carry. */
export const BATCH_MAX_ITEMS = 1000

/** One item of a batch, per type: that send's body, with its `type`. */
export const BATCH_ITEMS = Object.fromEntries(
  MESSAGE_TYPES.map((type) => [
    type,
    Type.Object(
      { type: Type.Literal(type), ...SEND_BODIES[type].properties },
      { additionalProperties: false },
    ),
  ]),
) as unknown as { [T in MessageType]: TSchema }
export type BatchItem = { [T in MessageType]: { type: T } & Static<SendBodies[T]> }[MessageType]

/**
 * The batch route's body. Items are checked one by one by the route (each against `BatchItem`),
 * so one bad item is answered in its result instead of failing the whole batch.
 */
export const BatchBody = Type.Object(
  {
    messages: Type.Array(Type.Object({}, { additionalProperties: true }), {
      minItems: 1,
      maxItems: BATCH_MAX_ITEMS,
      description: `Each item: {type: ${MESSAGE_TYPES.map((t) => `"${t}"`).join(' | ')}, ...that send's body}`,
    }),
  },
  { additionalProperties: false },
)
export type BatchBody = Static<typeof BatchBody>

export const BatchItemResult = Type.Union([
  Type.Object(
    {
      index: Type.Integer({ minimum: 0 }),
      messageId: MessageId,
      status: Type.Enum(['queued', 'scheduled']),
      sendAt: Type.Optional(DateTime),
      scheduledReason: Type.Optional(Type.Enum(SCHEDULED_REASONS)),
    },
    { additionalProperties: false },
  ),
  Type.Object({ index: Type.Integer({ minimum: 0 }), error: ErrorBody }, { additionalProperties: false }),
])
export type BatchItemResult = Static<typeof BatchItemResult>

/** 202: the valid items are queued (or scheduled); one result per item, in order. */
export const BatchAccepted = Type.Object(
  {
    batchId: MessageId,
    accepted: Type.Integer({ minimum: 0 }),
    rejected: Type.Integer({ minimum: 0 }),
    results: Type.Array(BatchItemResult),
  },
  { additionalProperties: false },
)
export type BatchAccepted = Static<typeof BatchAccepted>
