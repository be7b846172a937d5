import type { MessageJob, OutboundMessage, ServiceWindowPolicy } from '@dispatch/contracts'
import type { Db, DeliveryOutcome } from '@dispatch/db'
import type { MessagingLimit, RecipientHasher } from '@dispatch/runtime'
import type { RedisClient } from '@dispatch/runtime/redis'
import type { Logger } from 'pino'
import type { DeliveryMetrics } from '../../metrics/registry.ts'
import type { SmsProvider } from '../../platforms/sms/types.ts'
import type { MessagingPlatform, PlatformError } from '../../platforms/types.ts'
import type { CanceledCampaigns } from '../canceled-campaigns.ts'
import type { OptOutWatch } from '../consent/watch.ts'
import type { DeliveryRecorder, LoggedEntry } from '../delivery-recorder.ts'
import type { SmsFallbackTimers } from '../fallback-timer.ts'
import type { RevokedKeys } from '../revoked-keys.ts'

/** What a job ends with: the platform's id, or why it was never sent. */
export type Delivered =
  | { platformMessageId: string; fallbackUsed?: true }
  | { outcome: 'expired' | 'canceled' }
export type DeliveryResult =
  | Delivered
  /** Another job holds the message's claim and delivers it (message-bundles.ts). */
  | { outcome: 'elsewhere' }

/** The sender a job is delivered through, as its lane holds it now (its token may change). */
export interface DeliveryLane {
  senderId: string
  platform: MessagingPlatform
  /** `messagingLimit`: its portfolio's (absent: none, nothing counted). */
  settings: { serviceWindowPolicy: ServiceWindowPolicy; messagingLimit?: MessagingLimit | undefined }
  /** Pauses this sender for the platform's rate limit (lanes.ts). */
  rateLimit(ms: number): Promise<{ pauseMs: number; newPause: boolean }>
  /** Until when this process knows the sender to be rate limited (ms; 0 or past: not). */
  readonly limitedUntil: number
  /** While still limited: the limiter key set to what is left of the pause; answers whether it was. */
  holdForLimit(): Promise<boolean>
  /** Takes one message's place from the sender's pace: a retry the platform will see. */
  spendPace(): Promise<void>
  /** Pauses this sender (its token was refused): `needs_attention`, alert, queue paused. */
  tokenRefused(error: PlatformError): Promise<void>
}

export interface DeliveryDeps {
  db: Db
  /** A non-blocking connection, for the message claims that settle a race with a cancel. */
  claims: RedisClient
  logger: Logger
  prefix: string
  /** The recipient's hash, which the Redis copy of the suppression list is keyed by. */
  hash: RecipientHasher
  recorder: DeliveryRecorder
  /**
   * The sender's sent log (sent-log.ts): a sent outcome is appended there and written to Postgres
   * after the job completes. Without it, the job waits for its row (as the benchmark's baseline).
   */
  sentLog?:
    | {
        stream: string
        redis: RedisClient
        /** Appends an outcome (a bundle's: batchedLogSent); without it, one XADD of its own. */
        append?: (outcome: DeliveryOutcome) => Promise<LoggedEntry>
      }
    | undefined
  /** Counts outcomes, when metrics are on. */
  metrics?: DeliveryMetrics | undefined
  /** The opt-outs this process heard of; without it, every delivery reads its recipient's entry. */
  optOuts?: Pick<OptOutWatch, 'mustRead'> | undefined
  /** The revoked keys this process knows of (revoked-keys.ts): their messages are never sent. */
  revokedKeys?: Pick<RevokedKeys, 'has'> | undefined
  /** The canceled campaigns this process knows of (canceled-campaigns.ts): their messages are never sent. */
  canceledCampaigns?: Pick<CanceledCampaigns, 'has'> | undefined
  /** The SMS provider of the channel fallback (SMS_PROVIDER); none: a decided fallback fails. */
  sms?: SmsProvider | undefined
  /** The "no `delivered` in time" timers of the fallback (fallback-timer.ts); none: never armed. */
  fallbackTimers?: Pick<SmsFallbackTimers, 'arm' | 'runNow' | 'runIfUndeliverable'> | undefined
  /** Its pool numbers' rotation, and the hand-off of a fallen one's messages (pool-mover.ts). */
  rotation?: RotationWatch | undefined
}

