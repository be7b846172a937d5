import Type, { type Static } from 'typebox'
import { Phone, UserId } from './recipients.ts'

/**
 * Erasure (issue 25): everything Dispatch holds about one recipient removed, for every key (an
 * admin's) or for one key's own data (a key's, with `manage:data`). The record names the recipient
 * by its hash only; the phone or BSUID travels in the erasure's job, never in its row.
 */

export const ERASURE_STATUSES = ['pending', 'running', 'completed', 'failed'] as const
export type ErasureStatus = (typeof ERASURE_STATUSES)[number]

/** `all`: every key's data (an admin's); `key`: the requesting key's own. */
export const ERASURE_SCOPES = ['all', 'key'] as const
export type ErasureScope = (typeof ERASURE_SCOPES)[number]

/** Who to erase: exactly one of `phone` and `userId` (checked by the route, naming the field). */
export const CreateErasureBody = Type.Object(
  { phone: Type.Optional(Phone), userId: Type.Optional(UserId) },
  { additionalProperties: false },
)
export type CreateErasureBody = Static<typeof CreateErasureBody>

/** What an erasure did, per table or Redis structure: how many rows or entries it changed or removed. */
export const ErasureReport = Type.Object(
  {
    /** Rows whose recipient and content were removed (`redacted_at` set); their status, counts and times stay. */
    messages: Type.Integer(),
    /** Messages still queued or scheduled, canceled before they went (each counted in `messages` too). */
    messagesCanceled: Type.Integer(),
    /** Error texts of the messages' failed attempts removed (the platform's may quote the number). */
    messageAttempts: Type.Integer(),
    inboundMessages: Type.Integer(),
    /** Webhook events whose recipient and content fields were removed. */
    webhookEvents: Type.Integer(),
    /** Receivers' answers (excerpts) to those events removed: a receiver may echo what it got. */
    webhookAttempts: Type.Integer(),
    /** Opt-outs kept, their recipient replaced by its hash. */
    suppressions: Type.Integer(),
    /** `all` only: the business numbers' records of the recipient (shared by every key). */
    conversationWindows: Type.Integer(),
    recipientIdentities: Type.Integer(),
    /** Rows of campaigns' audiences that named them, their recipient, variables and uploaded line removed. */
    campaignRecipients: Type.Integer(),
    /** `all` only: opt-out confirmations sent to them (outbox rows, and their jobs). */
    consentConfirmations: Type.Integer(),
    /** Jobs removed from Redis: finished message and webhook jobs, still holding what they carried. */
    redisJobs: Type.Integer(),
    /** Idempotency answers that quoted the recipient, rewritten without it (a retry still replays). */
    idempotencyAnswers: Type.Integer(),
    /** Other Redis keys removed (the 24-hour window; an opt-out or cap count keyed by the plain recipient). */
    redisKeys: Type.Integer(),
    /** Messages a worker held while the erasure ran, which it could not reach (0 when it waited them out). */
    inFlight: Type.Integer(),
  },
  { additionalProperties: false },
)
export type ErasureReport = Static<typeof ErasureReport>

export const emptyErasureReport = (): ErasureReport => ({
  messages: 0,
  messagesCanceled: 0,
  messageAttempts: 0,
  inboundMessages: 0,
  webhookEvents: 0,
  webhookAttempts: 0,
  suppressions: 0,
  conversationWindows: 0,
  recipientIdentities: 0,
  campaignRecipients: 0,
  consentConfirmations: 0,
  redisJobs: 0,
  idempotencyAnswers: 0,
  redisKeys: 0,
  inFlight: 0,
})

const DateTime = Type.String({ format: 'date-time' })
const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()])

export const ErasureView = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    status: Type.Enum(ERASURE_STATUSES),
    /** The recipient, as its keyed hash (`hmac:…`): the same for every erasure of them. */
    subject: Type.Object({ hash: Type.String() }, { additionalProperties: false }),
    scope: Type.Enum(ERASURE_SCOPES),
    /** `admin:<name>` or `key:<id>`. */
    requestedBy: Type.String(),
    /** Once completed: what was erased, per table and Redis structure. */
    report: Nullable(ErasureReport),
    /** Once failed: why (never naming the recipient). */
    error: Nullable(Type.String()),
    createdAt: DateTime,
    startedAt: Nullable(DateTime),
    completedAt: Nullable(DateTime),
  },
  { additionalProperties: false },
)
export type ErasureView = Static<typeof ErasureView>

/**
 * The erasure's job (queue `erasures`): the recipient in plain, which only the job carries. The
 * worker removes the job once it ends, either way, and strips the recipient from its outbox row.
 */
export const ErasureJob = Type.Object(
  {
    outboxId: Type.String({ pattern: '^[0-9]+$' }),
    erasureId: Type.String({ format: 'uuid' }),
    phone: Type.Optional(Phone),
    userId: Type.Optional(UserId),
    /**
     * Every identity of the recipient, as the job's first run found them (the phone-BSUID pairs an
     * admin's erasure then deletes): a retried run erases the same ones.
     */
    identities: Type.Optional(
      Type.Object(
        { phones: Type.Array(Phone), userIds: Type.Array(UserId) },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
)
export type ErasureJob = Static<typeof ErasureJob>
export type ErasurePayload = Omit<ErasureJob, 'outboxId' | 'identities'>

/** The kinds of line a recipient's export holds (`GET …/recipients/:phone/export`). */
export const EXPORT_KINDS = ['message', 'inbound_message', 'event', 'suppression'] as const
export type ExportKind = (typeof EXPORT_KINDS)[number]
