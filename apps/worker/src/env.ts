import { fileURLToPath } from 'node:url'
import { commonEnv, exitOnConfigError, parseEnv } from '@dispatch/contracts/env'
import Type, { type Static } from 'typebox'

/** The queues (and loops) a worker process can run; ops pick per process with WORKER_QUEUES. */
export const WORKER_ROLES = ['email', 'outbox'] as const
export type WorkerRole = (typeof WORKER_ROLES)[number]

const WorkerEnv = Type.Object({
  ...commonEnv,
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
export const loadWorkerConfig = () => exitOnConfigError(() => parseWorkerConfig(process.env))
