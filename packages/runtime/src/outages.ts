/**
 * Tells a dependency that cannot be reached (Postgres or Redis down, restarting, out of connections)
 * from a bug. The API answers the first `503 SERVICE_UNAVAILABLE` with `Retry-After` (the request was
 * fine and will work shortly), the workers wait it out; only the second is `500 INTERNAL_ERROR`.
 */

/** Socket-level failures, from Node, the `postgres` driver and ioredis alike. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  // The postgres driver's own.
  'CONNECT_TIMEOUT',
  'CONNECTION_CLOSED',
  'CONNECTION_DESTROYED',
  'CONNECTION_ENDED',
])

/**
 * Postgres SQLSTATEs that say "not now": connection exceptions (class 08), the server shutting down
 * or starting (57P01–57P03), too many connections (53300).
 */
const POSTGRES_UNAVAILABLE = /^(08...|57P0[123]|53300)$/

/** ioredis's words for a connection it does not have (it sets no code on these). */
const REDIS_UNAVAILABLE =
  /^(Connection is closed\.?|Stream isn't writeable and enableOfflineQueue options is false|Command timed out|Reached the max retries per request limit.*)$/

function isOwnOutage(error: Error & { code?: unknown; name?: string }): boolean {
  const code = typeof error.code === 'string' ? error.code : undefined
  if (code && NETWORK_CODES.has(code)) return true
  if (error.name === 'PostgresError' && code && POSTGRES_UNAVAILABLE.test(code)) return true
  if (error.name === 'MaxRetriesPerRequestError') return true
  return REDIS_UNAVAILABLE.test(error.message)
}

/** Whether `error`, or anything it wraps (drizzle's `DrizzleQueryError` wraps the driver's), is an outage. */
export function isOutage(error: unknown): boolean {
  const seen = new Set<unknown>()
  const pending = [error]
  while (pending.length > 0) {
    const current = pending.pop()
    if (!(current instanceof Error) || seen.has(current)) continue
    seen.add(current)
    if (isOwnOutage(current)) return true
    pending.push(current.cause)
    if (current instanceof AggregateError) pending.push(...current.errors)
  }
  return false
}
