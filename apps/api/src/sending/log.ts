import type { BaseLogger } from 'pino'

/** What sending logs through: the caller's logger (a request's, a job's), not Fastify's type. */
export type Log = Pick<BaseLogger, 'info' | 'warn' | 'error'>
