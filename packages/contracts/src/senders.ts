import Type, { type Static } from 'typebox'
import { ConsentConfirmation, ConsentKeywords } from './consent.ts'
import { MessageFallback } from './messages.ts'
import { DataEnvelope, listQueryProperties } from './paging.ts'
import { ContentRetention } from './redaction.ts'

/**
 * A sender is one WhatsApp business number (`phone_number_id`) with its own access token, pace and
 * state. The environment's `WHATSAPP_*` (or sandbox) settings are the sender `default`, which every
 * key without a sender of its own uses; admins add the others at `/api/admin/senders`.
 */
export const DEFAULT_SENDER_ID = 'default'

export const SENDER_STATES = ['active', 'paused', 'needs_attention'] as const
export type SenderState = (typeof SENDER_STATES)[number]

/** The Cloud API's ceiling per number; 80/s is its default. */
export const SENDER_MAX_RATE = 1000
export const SENDER_DEFAULT_RATE = 80

/**
 * The BullMQ queue a sender's admitted messages wait in. The default sender keeps the historical
 * `messages` queue, so jobs queued before senders existed are still delivered.
 */
export const senderQueueName = (senderId: string) =>
  senderId === DEFAULT_SENDER_ID ? 'messages' : `messages.${senderId}`

/** The sender whose queue this is (`senderQueueName`'s inverse), or undefined for another queue. */
export function senderOfQueue(queueName: string): string | undefined {
  if (queueName === 'messages') return DEFAULT_SENDER_ID
  return queueName.startsWith('messages.') ? queueName.slice('messages.'.length) : undefined
}

/** Redis pub/sub channel (under the queue prefix): a sender was added, changed or removed. */
export const SENDER_CHANGES_CHANNEL = 'senders:changed'

const DateTime = Type.String({ format: 'date-time' })
const PhoneNumberId = Type.String({ pattern: '^[0-9]{1,32}$', description: "The number's Graph API id" })
const DisplayName = Type.String({ minLength: 1, maxLength: 200, pattern: '\\S' })
/** The number as Meta shows it (digits, country code first): quality updates name the number by it. */
const DisplayPhoneNumber = Type.String({ pattern: '^[0-9]{6,20}$' })
const AccessToken = Type.String({
  minLength: 8,
  maxLength: 4096,
  pattern: '^[\\x21-\\x7e]+$',
  description: 'The Graph API access token for this number. Write-only: never shown again.',
})
/** The WhatsApp Business Account the number belongs to: its templates are synced from it. */
const WabaId = Type.String({ pattern: '^[0-9]{1,32}$', description: 'The WhatsApp Business Account id' })
/**
 * Whether a sender holds free-form messages to the customer-service window (24 h since the
 * recipient's last message, checked against its Redis copy: @dispatch/runtime, service-window.ts).
 */
export const SERVICE_WINDOW_POLICIES = ['off', 'enforce'] as const
export type ServiceWindowPolicy = (typeof SERVICE_WINDOW_POLICIES)[number]

const WindowPolicy = Type.Enum(SERVICE_WINDOW_POLICIES, {
  description:
    '`off` (default): the platform decides, as it always has. `enforce`: a free-form message to a ' +
    'recipient whose 24-hour window is known closed is refused at accept (422 OUTSIDE_SERVICE_WINDOW) ' +
    'and checked again when a worker takes it (sent as its `fallbackTemplate`, or failed with 131047).',
})

/**
 * What a sender does with a template send that would take its business portfolio past WhatsApp's
 * messaging limit (unique users reached outside their window in a moving 24 h): `hold` it
 * (`scheduled`, `scheduledReason: messaging_limit`) until the window frees room, `refuse` it at the
 * door (422 MESSAGING_LIMIT_REACHED), or `off` (nothing counted, Meta decides).
 */
export const MESSAGING_LIMIT_POLICIES = ['hold', 'refuse', 'off'] as const
export type MessagingLimitPolicy = (typeof MESSAGING_LIMIT_POLICIES)[number]

const LimitPolicy = Type.Enum(MESSAGING_LIMIT_POLICIES, {
  description:
    '`hold` (default): a template to a recipient outside their window that would pass the portfolio’s ' +
    'messaging limit waits (`scheduled`, reason `messaging_limit`) until the moving 24 hours free room. ' +
    '`refuse`: such a send is refused at accept (422 MESSAGING_LIMIT_REACHED). `off`: nothing is counted.',
})
/** The business portfolio (Meta's business id) whose messaging limit the number shares. */
const BusinessId = Type.String({
  pattern: '^[0-9]{1,32}$',
  description:
    'The business portfolio (Meta business id) the number belongs to: its numbers share one messaging limit',
})
const LimitOverride = Type.Integer({
  minimum: 1,
  maximum: 100_000_000,
  description:
    'The portfolio’s messaging limit as the admin sets it, over the synced tier; null: the synced one',
})

