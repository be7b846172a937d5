import { fileURLToPath } from 'node:url'
import { WEBHOOK_BUNDLE_MAX } from '@dispatch/contracts'
import {
  ConfigError,
  commonEnv,
  exitOnConfigError,
  type PlatformName,
  parseEnv,
  poolEnv,
  throwConfigProblems,
} from '@dispatch/runtime/env'
import { MESSAGE_BUNDLE_MAX, MESSAGE_CLAIM_KEEP_MS } from '@dispatch/runtime/message-handoff'
import { serviceEnv, serviceKeyChecks, serviceSettings } from '@dispatch/runtime/service-env'
import type { SmsProviderName } from '@dispatch/runtime/sms'
import { tracingEnv } from '@dispatch/runtime/tracing'
import Type, { type Static } from 'typebox'
import { parseRetrySchedule } from './shared/webhook-retry-schedule.ts'

/** The queues (and loops) a worker process can run; ops pick per process with WORKER_QUEUES. */
export const WORKER_ROLES = ['email', 'outbox', 'messages', 'webhooks', 'lifecycle'] as const
export type WorkerRole = (typeof WORKER_ROLES)[number]

const WorkerEnv = Type.Object({
  ...commonEnv,
  ...poolEnv,
  WORKER_QUEUES: Type.String({
    pattern: `^(${WORKER_ROLES.join('|')})(,(${WORKER_ROLES.join('|')}))*$`,
    default: WORKER_ROLES.join(','),
  }),
  EMAIL_CONCURRENCY: Type.Integer({ minimum: 1, maximum: 100, default: 5 }),
  EMAIL_ATTEMPTS: Type.Integer({ minimum: 1, maximum: 50, default: 8 }),
  EMAIL_BACKOFF_MS: Type.Integer({ minimum: 10, default: 2000 }),
  SMTP_URL: Type.Optional(Type.String({ pattern: '^smtps?://' })),
  MAIL_FROM: Type.String({ minLength: 3, default: 'Dispatch <no-reply@dispatch.local>' }),
  MAIL_DIR: Type.String({ minLength: 1, default: fileURLToPath(new URL('../../../.mail', import.meta.url)) }),
  OUTBOX_POLL_MS: Type.Integer({ minimum: 10, default: 1000 }),
  OUTBOX_BATCH_SIZE: Type.Integer({ minimum: 1, maximum: 1000, default: 100 }),
  SHUTDOWN_GRACE_MS: Type.Integer({ minimum: 0, default: 30_000 }),
  MESSAGES_CONCURRENCY: Type.Integer({ minimum: 1, maximum: 1000, default: 20 }),
  /**
   * The most messages of one sender the admitter puts in one job (docs/delivery.md, "Bundles"):
   * BullMQ's fetch and completion paid once for them. 1: a job per message.
   */
  MESSAGES_BUNDLE_SIZE: Type.Integer({ minimum: 1, maximum: MESSAGE_BUNDLE_MAX, default: 20 }),
  MESSAGES_BACKOFF_MS: Type.Integer({ minimum: 1, default: 1000 }),
  /** How long a job's lock lasts, and how often stalled jobs (of a killed worker) are looked for. */
  MESSAGES_LOCK_MS: Type.Integer({ minimum: 100, default: 30_000 }),
  MESSAGES_STALLED_INTERVAL_MS: Type.Integer({ minimum: 100, default: 30_000 }),
  /**
   * How long a message's claim stays in Redis once its final outcome is committed in Postgres
   * (docs/durability.md, "How long a claim stays"); the record answers for it afterwards. 0: deleted at once.
   */
  MESSAGE_CLAIM_KEEP_MS: Type.Integer({ minimum: 0, maximum: 3_600_000, default: MESSAGE_CLAIM_KEEP_MS }),
  /**
   * The senders this process delivers for: `*` (all, the default) or sender ids, comma-separated
   * (`default` is the environment's). A pool per group of senders is how ops isolate big numbers.
   */
  WORKER_SENDERS: Type.String({ pattern: '^(\\*|[A-Za-z0-9_-]+(,[A-Za-z0-9_-]+)*)$', default: '*' }),
  /** How often senders are read again, beside the API's announcements of each change. */
  SENDER_REFRESH_MS: Type.Integer({ minimum: 100, default: 10_000 }),
  /**
   * How often the messages waiting for a held sender (paused, needing attention, or switched off)
   * are checked for an ended validity, and recorded `expired` then rather than when it resumes.
   */
  EXPIRY_SWEEP_MS: Type.Integer({ minimum: 100, maximum: 600_000, default: 5_000 }),
  /**
   * How often a `messages` worker (and once at its start) looks for message jobs BullMQ failed as
   * stalled whose SMS fallback was never handed to a timer, its process killed at that instant
   * (docs/fallback.md, "Outages").
   */
  SMS_STALLED_SWEEP_MS: Type.Integer({ minimum: 100, maximum: 3_600_000, default: 300_000 }),
  /**
   * How often each sender's template catalog is synced from its WhatsApp Business Account (0: never;
   * admins can still sync on demand). Meta's webhooks keep it current in between.
   */
  TEMPLATE_SYNC_INTERVAL_MS: Type.Integer({ minimum: 0, default: 3_600_000 }),
  /**
   * How often a worker checks that the Redis copy of the 24-hour windows is complete, and rebuilds
   * it from Postgres when it is not (a Redis that lost its data).
   */
  SERVICE_WINDOW_CHECK_MS: Type.Integer({ minimum: 100, default: 60_000 }),
  /** How often each sender with waiting messages is topped up from its fair-admission lists. */
  ADMISSION_INTERVAL_MS: Type.Integer({ minimum: 5, maximum: 10_000, default: 50 }),
  /**
   * How much of a sender's rate waits in its queue, admitted ahead: enough to keep its workers busy
   * between top-ups. A newly arrived key's first message waits up to about twice this (the rate
   * limit runs in one-second windows; measured in docs/benchmarks-paths.md).
   */
  SENDER_QUEUE_WINDOW_MS: Type.Integer({ minimum: 50, maximum: 60_000, default: 500 }),
  ...serviceEnv,
  /**
   * Where this process serves `GET /metrics`: unset, no listener (and nothing counted); 0, any free
   * port (logged). One listener for the whole process, whatever its WORKER_QUEUES.
   */
  METRICS_PORT: Type.Optional(Type.Integer({ minimum: 0, maximum: 65535 })),
  METRICS_HOST: Type.String({ minLength: 1, default: '127.0.0.1' }),
  /**
   * On SIGTERM, how long `/metrics` stays up after the last job has finished, so a last scrape reads
   * this process's final counts (which die with it). 0: closed at once.
   */
  METRICS_SHUTDOWN_LINGER_MS: Type.Integer({ minimum: 0, maximum: 300_000, default: 0 }),
  ...tracingEnv,
  /** Messages per second for the default sender's phone number, across every worker process. */
  PLATFORM_RATE_PER_SECOND: Type.Integer({ minimum: 1, default: 80 }),
  /** Who is told by e-mail when a sender needs attention (its token was refused). */
  ADMIN_ALERT_EMAIL: Type.Optional(Type.String({ minLength: 3, maxLength: 254 })),
  PLATFORM_TIMEOUT_MS: Type.Integer({ minimum: 100, default: 10_000 }),
  /** Webhook deliveries in flight in this process, across every endpoint. */
  WEBHOOK_CONCURRENCY: Type.Integer({ minimum: 1, maximum: 1000, default: 50 }),
  /** How long a receiver has to answer (connection included), as Svix. */
  WEBHOOK_TIMEOUT_MS: Type.Integer({ minimum: 100, maximum: 120_000, default: 15_000 }),
  /** The waits between tries after the first (units ms, s, m, h): 8 tries over about 28 hours. */
  WEBHOOK_RETRY_SCHEDULE: Type.String({ minLength: 1, default: '5s,5m,30m,2h,5h,10h,10h' }),
  /**
   * A relayed batch's events of one endpoint go to the queue as one job of up to this many (1: one
   * job per event). Their first tries are made together; a failed one goes on alone.
   */
  WEBHOOK_BUNDLE_SIZE: Type.Integer({ minimum: 1, maximum: WEBHOOK_BUNDLE_MAX, default: 20 }),
  /** Deliveries in flight to one endpoint, across every worker process. */
  WEBHOOK_ENDPOINT_CONCURRENCY: Type.Integer({ minimum: 1, maximum: 1000, default: 20 }),
  /** Deliveries per second to one endpoint, across every worker process. */
  WEBHOOK_ENDPOINT_RATE_PER_SECOND: Type.Integer({ minimum: 1, maximum: 100_000, default: 1000 }),
  /** How long an endpoint answering 429, 502 or 504 without a Retry-After is left alone. */
  WEBHOOK_SLOW_DOWN_MS: Type.Integer({ minimum: 0, default: 5000 }),
  /** An endpoint whose every delivery failed for this long is disabled and its owner told. */
  WEBHOOK_DISABLE_AFTER_MS: Type.Integer({ minimum: 1000, default: 5 * 24 * 3600 * 1000 }),
  /**
   * Events (and their attempts) recorded this many days ago are dropped, a whole partition at a time,
   * by the `messages` role; a replay reaches back this far. Relayed outbox rows go after as long.
   */
  WEBHOOK_EVENT_RETENTION_DAYS: Type.Integer({ minimum: 1, maximum: 3650, default: 30 }),
  /**
   * How many days one partition of webhook events (and of their attempts) holds: events are kept
   * between WEBHOOK_EVENT_RETENTION_DAYS and that plus this. Shorter follows retention more closely;
   * every event written reads each partition once (its message's last sequence).
   */
  WEBHOOK_EVENT_PARTITION_DAYS: Type.Integer({ minimum: 1, maximum: 366, default: 7 }),
  /**
   * Messages (and their attempts, and replies) this many days old are dropped, a whole partition at a time
   * (docs/data-lifecycle.md). Suppressions, audit entries and idempotency are kept apart.
   */
  MESSAGE_RETENTION_DAYS: Type.Integer({ minimum: 1, maximum: 3650, default: 90 }),
  /**
   * How many days one partition of messages holds. Fewer, longer partitions make every statement that
   * cannot name its period cheaper (Postgres plans each partition it may read); shorter ones drop
   * data closer to MESSAGE_RETENTION_DAYS (a partition goes once its last day is past it).
   */
  MESSAGE_PARTITION_DAYS: Type.Integer({ minimum: 1, maximum: 366, default: 30 }),
  /** How many days of message partitions exist ahead of today (a margin for a worker outage). */
  MESSAGE_PARTITIONS_AHEAD_DAYS: Type.Integer({ minimum: 1, maximum: 90, default: 7 }),
  PARTITION_MAINTENANCE_INTERVAL_MS: Type.Integer({ minimum: 1000, default: 3600_000 }),
  /** How often the `messages` role redacts content past its key's or sender's retention hours. */
  CONTENT_REDACTION_INTERVAL_MS: Type.Integer({ minimum: 100, maximum: 3_600_000, default: 60_000 }),
  /** Default: true in development and tests, false in production (as the API). */
  WEBHOOK_ALLOW_PRIVATE_TARGETS: Type.Optional(Type.Boolean()),
  SANDBOX_LATENCY_MS: Type.Integer({ minimum: 0, default: 0 }),
  SANDBOX_FAILURE_RATE: Type.Number({ minimum: 0, maximum: 1, default: 0 }),
})
type WorkerEnv = Static<typeof WorkerEnv>

