import { availableParallelism } from 'node:os'
import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: [
      'apps/*/test/**/*.test.ts',
      'apps/*/src/**/*.test.ts',
      'packages/*/src/**/*.test.ts',
      'packages/*/test/**/*.test.ts',
      'deploy/test/**/*.test.ts',
    ],
    // The console is built first (when stale): its size test and the browser tests read dist/.
    globalSetup: ['./packages/testing/src/global-setup.ts', './packages/console/scripts/test-setup.ts'],
    // Each file gets its own database and queue prefix, so files run in parallel safely.
    pool: 'forks',
    // One file more than the cores: most of a file's time is spent waiting on Postgres, Redis and
    // timers, and on 2 cores 3 files at once take the run from 13.5 to 8 minutes.
    maxWorkers: availableParallelism() + 1,
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
})