/** The messaging limit as the sender sees it: the limit, where it comes from, the reach now. */
export const MessagingLimitView = Type.Object({
  /** Unique users the portfolio may reach outside their window in 24 h; null: unlimited. */
  limit: Type.Union([Type.Integer(), Type.Null()]),
  /** The tier Meta last reported (`TIER_250` … `TIER_UNLIMITED`); null: never reported. */
  tier: Type.Union([Type.String(), Type.Null()]),
  /** `admin` (the override), `synced` (the tier), `none` (no limit known: unlimited). */
  source: Type.Enum(['admin', 'synced', 'none']),
  /** The portfolio's key for the count: `business:<id>`, `waba:<id>` or `sender:<id>`. */
  portfolio: Type.String(),
  /** Users reached outside their window in the last 24 h; null: not counted (no finite limit, or `off`). */
  reach: Type.Union([Type.Integer(), Type.Null()]),
  /** When the oldest counted user leaves the 24 hours (room frees); null: nobody counted. */
  roomAt: Type.Union([DateTime, Type.Null()]),
  policy: Type.Enum(MESSAGING_LIMIT_POLICIES),
})
export type MessagingLimitView = Static<typeof MessagingLimitView>

/**
 * The number's and its account's health as Meta last reported it (webhooks `account_update`,
 * `business_capability_update`, `phone_number_quality_update`); null until reported.
 */
export const SenderHealth = Type.Object({
  /** The account's standing from `account_update` (`BANNED`, `RESTRICTED`, `DISABLED`, `ACTIVE`, …). */
  accountStatus: Type.Union([Type.String(), Type.Null()]),
  /** Why, as Meta says (its ban or restriction reason). */
  accountStatusReason: Type.Union([Type.String(), Type.Null()]),
  /** The messaging limit tier (`TIER_250`, `TIER_2K`, `TIER_10K`, `TIER_100K`, `TIER_UNLIMITED`). */
  messagingLimitTier: Type.Union([Type.String(), Type.Null()]),
  /** The number's quality (`GREEN`, `YELLOW`, `RED`, or Meta's event such as `FLAGGED`). */
  qualityRating: Type.Union([Type.String(), Type.Null()]),
  updatedAt: Type.Union([DateTime, Type.Null()]),
})
export type SenderHealth = Static<typeof SenderHealth>

const Rate = Type.Integer({
  minimum: 1,
  maximum: SENDER_MAX_RATE,
  description: 'Messages per second through this number, across every worker (default 80)',
})

/** A sender as admins see it: the token never, only its last four characters. */
/**
 * A frequency cap: at most `count` marketing messages (templates the catalog files under MARKETING)
 * to one recipient within `hours`, counted from the first, across every API instance.
 */
export const MarketingCap = Type.Object(
  {
    count: Type.Integer({ minimum: 1, maximum: 1000 }),
    hours: Type.Integer({ minimum: 1, maximum: 720 }),
  },
  {
    additionalProperties: false,
    description: 'At most `count` marketing messages per recipient within `hours`',
  },
)
export type MarketingCap = Static<typeof MarketingCap>

