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
    globalSetup: ['./packages/testing/src/global-setup.ts'],
    // Each file gets its own database and queue prefix, so files run in parallel safely.
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
})
