import Type, { type Static } from 'typebox'
import { OrderEmailJob } from './order-emails.ts'

/** Queue names shared by the API, the relay and the workers. Never rename one: jobs live in Redis. */
export const QueueNames = {
  email: 'email',
  messages: 'messages',
  webhooks: 'webhooks',
  /** A keyword's confirmation back to the user: relayed from the outbox, sent by a messages worker. */
  consentConfirmations: 'consent-confirmations',
  /** A recipient's erasure: relayed from the outbox, run by a `lifecycle` worker. */
  erasures: 'erasures',
  /** A revoked key's queued and scheduled messages canceled: relayed from the outbox, run by a `lifecycle` worker. */
  keyRevocations: 'key-revocations',
  /** A canceled campaign's sweep: its messages still in Redis canceled (docs/campaigns.md). */
  campaignCancels: 'campaign-cancels',
  /**
   * A message's "no `delivered` within `fallback.afterSeconds`" timer: a delayed job per message,
   * added when WhatsApp took it, run by a messages worker (docs/fallback.md).
   */
  smsFallbackTimers: 'sms-fallback-timers',
} as const
export type QueueName = (typeof QueueNames)[keyof typeof QueueNames]

/** Redis pub/sub channel (under the queue prefix) that tells API instances to drop a cached key. */
export const API_KEY_INVALIDATION_CHANNEL = 'api-keys:invalidate'

export const EMAIL_TEMPLATES = ['api-key.approved', 'api-key.rejected', 'api-key.revoked'] as const
export type EmailTemplate = (typeof EMAIL_TEMPLATES)[number]

export const ApiKeyEmailData = Type.Object(
  {
    keyId: Type.String(),
    clientName: Type.String(),
    keyPrefix: Type.String(),
    reason: Type.Union([Type.String(), Type.Null()]),
  },
  { additionalProperties: false },
)
export type ApiKeyEmailData = Static<typeof ApiKeyEmailData>

export const ApiKeyEmailJob = Type.Object(
  {
    outboxId: Type.String({ pattern: '^[0-9]+$' }),
    to: Type.String({ minLength: 3 }),
    template: Type.Enum(EMAIL_TEMPLATES),
    data: ApiKeyEmailData,
  },
  { additionalProperties: false },
)

/** Told to a key's owner when the service disables one of its webhook endpoints. */
export const WebhookEndpointEmailJob = Type.Object(
  {
    outboxId: Type.String({ pattern: '^[0-9]+$' }),
    to: Type.String({ minLength: 3 }),
    template: Type.Literal('webhook-endpoint.disabled'),
    data: Type.Object(
      {
        endpointId: Type.String(),
        url: Type.String(),
        clientName: Type.String(),
        /** `gone`: it answered 410; `failing`: every delivery failed for too long. */
        reason: Type.Enum(['gone', 'failing']),
        failingSince: Type.Union([Type.String(), Type.Null()]),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
)

/** Told to the admins (`ADMIN_ALERT_EMAIL`) when a sender needs attention (its token was refused). */
export const SenderAlertEmailJob = Type.Object(
  {
    outboxId: Type.String({ pattern: '^[0-9]+$' }),
    to: Type.String({ minLength: 3 }),
    template: Type.Literal('sender.needs-attention'),
    data: Type.Object(
      {
        senderId: Type.String(),
        displayName: Type.String(),
        phoneNumberId: Type.String(),
        /** The platform's error code and text. */
        code: Type.String(),
        reason: Type.String(),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
)

/**
 * Told to the admins (`ADMIN_ALERT_EMAIL`) when Meta reports an account or number state in which
 * sends will fail (a ban, a restriction, a deleted account).
 */
export const SenderAccountAlertEmailJob = Type.Object(
  {
    outboxId: Type.String({ pattern: '^[0-9]+$' }),
    to: Type.String({ minLength: 3 }),
    template: Type.Literal('sender.account-alert'),
    data: Type.Object(
      {
        senderId: Type.String(),
        displayName: Type.String(),
        phoneNumberId: Type.String(),
        /** The account's state as Dispatch records it (`BANNED`, `RESTRICTED`, …) and Meta's words. */
        accountStatus: Type.String(),
        reason: Type.String(),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
)

/** One e-mail to send. `outboxId` ties it to the outbox row that asked for it (and dedupes the job). */
export const EmailJob = Type.Union([
  ApiKeyEmailJob,
  SenderAccountAlertEmailJob,
  OrderEmailJob,
  WebhookEndpointEmailJob,
  SenderAlertEmailJob,
])
export type EmailJob = Static<typeof EmailJob>

/** What an outbox row of topic `email` carries: the job minus the id the relay adds. */
export type EmailOutboxPayload = EmailJob extends infer J
  ? J extends unknown
    ? Omit<J, 'outboxId'>
    : never
  : never
