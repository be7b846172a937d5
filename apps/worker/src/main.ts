import { loadWorkerConfig } from './env.ts'

// The configuration first: a bad one exits before the roles' modules are loaded, naming each bad variable.
const config = loadWorkerConfig()
const { createWorkerLogger, startWorker } = await import('./index.ts')
const logger = createWorkerLogger(config)
const worker = await startWorker(config, logger)
logger.info({ roles: config.roles, env: config.APP_ENV }, 'Dispatch worker running')

let stopping = false
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, async () => {
    if (stopping) return
    stopping = true
    logger.info({ signal }, 'shutting down: finishing in-flight jobs')
    // A backstop only: close() itself stops waiting for jobs after SHUTDOWN_GRACE_MS (then lingers
    // for a last metrics scrape).
    const timer = setTimeout(
      () => {
        logger.error('in-flight jobs did not finish in time; exiting')
        process.exit(1)
      },
      config.SHUTDOWN_GRACE_MS + config.METRICS_SHUTDOWN_LINGER_MS + 5000,
    )
    timer.unref()
    await worker.close()
    process.exit(0)
  })
}
