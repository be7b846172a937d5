import { afterAll, describe, it } from 'vitest'
import { ALONE, freshServiceRuns } from './runs.ts'

/**
 * Issue 45: each walkthrough page works on its own, first on a fresh service of its own (its fakes,
 * database and key prefix) — but for the two that open the docs' orders, which
 * walkthroughs.test.ts starts on a fresh service. A file of its own, so it runs beside the orders.
 */
const runs = freshServiceRuns(ALONE.map((page) => [page]))

describe('each walkthrough in the docs alone (issue 45)', () => {
  afterAll(() => runs.stopAll())

  it.each(ALONE.map((page, run) => [page, run] as const))(
    '%s works alone, on a fresh service of its own',
    { timeout: 240_000 },
    async (_page, run) => {
      await runs.run(run)
    },
  )
})
