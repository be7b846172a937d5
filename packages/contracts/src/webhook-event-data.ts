import Type, { type TSchema } from 'typebox'
import { CAMPAIGN_RECIPIENT_STATES } from './campaigns.ts'
import { SUPPRESSION_SCOPES, SUPPRESSION_SOURCES } from './consent.ts'
import { MESSAGE_TYPES } from './message-types.ts'
import { POOL_EXCLUSION_REASONS } from './sender-pools.ts'

/**
 * The `data` of each webhook event, as the database writes it (the triggers and functions of
 * packages/db: `dispatch_message_webhook_events`, `dispatch_inbound_webhook_events`,
 * `dispatch_fallback_webhook_events`, template updates, sender health, consent, campaigns). Each
 * field carries an example, from which `webhookEventExample` builds the catalog's example bodies.
 * Open objects: events may gain fields, and receivers should ignore those they do not know.
 */

const at = '2026-11-23T21:51:04.000Z'
const Str = (example: string, description?: string) =>
  Type.String({ examples: [example], ...(description ? { description } : {}) })
const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()])
const Int = (example: number, description?: string) =>
  Type.Integer({ minimum: 0, examples: [example], ...(description ? { description } : {}) })
const Flag = (description: string) => Type.Optional(Type.Literal(true, { description }))

const messageId = Type.String({ format: 'uuid', examples: ['01975f2a-9c41-7d3e-8b6a-3f2c1d0e9a87'] })
const sequence = Int(1, "Counts this message's events 1, 2, 3… in the order recorded: order by it")
const clientReference = Nullable(Str('booking-1', 'The reference given at send'))
const phone = Nullable(Str('+5511987654321', 'The recipient, E.164; null when known by userId only'))
const userId = Type.Optional(Str('BR.1a2b3c4d5e6f', "The recipient's business-scoped user id, when known"))
const redacted = Flag('The content was removed (retention or erasure): only what names the message is left')
const messageType = Type.Enum(MESSAGE_TYPES, { examples: ['text'] })
const senderId = Str('default', 'The sender (business number) it concerns')

const MessageError = Type.Object({
  code: Nullable(Str('131026', "The platform's (or Dispatch's) error code")),
  message: Nullable(Str('Message undeliverable')),
  willRetry: Type.Boolean({ examples: [false], description: 'True: tried again, `status` stays `sending`' }),
})

/** An outbound message's status change: `message.sent` … `message.canceled`. */
function messageStatus(status: string, error: boolean) {
  return Type.Object({
    messageId,
    clientReference,
    status:
      status === 'failed'
        ? Type.Enum(['failed', 'sending'], { examples: [status] })
        : Type.Literal(status, { examples: [status] }),
    sequence,
    type: messageType,
    phone,
    attempts: Int(1, 'Delivery attempts made'),
    error: error ? MessageError : Type.Null(),
    userId,
    fallbackUsed: Flag('Its fallback template went out instead (the 24-hour window was closed)'),
    redacted,
  })
}

const templateCommon = {
  senderId,
  templateId: Str('1123581321345589', "Meta's template id"),
  name: Str('order_ready'),
  language: Str('pt_BR'),
  sequence,
}

const recipientChange = Type.Object({
  phone: Type.Optional(Str('+5511987654321', 'The recipient (absent when known by userId, or erased)')),
  userId,
  senderId,
  phoneNumberId: Str('100000000000001', 'The business number it concerns'),
  scope: Type.Enum(SUPPRESSION_SCOPES, { examples: ['all'] }),
  source: Type.Enum(SUPPRESSION_SOURCES, { examples: ['keyword'] }),
  reason: Nullable(Str('STOP')),
  sequence,
})

const campaignCommon = {
  campaignId: Type.String({ format: 'uuid', examples: ['01975f2a-0000-7a10-9c2d-5e6f7a8b9c0d'] }),
  name: Str('November newsletter'),
  sequence,
}
const Counts = Type.Object(
  Object.fromEntries(
    CAMPAIGN_RECIPIENT_STATES.map((state) => [
      state,
      Int(state === 'delivered' ? 950 : state === 'failed' ? 12 : 0),
    ]),
  ),
)
const campaignTally = Type.Object({
  ...campaignCommon,
  counts: Counts,
  failedByCode: Type.Record(Type.String(), Type.Integer(), { examples: [{ '131026': 12 }] }),
  pricing: Type.Object({
    billable: Int(950),
    byCategory: Type.Record(Type.String(), Type.Integer(), { examples: [{ marketing: 950 }] }),
  }),
  engagement: Type.Object({ replied: Int(31), optedOut: Int(2) }),
})

