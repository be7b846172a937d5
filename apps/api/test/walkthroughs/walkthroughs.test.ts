import { afterAll, describe, expect, it } from 'vitest'
import {
  freshServiceRuns,
  IN_ORDER,
  IN_REVERSE,
  NOT_WALKTHROUGHS,
  pagesWithPromises,
  readWalkthroughs,
  root,
  WALKTHROUGH_PAGES,
} from './runs.ts'

/**
 * Issue 45: every walkthrough in the docs works on its own from a fresh start and after the others,
 * in any order (runs.ts says how they are run). Here: the pages are read, and all of them run one
 * after another on one fresh service, in the docs' order, and in reverse on another. Each page
 * alone on a fresh service of its own: walkthroughs-alone.test.ts. The convention: README.md,
 * "Walkthroughs in the docs".
 */
const runs = freshServiceRuns([IN_ORDER, IN_REVERSE])

describe('the walkthroughs in the docs (issue 45)', () => {
  afterAll(() => runs.stopAll())

  it('are read from the pages: each command, what it promises, what it leaves to the reader', () => {
    const walkthroughs = readWalkthroughs(root)
    for (const walkthrough of walkthroughs) {
      expect(walkthrough.steps.length, `${walkthrough.page} has commands to run`).toBeGreaterThan(0)
    }
    const promises = walkthroughs.flatMap((w) => w.steps.filter((s) => s.promised))
    expect(promises.length).toBeGreaterThan(30)
  })

  it('leave no page with promises unchecked: a page that promises answers is a walkthrough, or says why not', () => {
    const unlisted = pagesWithPromises(root).filter(
      (page) => !(WALKTHROUGH_PAGES as readonly string[]).includes(page) && !(page in NOT_WALKTHROUGHS),
    )
    expect(unlisted, 'add them to WALKTHROUGH_PAGES, or to NOT_WALKTHROUGHS with the reason').toEqual([])
  })

  it(`all work one after another on one fresh service, in the docs order (${IN_ORDER[0]} first)`, {
    timeout: 600_000,
  }, async () => {
    await runs.run(0)
  })

  it(`all work one after another on one fresh service, in reverse order (${IN_REVERSE[0]} first)`, {
    timeout: 600_000,
  }, async () => {
    await runs.run(1)
  })
})
