import type { MessageType } from '@dispatch/contracts'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { Counter, collectDefaultMetrics, Histogram, Registry } from 'prom-client'
import type { KeyCacheLookup } from './api-key-cache.ts'

/** What the API counts (docs/operations.md, "Metrics"). Label values are bounded: no ids, phones or keys. */
export interface ApiMetrics {
  readonly registry: Registry
  /** One accepted message (a 202, or a batch's item) of `type`. */
  accepted(type: MessageType): void
  /** The accepted items of one batch. */
  acceptedBatch(types: MessageType[]): void
  keyCacheLookup(result: KeyCacheLookup): void
  /** A message priced by the platform (once per message), by its sender and pricing. */
  priced(senderId: string, category: string | null, billable: boolean | null): void
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Undefined when METRICS_ENABLED is false: then nothing is registered, counted or served. */
    metrics: ApiMetrics | undefined
  }
}

/** Seconds: a cached send answers in a millisecond or two; anything past 10 s is a timeout anyway. */
const HTTP_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
/** The `route` label of a request no route matched (a 404): never the raw URL, which is unbounded. */
export const UNMATCHED_ROUTE = 'unmatched'

/** A registry of its own per app, so tests that build several apps in one process never clash. */
export function createApiMetrics() {
  const registry = new Registry()
  collectDefaultMetrics({ register: registry })
  const http = new Histogram({
    name: 'dispatch_http_request_duration_seconds',
    help: 'HTTP requests by route pattern, method and status, and how long each took to answer',
    labelNames: ['route', 'method', 'status_code'] as const,
    buckets: HTTP_BUCKETS,
    registers: [registry],
  })
  const accepted = new Counter({
    name: 'dispatch_messages_accepted_total',
    help: 'Messages accepted (stored for delivery), by type: single sends and batch items',
    labelNames: ['type'] as const,
    registers: [registry],
  })
  const keyCache = new Counter({
    name: 'dispatch_api_key_cache_lookups_total',
    help: 'API-key lookups by how they were answered: hit (no query of their own), miss (Postgres), stale (an expired entry while Postgres failed)',
    labelNames: ['result'] as const,
    registers: [registry],
  })
  const priced = new Counter({
    name: 'dispatch_messages_priced_total',
    help: 'Messages the platform priced (its status webhooks’ pricing), once each, by sender, category and whether billable',
    labelNames: ['sender_id', 'category', 'billable'] as const,
    registers: [registry],
  })
  const metrics: ApiMetrics & {
    httpRequest(route: string, method: string, status: number, seconds: number): void
  } = {
    registry,
    accepted: (type) => accepted.inc({ type }),
    acceptedBatch: (types) => {
      const counts = new Map<MessageType, number>()
      for (const type of types) counts.set(type, (counts.get(type) ?? 0) + 1)
      for (const [type, count] of counts) accepted.inc({ type }, count)
    },
    keyCacheLookup: (result) => keyCache.inc({ result }),
    priced: (senderId, category, billable) =>
      priced.inc({
        sender_id: senderId,
        category: category ?? 'unknown',
        billable: String(billable ?? 'unknown'),
      }),
    httpRequest: (route, method, status, seconds) =>
      http.observe({ route, method, status_code: status }, seconds),
  }
  return metrics
}

/**
 * Metrics of this API process: decorates `app.metrics` and times every response by its route
 * pattern. With METRICS_ENABLED false it installs nothing (`app.metrics` is undefined), so the
 * benchmark's "off" is the code path without metrics, not counters nobody reads.
 */
export const metrics = fp(
  async (app: FastifyInstance) => {
    if (!app.deps.config.METRICS_ENABLED) {
      app.decorate('metrics', undefined)
      return
    }
    const metrics = createApiMetrics()
    app.decorate('metrics', metrics)
    app.addHook('onResponse', (request, reply, done) => {
      metrics.httpRequest(
        request.routeOptions.url ?? UNMATCHED_ROUTE,
        request.method,
        reply.statusCode,
        reply.elapsedTime / 1000,
      )
      done()
    })
  },
  { name: 'metrics' },
)