export type WorkerConfig = Omit<
  WorkerEnv,
  'WORKER_QUEUES' | 'WORKER_SENDERS' | 'PLATFORM' | 'WEBHOOK_RETRY_SCHEDULE' | 'WEBHOOK_ALLOW_PRIVATE_TARGETS'
> & {
  roles: WorkerRole[]
  /** `*`, or the ids of the senders this process delivers for. */
  workerSenders: '*' | string[]
  platform: PlatformName
  /** The SMS provider of the channel fallback; none without SMS_PROVIDER. */
  smsProvider: SmsProviderName | undefined
  /** The waits between webhook tries, in ms: `length + 1` tries in all. */
  webhookRetrySchedule: number[]
  WEBHOOK_ALLOW_PRIVATE_TARGETS: boolean
}

function toConfig({
  WORKER_QUEUES,
  WORKER_SENDERS,
  PLATFORM,
  WEBHOOK_RETRY_SCHEDULE,
  WEBHOOK_ALLOW_PRIVATE_TARGETS,
  ...rest
}: WorkerEnv): WorkerConfig {
  const settings = serviceSettings({ ...rest, PLATFORM, WEBHOOK_ALLOW_PRIVATE_TARGETS })
  // Sender tokens and webhook signing secrets are opened with SECRETS_KEY (serviceKeyChecks).
  throwConfigProblems(serviceKeyChecks(rest))
  let webhookRetrySchedule: number[]
  try {
    webhookRetrySchedule = parseRetrySchedule(WEBHOOK_RETRY_SCHEDULE)
  } catch (error) {
    throw new ConfigError(`Invalid configuration:\n  WEBHOOK_RETRY_SCHEDULE: ${(error as Error).message}`)
  }
  return {
    ...rest,
    webhookRetrySchedule,
    WEBHOOK_ALLOW_PRIVATE_TARGETS: settings.WEBHOOK_ALLOW_PRIVATE_TARGETS,
    roles: [...new Set(WORKER_QUEUES.split(','))] as WorkerRole[],
    workerSenders: WORKER_SENDERS === '*' ? '*' : [...new Set(WORKER_SENDERS.split(','))],
    platform: settings.platform,
    smsProvider: settings.smsProvider,
  }
}

export const parseWorkerConfig = (source: Record<string, string | undefined>) =>
  toConfig(parseEnv(WorkerEnv, source))
export const loadWorkerConfig = () => exitOnConfigError(() => parseWorkerConfig(process.env))
