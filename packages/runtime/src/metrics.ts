import { createHash, timingSafeEqual } from 'node:crypto'
import Type from 'typebox'

/** What the API and every worker process read about metrics (docs/operations.md, "Metrics"). */
export const metricsEnv = {
  /** `false`: nothing is registered or counted, and there is no `/metrics` (the cost is zero). */
  METRICS_ENABLED: Type.Boolean({ default: true }),
  /** When set, `/metrics` answers only `Authorization: Bearer <this token>`. */
  METRICS_TOKEN: Type.Optional(Type.String({ minLength: 16, pattern: '^\\S+$' })),
}

const digest = (value: string) => createHash('sha256').update(value).digest()

/**
 * Whether an `Authorization` header carries `Bearer <token>`. Compared as SHA-256 digests in constant
 * time, so timing tells nothing of how much of a guess was right.
 */
export function bearerTokenCheck(token: string): (authorization: string | undefined) => boolean {
  const expected = digest(token)
  return (authorization) => {
    const match = /^Bearer (\S+)$/i.exec(authorization ?? '')
    return timingSafeEqual(digest(match?.[1] ?? ''), expected) && match !== null
  }
}

/** The content type of the Prometheus text exposition format, version 0.0.4. */
export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8'