export const SenderView = Type.Object({
  id: Type.String(),
  phoneNumberId: Type.String(),
  displayName: Type.String(),
  displayPhoneNumber: Type.Union([Type.String(), Type.Null()]),
  ratePerSecond: Type.Integer(),
  state: Type.Enum(SENDER_STATES),
  /** Why it is `needs_attention` or `paused` (the platform's error, or the admin's note). */
  stateReason: Type.Union([Type.String(), Type.Null()]),
  accessTokenLast4: Type.Union([Type.String(), Type.Null()]),
  /** `environment` for the default sender (managed by `WHATSAPP_*`), `admin` for the others. */
  source: Type.Enum(['environment', 'admin']),
  wabaId: Type.Union([Type.String(), Type.Null()]),
  serviceWindowPolicy: Type.Enum(SERVICE_WINDOW_POLICIES),
  /** The frequency cap on marketing messages per recipient; null: none. */
  marketingCap: Type.Union([MarketingCap, Type.Null()]),
  /** How long the content of replies to this number is kept: `retain`, `discard` or hours. */
  inboundContentRetention: ContentRetention,
  /** Its own opt-out and opt-in keywords (folded as matched); null: the defaults. */
  consentKeywords: Type.Union([ConsentKeywords, Type.Null()]),
  /** The texts sent back to a user a keyword opted out or in; null: none. */
  consentConfirmation: Type.Union([ConsentConfirmation, Type.Null()]),
  /**
   * The channel fallback (`fallback`) a send through it carries when it has none of its own and its
   * key holds `send:sms-fallback` (docs/fallback.md); null: none.
   */
  defaultFallback: Type.Union([MessageFallback, Type.Null()]),
  /** When its template catalog was last synced; null: never (template sends are not checked). */
  templatesSyncedAt: Type.Union([DateTime, Type.Null()]),
  /** The business portfolio it shares a messaging limit with; null: a portfolio of its own (its WABA). */
  businessId: Type.Union([Type.String(), Type.Null()]),
  messagingLimitPolicy: Type.Enum(MESSAGING_LIMIT_POLICIES),
  /** The admin's messaging limit over the synced tier; null: the synced one. */
  messagingLimitOverride: Type.Union([Type.Integer(), Type.Null()]),
  messagingLimit: MessagingLimitView,
  health: SenderHealth,
  createdAt: DateTime,
  updatedAt: DateTime,
})
export type SenderView = Static<typeof SenderView>

export const CreateSenderBody = Type.Object(
  {
    phoneNumberId: PhoneNumberId,
    displayName: DisplayName,
    displayPhoneNumber: Type.Optional(DisplayPhoneNumber),
    accessToken: AccessToken,
    ratePerSecond: Type.Optional(Rate),
    wabaId: Type.Optional(WabaId),
    serviceWindowPolicy: Type.Optional(WindowPolicy),
    marketingCap: Type.Optional(Type.Union([MarketingCap, Type.Null()])),
    inboundContentRetention: Type.Optional(ContentRetention),
    consentKeywords: Type.Optional(Type.Union([ConsentKeywords, Type.Null()])),
    consentConfirmation: Type.Optional(Type.Union([ConsentConfirmation, Type.Null()])),
    defaultFallback: Type.Optional(Type.Union([MessageFallback, Type.Null()])),
    businessId: Type.Optional(BusinessId),
    messagingLimitPolicy: Type.Optional(LimitPolicy),
    messagingLimitOverride: Type.Optional(Type.Union([LimitOverride, Type.Null()])),
  },
  { additionalProperties: false },
)
export type CreateSenderBody = Static<typeof CreateSenderBody>

/** `state` takes `active` or `paused` from an admin; `needs_attention` is set by the service only. */
export const UpdateSenderBody = Type.Object(
  {
    displayName: Type.Optional(DisplayName),
    displayPhoneNumber: Type.Optional(Type.Union([DisplayPhoneNumber, Type.Null()])),
    accessToken: Type.Optional(AccessToken),
    ratePerSecond: Type.Optional(Rate),
    state: Type.Optional(Type.Enum(['active', 'paused'])),
    wabaId: Type.Optional(Type.Union([WabaId, Type.Null()])),
    serviceWindowPolicy: Type.Optional(WindowPolicy),
    marketingCap: Type.Optional(Type.Union([MarketingCap, Type.Null()])),
    inboundContentRetention: Type.Optional(ContentRetention),
    consentKeywords: Type.Optional(Type.Union([ConsentKeywords, Type.Null()])),
    consentConfirmation: Type.Optional(Type.Union([ConsentConfirmation, Type.Null()])),
    defaultFallback: Type.Optional(Type.Union([MessageFallback, Type.Null()])),
    businessId: Type.Optional(Type.Union([BusinessId, Type.Null()])),
    messagingLimitPolicy: Type.Optional(LimitPolicy),
    messagingLimitOverride: Type.Optional(Type.Union([LimitOverride, Type.Null()])),
  },
  { additionalProperties: false, minProperties: 1 },
)
export type UpdateSenderBody = Static<typeof UpdateSenderBody>

export const SenderIdParams = Type.Object({ id: Type.String({ maxLength: 64 }) })

export const SenderListQuery = Type.Object(
  {
    ...listQueryProperties,
    orderField: Type.Enum(['createdAt', 'displayName'], { default: 'createdAt' }),
    state: Type.Optional(Type.Enum(SENDER_STATES)),
  },
  { additionalProperties: false },
)
export type SenderListQuery = Static<typeof SenderListQuery>

export const SenderList = DataEnvelope(SenderView)
export type SenderList = Static<typeof SenderList>