/** Each event type's `data`, with its description. */
export const WEBHOOK_EVENT_DATA = {
  'message.sent': ['The platform accepted the message.', messageStatus('sent', false)],
  'message.delivered': [
    "The platform's status webhook said it reached the phone.",
    messageStatus('delivered', false),
  ],
  'message.read': ["The platform's status webhook said the recipient read it.", messageStatus('read', false)],
  'message.failed': [
    'An attempt failed: `error.willRetry` says whether it is tried again (`status` stays `sending`) or failed for good.',
    messageStatus('failed', true),
  ],
  'message.expired': [
    'The message was not sent before its validity ran out.',
    messageStatus('expired', true),
  ],
  'message.canceled': ['The message was canceled before a worker took it.', messageStatus('canceled', false)],
  'message.fallback_sent': [
    "The message's SMS fallback was taken by the SMS provider (once); `fallback` says why and when.",
    Type.Object({
      messageId,
      clientReference,
      status: Str('failed', 'The WhatsApp message’s status'),
      sequence,
      type: messageType,
      phone,
      channel: Type.Literal('sms', { examples: ['sms'] }),
      fallback: Type.Object({
        channel: Type.Literal('sms', { examples: ['sms'] }),
        reason: Str('whatsapp_undeliverable'),
        reasonCode: Nullable(Str('131026')),
        at: Type.String({ format: 'date-time', examples: [at] }),
        state: Str('sent'),
        status: Nullable(Str('sent', "The SMS's delivery as the provider reports it")),
      }),
      userId,
      redacted,
    }),
  ],
  'message.sender_changed': [
    "A waiting message of a pooled key moved off a number that left its pool's rotation " +
      '(docs/sender-pools.md).',
    Type.Object({
      messageId,
      sequence,
      senderChanged: Type.Object({
        from: Str('default', 'The number it waited on'),
        to: Str('second-number', 'The pool member it goes through now'),
        reason: Type.Enum(POOL_EXCLUSION_REASONS, {
          examples: ['quality_red'],
          description: 'Why the number it waited on left the rotation',
        }),
        at: Type.String({ format: 'date-time', examples: [at] }),
      }),
    }),
  ],
  'message.delivered_after_failure': [
    'WhatsApp reported the message delivered (or read) after it failed, a 131026 say, whose SMS fallback may have gone too: recorded beside `failed`, which stays (`status`); once per message.',
    Type.Object({
      messageId,
      clientReference,
      status: Type.Literal('failed', {
        examples: ['failed'],
        description: 'The message’s status, unchanged',
      }),
      sequence,
      type: messageType,
      phone,
      reported: Type.Enum(['delivered', 'read'], {
        examples: ['delivered'],
        description: 'What WhatsApp reported first after the failure',
      }),
      deliveredAt: Type.String({
        format: 'date-time',
        examples: [at],
        description: 'When, as WhatsApp said',
      }),
      fallbackState: Nullable(
        Str(
          'sent',
          "Its SMS fallback's state then (`sent`: both channels reached the recipient); null: none",
        ),
      ),
      userId,
      redacted,
    }),
  ],
  'message.received': [
    'A recipient replied: one content key per kind (`text`, `media`, `location`, `button`…).',
    Type.Object({
      messageId,
      clientReference,
      status: Type.Literal('received', { examples: ['received'] }),
      sequence,
      type: Str('text', 'The kind of reply: text, image, location, button, interactive, reaction…'),
      phone,
      inReplyTo: Nullable(
        Type.String({ format: 'uuid', examples: ['01975f2a-9c41-7d3e-8b6a-3f2c1d0e9a88'] }),
      ),
      phoneNumberId: Str('100000000000001', 'The business number it was sent to'),
      text: Type.Optional(Str('On my way')),
      userId,
      username: Type.Optional(Str('ana.s')),
      redacted,
    }),
  ],
  'template.status_updated': [
    'Meta approved, rejected, paused or disabled a template of the sender.',
    Type.Object({
      ...templateCommon,
      event: Str('APPROVED', "Meta's event"),
      status: Str('APPROVED'),
      previousStatus: Nullable(Str('PENDING')),
      reason: Nullable(Str('NONE')),
    }),
  ],
  'template.quality_updated': [
    "Meta changed a template's quality rating.",
    Type.Object({ ...templateCommon, quality: Str('GREEN'), previousQuality: Nullable(Str('YELLOW')) }),
  ],
  'template.category_updated': [
    "Meta changed a template's category (and so its price).",
    Type.Object({
      ...templateCommon,
      category: Str('MARKETING'),
      previousCategory: Nullable(Str('UTILITY')),
    }),
  ],
  'sender.updated': [
    "Meta changed the sender's account: its status, quality rating or messaging limit tier.",
    Type.Object({
      senderId,
      source: Str('account_update', 'What reported it'),
      health: Type.Object({
        accountStatus: Nullable(Str('CONNECTED')),
        accountStatusReason: Nullable(Str('')),
        messagingLimitTier: Nullable(Str('TIER_10K')),
        qualityRating: Nullable(Str('GREEN')),
        updatedAt: Type.String({ format: 'date-time', examples: [at] }),
      }),
      sequence,
    }),
  ],
  'recipient.opted_out': [
    'A recipient of the sender opted out (a keyword, their preferences, an entry).',
    recipientChange,
  ],
  'recipient.opted_in': [
    'A recipient of the sender opted back in, or their entry was lifted.',
    recipientChange,
  ],
  'campaign.started': [
    'A campaign started: `audience` recipients will be sent its template.',
    Type.Object({ ...campaignCommon, audience: Int(1000, 'Recipients taken from its upload') }),
  ],
  'campaign.progress': ["A running campaign's counts, at most every few seconds.", campaignTally],
  'campaign.completed': [
    'A campaign ended: every recipient reached an outcome; its final counts.',
    campaignTally,
  ],
} as const satisfies Record<string, readonly [string, TSchema]>

export const EXAMPLE_EVENT_TIME = at
