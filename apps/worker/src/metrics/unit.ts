import type { WorkerContext, WorkerUnit } from '../runtime.ts'
import { Scraper } from './collectors.ts'
import type { WorkerMetrics } from './registry.ts'
import { startMetricsServer } from './server.ts'

export interface MetricsUnit extends WorkerUnit {
  /** Where `/metrics` is served: `http://host:port`. */
  url: string
}

/**
 * The process's `GET /metrics` listener on METRICS_PORT. Not a role of WORKER_QUEUES: one per
 * process, started before the units (which register what it reads) and closed after them.
 */
export async function startMetricsUnit(context: WorkerContext, metrics: WorkerMetrics): Promise<MetricsUnit> {
  const { config, db, logger } = context
  // Fail-fast, so a scrape while Redis is down skips the queue figures at once. Made now, so it is
  // connected by the first scrape (a fail-fast client refuses commands until it is).
  const redis = context.redis('metrics', { blocking: false })
  const scraper = new Scraper(metrics, metrics.sources, {
    redis,
    db,
    layout: config,
    logger,
  })
  const server = await startMetricsServer({
    host: config.METRICS_HOST,
    port: config.METRICS_PORT ?? 0,
    token: config.METRICS_TOKEN,
    scrape: () => scraper.scrape(),
    logger,
  })
  logger.info(
    { url: `${server.url}/metrics`, tokenRequired: Boolean(config.METRICS_TOKEN) },
    'metrics listening',
  )
  return {
    url: server.url,
    close: async () => {
      await server.close()
      await scraper.close()
    },
  }
}
