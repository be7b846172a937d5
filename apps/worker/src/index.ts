import { createDb } from '@dispatch/db'
import { logDestination, loggerOptions, urlPassword } from '@dispatch/runtime'
import { startTracing, type Tracing } from '@dispatch/runtime/tracing'
import { BullMQOtel } from 'bullmq-otel'
import pino, { type DestinationStream, type Logger } from 'pino'
import { startEmailUnit } from './email/unit.ts'
import type { WorkerConfig, WorkerRole } from './env.ts'
import { startLifecycleUnit, startMaintenanceLoops } from './lifecycle/unit.ts'
import { startMessagesUnit } from './messages/unit.ts'
import { WorkerMetrics } from './metrics/registry.ts'
import { type MetricsUnit, startMetricsUnit } from './metrics/unit.ts'
import { startOutboxUnit } from './outbox/unit.ts'
import { createRedisFactory, START_ORDER, type WorkerUnit, type WorkerUnitStarter } from './runtime.ts'
import { startWebhooksUnit } from './webhooks/unit.ts'

export { parseWorkerConfig, type WorkerConfig } from './env.ts'
export { sweepContentRedaction } from './lifecycle/unit.ts'

/** The secret values each worker logger censors: a list the process adds to as it learns tokens. */
const loggerSecrets = new WeakMap<Logger, (string | undefined)[]>()

export function createWorkerLogger(config: WorkerConfig, stream?: DestinationStream): Logger {
  // Every secret value the worker's configuration holds: no log line may carry one.
  const secrets = [
    config.WHATSAPP_ACCESS_TOKEN,
    config.SECRETS_KEY,
    ...(config.SECRETS_KEY_PREVIOUS?.split(',') ?? []),
    urlPassword(config.SMTP_URL),
    urlPassword(config.DATABASE_URL),
    urlPassword(config.REDIS_URL),
    config.METRICS_TOKEN,
  ]
  const logger = pino(
    { ...loggerOptions(config.LOG_LEVEL, secrets), name: 'worker' },
    stream ?? logDestination(config.LOG_FORMAT),
  )
  loggerSecrets.set(logger, secrets)
  return logger
}

export interface RunningWorker {
  /** Where this process serves `/metrics` (`http://host:port`), when it does (METRICS_PORT). */
  metricsUrl: string | undefined
  /** Stops taking work, lets in-flight jobs finish, then closes every connection. */
  close(): Promise<void>
}

/**
 * What each role of WORKER_QUEUES starts: the one way every queue and loop is composed. Each role
 * folder is entered through its `unit.ts`; the maintenance loops (lifecycle/) run with `messages`.
 */
const UNITS: Record<WorkerRole, WorkerUnitStarter[]> = {
  email: [startEmailUnit],
  messages: [startMessagesUnit, startMaintenanceLoops],
  webhooks: [startWebhooksUnit],
  outbox: [startOutboxUnit],
  lifecycle: [startLifecycleUnit],
}

/** Starts the units that `config.roles` names, in this process. */
export async function startWorker(
  config: WorkerConfig,
  logger: Logger = createWorkerLogger(config),
  /** A tracer provider already registered (a test's in-memory one); else OTEL_EXPORTER_OTLP_ENDPOINT decides. */
  options: { tracing?: Tracing } = {},
): Promise<RunningWorker> {
  const ownTracing = options.tracing
    ? undefined
    : startTracing({
        serviceName: config.OTEL_SERVICE_NAME ?? 'dispatch-worker',
        endpoint: config.OTEL_EXPORTER_OTLP_ENDPOINT,
      })
  const tracing = options.tracing ?? ownTracing
  const { db, sql, close: closeDb } = createDb(config.DATABASE_URL, { max: config.DATABASE_POOL_MAX })
  const connections = createRedisFactory(config, logger)
  const secrets = loggerSecrets.get(logger)
  // No listener, nobody to read them: without METRICS_PORT nothing is counted either.
  const metrics =
    config.METRICS_ENABLED && config.METRICS_PORT !== undefined ? new WorkerMetrics() : undefined
  const context = {
    config,
    db,
    sql,
    logger,
    redis: connections.redis,
    addSecret: (value: string) => {
      if (secrets && !secrets.includes(value)) secrets.push(value)
    },
    metrics,
    telemetry: tracing ? new BullMQOtel({ tracerName: 'dispatch' }) : undefined,
  }
  const started: Array<[WorkerRole, WorkerUnit]> = []
  let listener: MetricsUnit | undefined
  try {
    // For the whole process, before the units: they register what it reads at scrape time.
    if (metrics) listener = await startMetricsUnit(context, metrics)
    for (const role of START_ORDER) {
      if (!config.roles.includes(role)) continue
      for (const start of UNITS[role]) started.push([role, await start(context)])
    }
  } catch (error) {
    for (const [, unit] of started.reverse()) await unit.close().catch(() => {})
    await listener?.close()
    connections.disconnectAll()
    await closeDb()
    throw error
  }

  return {
    metricsUrl: listener?.url,
    close: async () => {
      // The relay first (it only produces), then every consumer at once, within the grace period.
      const relay = started.find(([role]) => role === 'outbox')?.[1]
      await relay?.close()
      // BullMQ's close() can wait forever on a Redis that is unreachable (taskforcesh/bullmq#4656):
      // wait for in-flight jobs up to the grace period, then drop the connections regardless. Jobs
      // cut short stall and are retaken by another worker.
      let timer: NodeJS.Timeout | undefined
      const drained = await Promise.race([
        Promise.all(started.filter(([, unit]) => unit !== relay).map(([, unit]) => unit.close())).then(
          () => true,
        ),
        new Promise<false>((resolve) => {
          timer = setTimeout(() => resolve(false), config.SHUTDOWN_GRACE_MS)
        }),
      ])
      clearTimeout(timer)
      if (!drained)
        logger.warn({ graceMs: config.SHUTDOWN_GRACE_MS }, 'workers did not close in time; disconnecting')
      // Last: a scrape during the drain still answers, and one during the linger reads the final counts.
      if (listener && config.METRICS_SHUTDOWN_LINGER_MS > 0) {
        logger.info(
          { lingerMs: config.METRICS_SHUTDOWN_LINGER_MS },
          'work finished; metrics stay up for a last scrape',
        )
        await new Promise((resolve) => setTimeout(resolve, config.METRICS_SHUTDOWN_LINGER_MS))
      }
      await listener?.close()
      connections.disconnectAll()
      await closeDb()
      await ownTracing?.shutdown()
    },
  }
}
