import { drizzle } from 'drizzle-orm/postgres-js'
import postgres from 'postgres'
import * as schema from './schema/index.ts'

export interface DbOptions {
  /** Pool size. */
  max?: number
  connection?: Record<string, string>
  /**
   * Plan each prepared statement once (`plan_cache_mode=force_generic_plan`), pruning partitions
   * when it runs rather than when it is planned: for statements that cannot name their period, which
   * Postgres would otherwise plan over every partition on every call.
   */
  genericPlans?: boolean
  /** Told each statement sent and its parameters: a test reading the plans of what a function runs. */
  onStatement?: (query: string, parameters: unknown[]) => void
}

export function createDb(url: string, options: DbOptions = {}) {
  const sql = postgres(url, {
    max: options.max ?? 10,
    onnotice: () => {},
    connect_timeout: 5,
    backoff: reconnectDelaySeconds,
    connection: {
      ...options.connection,
      // A generic plan does not know its LIMIT (a parameter: a tenth of the rows, Postgres guesses),
      // so a page of 100 can cost enough to be JIT-compiled, 8 ms for a 0.1 ms read; JIT is off.
      ...(options.genericPlans ? { plan_cache_mode: 'force_generic_plan', jit: 'off' } : {}),
    },
    ...(options.onStatement ? { debug: debugBy(options.onStatement) } : {}),
  })
  const db = drizzle({ client: preparing(sql), schema, casing: 'snake_case' })
  return { db, sql, close: () => sql.end({ timeout: 5 }) }
}

/**
 * How long a connection waits before trying again after a failed one, by the pool's failures in a
 * row: 0.1 s doubling to 1 s, jittered. postgres.js's own grows to 10–20 s, so after an outage of
 * a few seconds the first request once Postgres was back waited up to 15 s for its connection.
 */
export function reconnectDelaySeconds(failures: number): number {
  return Math.min(0.1 * 2 ** Math.max(0, failures - 1), 1) * (0.5 + Math.random() / 2)
}

/**
 * The client as drizzle gets it: every statement prepared (named, kept per connection by postgres.js),
 * as the driver's own tagged queries already are. Drizzle prepares only statements given a name, so
 * each of its queries otherwise cost a describe round trip first, and Postgres planned it afresh every
 * time; prepared, a statement run often gets a generic plan, which matters most on partitioned tables
 * (a list that cannot name its period plans every partition).
 */
function preparing(sql: postgres.Sql): postgres.Sql {
  return new Proxy(sql, {
    get(target, property, receiver) {
      if (property !== 'unsafe') return Reflect.get(target, property, receiver)
      return (query: string, params?: unknown[], options?: { prepare?: boolean }) =>
        target.unsafe(query, params as never, { ...options, prepare: true })
    },
  })
}

/** postgres.js's `debug` hook, which also gets the connection's number and the parameters' types. */
const debugBy =
  (onStatement: NonNullable<DbOptions['onStatement']>) =>
  (_connection: number, query: string, parameters: unknown[]) =>
    onStatement(query, parameters)

export type DbClient = ReturnType<typeof createDb>
export type Db = DbClient['db']
export type Sql = DbClient['sql']