/** What a job asks of the pool mover (pool-mover.ts) when its number may have left rotation. */
export interface RotationWatch {
  /** Whether the sender is out of rotation in one of its pools (its health, a 130429 streak). */
  leftRotation(senderId: string): boolean
  /**
   * Moves those of `messages` (none of them sent by the job `holder`) that may move to a healthy
   * member, their claims renamed after their new jobs; answers the ids moved.
   */
  handOver(senderId: string, messages: MessageJob[], holder: string): Promise<Set<string>>
  /** A 130429 streak this process' lane met (since, until: ms), known here before it is announced. */
  rateLimited(senderId: string, since: number, until: number): void
  /**
   * A pool's numbers (phone number ids), whose opt-outs stop its messages: at once when known, a
   * promise while it is read, undefined when the pool is not there (pool-mover.ts).
   */
  poolNumbers(
    poolId: string,
    acceptedAt: number,
  ): readonly string[] | Promise<readonly string[] | undefined> | undefined
}

/** How one job runs one message: the single job's own run, or one message of a bundle. */
export interface DeliveryRun {
  /** The claim's value this run holds: `worker` for a message's own job, a bundle's job id. */
  claimAs: string
  /** A claim held under this name is this run's too: the bundle that handed the message on. */
  takesOver?: string | undefined
  /** Attempts this job made at this message before this run. */
  attemptsMade: number
  /** The most attempts this job makes at the message. */
  maxAttempts: number
  /** The job ran before (a retry, a stalled or rate-limited run): the message may be sent already. */
  rerun: boolean
  /** What an earlier run kept of a send it could not record (without a sent log). */
  progress?: { platformMessageId?: string; fallbackUsed?: boolean } | undefined
}

/** What one run of one message ended with. Every outcome but `held` and `elsewhere` is recorded. */
export type Disposition =
  /** `recorded`: a sent outcome's row is written after the run, from the sent log; settles then. */
  | { kind: 'done'; result: Delivered; recorded?: Promise<void>; logged?: Promise<LoggedEntry> }
  /** Failed for good (recorded `failed`). */
  | { kind: 'failed'; reason: string }
  /**
   * To be tried again after `delayMs`; `spent`: an attempt was made (and recorded `sending`).
   * `held`: not tried, but held (`scheduled` until `sendAt`, for `scheduledReason`): the job says so.
   */
  | {
      kind: 'again'
      error: Error
      spent: boolean
      delayMs?: number
      held?: { sendAt: string; scheduledReason: 'messaging_limit' }
      /** Sent already (its fallback's timer not armed): kept on the job, so its next run never sends. */
      sent?: { platformMessageId: string; fallbackUsed: boolean }
    }
  /** Not sent: the sender is paused (a platform rate limit, a refused token); back in the queue. */
  | { kind: 'held' }
  /** Another job holds its claim (a bundle made again after an admitter died): that one sends it. */
  | { kind: 'elsewhere' }

/** One message's delivery under way: what each step of the pipeline (deliver.ts) reads. */
export interface MessageDelivery {
  data: MessageJob
  run: DeliveryRun
  lane: DeliveryLane
  deps: DeliveryDeps
  log: Logger
  /** This attempt's number: the attempts this job made at the message before, plus this one. */
  attempts: number
  /**
   * Its fallback's SMS when the `sent` record keeps it (`smsKeptWithRecord`): every `sent` outcome
   * carries it, and no hold is written in Redis. Undefined: none, or kept by a timer or hold.
   */
  smsFallbackText: string | undefined
  /**
   * The message's outcome, `attempts` counted on from an admin's retry or a bundle's hand-off (the
   * record keeps the greater count, so outcomes that spend no attempt pass their own, no offset).
   */
  outcome(status: DeliveryOutcome['status'], fields: Partial<DeliveryOutcome>): DeliveryOutcome
}

/** Cleared to go to the platform: the message, or its fallback template when the window is closed. */
export type Cleared = { kind: 'send'; message: OutboundMessage; fallbackUsed: boolean }
