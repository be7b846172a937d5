import { globSync, readFileSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { configDefaults, defineConfig } from 'vitest/config'
import { BaseSequencer, type TestSpecification } from 'vitest/node'

/**
 * Files of a few lines that drive a minute or more of child processes (walkthroughs, many
 * processes, outages): vitest starts larger files first when it has no timings (a clean clone, as
 * CI is), so these came last and ran alone at the end of the run, a minute or two after every other
 * file had finished. Started first instead, in this order (the longest first).
 */
const LONG_FIRST = [
  'walkthroughs/walkthroughs-alone.test.ts',
  'walkthroughs/walkthroughs.test.ts',
  'webhooks/receiver-outage.test.ts',
  'many-processes-cluster.test.ts',
  'many-processes.test.ts',
  'campaigns/faults-api-kill.test.ts',
]
class LongFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (file: TestSpecification) => {
      const at = LONG_FIRST.findIndex((name) => file.moduleId.endsWith(`/${name}`))
      return at === -1 ? LONG_FIRST.length : at
    }
    // A stable sort: the rest keep the order vitest gave them.
    return (await super.sort(files)).sort((a, b) => rank(a) - rank(b))
  }
}

const INCLUDE = [
  'apps/*/test/**/*.test.ts',
  'apps/*/src/**/*.test.ts',
  'packages/*/src/**/*.test.ts',
  'packages/*/test/**/*.test.ts',
  'deploy/test/**/*.test.ts',
]

/**
 * The files that replace a module (`vi.mock`): a replacement applies only where the module is
 * loaded after it, so each of these runs in a process of its own. Every other file shares its
 * worker's modules with the files that ran there before it (`isolate: false`): the app and its
 * dependencies are loaded once per worker, not once per file, which took a third of each file's
 * time (clean-clone runs on 2 cores: 1365 s isolated, 875–955 s shared). A file that changes what
 * outlives it in the process (an environment variable, a global, fake timers) must leave it as it
 * found it. Without any such file, `isolated` has none to run.
 */
const MOCKING = globSync(INCLUDE, { cwd: import.meta.dirname }).filter((file) =>
  /\bvi\.(mock|doMock)\(/.test(readFileSync(`${import.meta.dirname}/${file}`, 'utf8')),
)

export default defineConfig({
  test: {
    projects: [
      {
        extends: true,
        test: {
          name: 'shared',
          include: INCLUDE,
          exclude: [...configDefaults.exclude, ...MOCKING],
          isolate: false,
        },
      },
      { extends: true, test: { name: 'isolated', include: MOCKING, isolate: true } },
    ],
    // The console is built first (when stale): its size test and the browser tests read dist/.
    globalSetup: ['./packages/testing/src/global-setup.ts', './packages/console/scripts/test-setup.ts'],
    // Each file gets its own database and queue prefix, so files run in parallel safely.
    pool: 'forks',
    // One file more than the cores: most of a file's time is spent waiting on Postgres, Redis and
    // timers, and on 2 cores 3 files at once take the run from 13.5 to 8 minutes.
    maxWorkers: availableParallelism() + 1,
    sequence: { sequencer: LongFirst },
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
})
