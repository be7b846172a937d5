import { readdir, readFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const folder = fileURLToPath(new URL('../drizzle', import.meta.url))

interface Entry {
  idx: number
  when: number
  tag: string
}

/**
 * drizzle's migrator applies, on a database that has migrations already, only those whose journal
 * `when` is later than the last one it applied: a migration merged from a branch with an earlier
 * `when` than the one before it would be skipped on every upgrade (and applied on a fresh database,
 * so no other test notices). The journal must read in one order by index, by file name and by time (numbers 0035-0037 were never used).
 */
describe('the migrations journal', () => {
  it('lists every migration file once, in the order of their numbers, each later than the one before', async () => {
    const journal = JSON.parse(await readFile(`${folder}/meta/_journal.json`, 'utf8')) as { entries: Entry[] }
    const files = (await readdir(folder)).filter((name) => name.endsWith('.sql')).sort()
    expect(journal.entries.map((entry) => `${entry.tag}.sql`)).toEqual(files)
    let before: Entry | undefined
    for (const entry of journal.entries) {
      expect(entry.idx, entry.tag).toBe(Number(entry.tag.slice(0, 4)))
      if (before) expect(entry.idx, entry.tag).toBeGreaterThan(before.idx)
      if (before)
        expect(entry.when, `${entry.tag} is not later than ${before.tag}`).toBeGreaterThan(before.when)
      before = entry
    }
  })
})
