import {
  createTestDatabase,
  parseExposition,
  testQueuePrefix,
  testRedisUrl,
  waitFor,
} from '@dispatch/testing'
import { createWorkerLogger, parseWorkerConfig, startWorker } from '@dispatch/worker'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { loadManifests, type MetricSelector, metricSelectors, selects } from './manifests.ts'
import { containerEnv, podsOf, withSecrets } from './pods.ts'

const { manifests } = loadManifests()
const scaledObjects = manifests.filter((m) => m.kind === 'ScaledObject')

let database: Awaited<ReturnType<typeof createTestDatabase>>
beforeAll(async () => {
  database = await createTestDatabase()
})
afterAll(async () => {
  await database?.drop()
})

/**
 * Each pool's ScaledObject reads series its own pods export: a worker started with the pool's
 * settings (its Deployment's environment, in production, on a database and key prefix of its own)
 * is scraped, and every selector of the query must pick a series in it. A renamed metric, label or
 * queue, or a pool whose roles do not export what its query reads, fails here, not in the cluster.
 */
it.each(scaledObjects.map((so) => [so.metadata.name, so] as const))(
  'the ScaledObject %s reads series that its pool exports',
  async (_, scaledObject) => {
    const pod = podsOf(manifests).find((p) => p.owner.metadata.name === scaledObject.spec.scaleTargetRef.name)
    const env = withSecrets(containerEnv(pod?.containers[0], manifests), 'required', {
      DATABASE_URL: database.url,
      REDIS_URL: testRedisUrl(),
    })
    const config = parseWorkerConfig({
      ...env,
      QUEUE_PREFIX: testQueuePrefix(),
      METRICS_HOST: '127.0.0.1',
      METRICS_PORT: '0',
      LOG_LEVEL: 'silent',
    })
    const worker = await startWorker(config, createWorkerLogger(config))
    try {
      const selectors: MetricSelector[] = scaledObject.spec.triggers.flatMap(
        (t: { metadata: { query: string } }) => metricSelectors(t.metadata.query),
      )
      // The queue gauges are read at scrape time, once the pool's queues are open.
      let unmatched = selectors
      await waitFor(
        async () => {
          const samples = parseExposition(await (await fetch(`${worker.metricsUrl}/metrics`)).text())
          unmatched = selectors.filter((s: MetricSelector) => !samples.some((sample) => selects(s, sample)))
          return unmatched.length === 0
        },
        { what: `every series ${scaledObject.metadata.name} reads`, timeoutMs: 15_000, intervalMs: 200 },
      ).catch(() => {})
      expect(unmatched).toEqual([])
    } finally {
      await worker.close()
    }
  },
  60_000,
)
