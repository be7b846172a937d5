import type { Db } from '../client.ts'

/** The database or a transaction on it: queries that run in either take this. */
export type Executor = Db | Parameters<Parameters<Db['transaction']>[0]>[0]

/** The Postgres error's code, constraint, message and detail, whether or not drizzle wrapped it. */
export function pgError(error: unknown): {
  code?: string
  constraint?: string
  message?: string
  detail?: string
} {
  const e = error as {
    code?: string
    constraint_name?: string
    message?: string
    detail?: string
    cause?: unknown
  }
  if (e?.code) {
    return {
      code: e.code,
      ...(e.constraint_name ? { constraint: e.constraint_name } : {}),
      ...(e.message ? { message: e.message } : {}),
      ...(e.detail ? { detail: e.detail } : {}),
    }
  }
  return e?.cause ? pgError(e.cause) : {}
}
