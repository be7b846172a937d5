import { dispatchTracer, tracingStarted } from '@dispatch/runtime/tracing'
import { SpanKind, SpanStatusCode } from '@opentelemetry/api'

/**
 * Runs `work` in a client span (a call out: the platform, a webhook endpoint, SMTP), a child of the
 * job's span, recording its error. Without tracing, `work` alone: the no-op tracer's span and
 * context cost a few microseconds a call, on every message and webhook.
 */
export function traced<T>(
  name: string,
  attributes: Record<string, string>,
  work: () => Promise<T>,
): Promise<T> {
  if (!tracingStarted()) return work()
  return dispatchTracer().startActiveSpan(name, { kind: SpanKind.CLIENT, attributes }, async (span) => {
    try {
      return await work()
    } catch (error) {
      span.recordException(error as Error)
      span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error)?.message })
      throw error
    } finally {
      span.end()
    }
  })
}
