/**
 * The worker of `metrics.ts`, in a process of its own so each run starts clean (prom-client's
 * default collectors, once started, stay for the life of a process): `startWorker` on the
 * environment it is given. Tells the parent `{metricsUrl}` once started; closes on SIGTERM or when
 * the parent goes away.
 */
import { createWorkerLogger, parseWorkerConfig, startWorker } from '@dispatch/worker'

const config = parseWorkerConfig(process.env)
const worker = await startWorker(config, createWorkerLogger(config))
let closing = false
const close = async () => {
  if (closing) return
  closing = true
  await worker.close()
  process.exit(0)
}
process.on('SIGTERM', close)
process.on('disconnect', close)
process.send?.({ metricsUrl: worker.metricsUrl ?? null })
