import { fileURLToPath } from 'node:url'
import { APP_ENVS } from '@dispatch/contracts'
import { loadEnvOrExit, parseEnv } from '@dispatch/contracts/env'
import Type, { type Static } from 'typebox'

/** The queues (and loops) a worker process can run; ops pick per process with WORKER_QUEUES. */
export const WORKER_ROLES = ['email', 'outbox'] as const
export type WorkerRole = (typeof WORKER_ROLES)[number]

const WorkerEnv = Type.Object({
  APP_ENV: Type.Enum(APP_ENVS, { default: 'development' }),
  LOG_LEVEL: Type.Enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], { default: 'info' }),
  DATABASE_URL: Type.String({
    pattern: '^postgres(ql)?://',
    default: 'postgres://postgres@127.0.0.1:5432/dispatch',
  }),
  REDIS_URL: Type.String({ pattern: '^rediss?://', default: 'redis://127.0.0.1:6379' }),
  QUEUE_PREFIX: Type.String({ pattern: '^[A-Za-z0-9_-]+$', default: 'dispatch' }),
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
})
type WorkerEnv = Static<typeof WorkerEnv>

export type WorkerConfig = Omit<WorkerEnv, 'WORKER_QUEUES'> & { roles: WorkerRole[] }

const toConfig = ({ WORKER_QUEUES, ...rest }: WorkerEnv): WorkerConfig => ({
  ...rest,
  roles: [...new Set(WORKER_QUEUES.split(','))] as WorkerRole[],
})

export const parseWorkerConfig = (source: Record<string, string | undefined>) =>
  toConfig(parseEnv(WorkerEnv, source))
export const loadWorkerConfig = () => toConfig(loadEnvOrExit(WorkerEnv, process.env))
