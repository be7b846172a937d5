import { trace } from '@opentelemetry/api'
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http'
import { resourceFromAttributes } from '@opentelemetry/resources'
import { BatchSpanProcessor, SimpleSpanProcessor, type SpanExporter } from '@opentelemetry/sdk-trace-base'
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node'
import Type from 'typebox'

/** OpenTelemetry, off unless an OTLP endpoint is set: then every process exports its traces there. */
export const tracingEnv = {
  /** The collector's OTLP/HTTP base URL (`http://collector:4318`); traces go to `…/v1/traces`. Unset: no tracing. */
  OTEL_EXPORTER_OTLP_ENDPOINT: Type.Optional(Type.String({ pattern: '^https?://' })),
  /** The `service.name` of this process's spans (default `dispatch-api` / `dispatch-worker`). */
  OTEL_SERVICE_NAME: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
}

export interface Tracing {
  provider: NodeTracerProvider
  /** Exports what is pending and stops. */
  shutdown(): Promise<void>
}

/**
 * Registers the process-wide tracer provider (with W3C trace-context propagation and an
 * AsyncLocalStorage context manager) exporting to the OTLP endpoint, or to `exporter` (tests).
 * Without either it does nothing and returns undefined: the API's calls then reach OpenTelemetry's
 * no-op tracer, and no context is injected into jobs.
 */
export function startTracing(options: {
  serviceName: string
  endpoint?: string | undefined
  exporter?: SpanExporter
}): Tracing | undefined {
  if (!options.endpoint && !options.exporter) return undefined
  const exporter =
    options.exporter ?? new OTLPTraceExporter({ url: `${options.endpoint?.replace(/\/+$/, '')}/v1/traces` })
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ 'service.name': options.serviceName }),
    // A test's in-memory exporter sees each span as it ends; a collector gets batches.
    spanProcessors: [options.exporter ? new SimpleSpanProcessor(exporter) : new BatchSpanProcessor(exporter)],
  })
  provider.register()
  started = true
  return { provider, shutdown: () => provider.shutdown() }
}

let started = false
/** Whether this process started tracing: without it, a span is OpenTelemetry's no-op, skipped. */
export const tracingStarted = () => started

/** The tracer Dispatch's own spans (platform calls, webhook posts, SMTP sends) come from. */
export const dispatchTracer = () => trace.getTracer('dispatch')
