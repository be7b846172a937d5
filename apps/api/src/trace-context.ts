import { context, propagation } from '@opentelemetry/api'

/**
 * The active trace context, serialized as BullMQ's telemetry carries it (the propagator's fields
 * as JSON), so the delivery's spans continue the trace of the request that queued the message (a
 * send, or an admin's retry). Nothing without tracing.
 */
export function currentTraceContext(): string | undefined {
  const carrier: Record<string, string> = {}
  propagation.inject(context.active(), carrier)
  return Object.keys(carrier).length > 0 ? JSON.stringify(carrier) : undefined
}
