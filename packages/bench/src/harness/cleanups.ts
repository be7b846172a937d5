import { stopAllServices } from './processes.ts'

/**
 * What a benchmark that starts processes, Redis servers and databases stops on the way out, in
 * reverse: normally (`cleanUp()` at its end), on an error, or on Ctrl-C. Add each step to
 * `cleanups` as its thing is started.
 */
export function exitCleanups() {
  const cleanups: Array<() => Promise<unknown>> = []
  let cleaning: Promise<void> | undefined
  const cleanUp = () => {
    cleaning ??= (async () => {
      // The service's processes first, while Redis and Postgres are still there for their shutdown.
      await stopAllServices().catch((error) => console.error(error))
      for (const step of cleanups.reverse()) await step().catch((error) => console.error(error))
    })()
    return cleaning
  }
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      console.error(`\n${signal}: stopping the benchmark's processes, Redis and database`)
      void cleanUp().then(() => process.exit(130))
    })
  }
  return { cleanups, cleanUp }
}
