import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { WORKER_ROLES } from './env.ts'

/**
 * The worker's layout, read from its imports: one folder per role of WORKER_QUEUES, entered only
 * through its `unit.ts`; code two roles use lives in a named shared folder, which imports no role.
 */
const SRC = dirname(fileURLToPath(import.meta.url))
/** Shared by the roles: code two of them use, the platform adapters, the process's /metrics. */
const SHARED_FOLDERS = ['shared', 'platforms', 'metrics']
/** The process's entry: the only files that start roles. */
const ENTRIES = ['main.ts', 'index.ts']

const sourceFiles = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? sourceFiles(join(dir, entry.name))
      : entry.name.endsWith('.ts')
        ? [relative(SRC, join(dir, entry.name))]
        : [],
  )

/** Every relative module a file imports, re-exports or loads, as a path from src/. */
function importsOf(file: string): string[] {
  const text = readFileSync(join(SRC, file), 'utf8')
  const specifiers = [...text.matchAll(/(?:from|import)\s*\(?\s*['"](\.{1,2}\/[^'"]+)['"]/g)].map(
    (m) => m[1] as string,
  )
  return specifiers.map((specifier) => relative(SRC, resolve(SRC, dirname(file), specifier)))
}

const folderOf = (path: string) => (path.includes('/') ? path.split('/')[0] : undefined)
const isRole = (folder: string | undefined) => (WORKER_ROLES as readonly string[]).includes(folder ?? '')
const files = sourceFiles(SRC)

describe('worker layout', () => {
  it('has a folder with a unit.ts for each role, and no top-level folder that is neither a role nor shared', () => {
    for (const role of WORKER_ROLES) expect(files).toContain(`${role}/unit.ts`)
    const folders = new Set(files.map(folderOf).filter((folder) => folder !== undefined))
    expect(
      [...folders].filter((folder) => !isRole(folder) && !SHARED_FOLDERS.includes(folder)).sort(),
    ).toEqual([])
  })

  it("enters another role's folder only through its unit.ts", () => {
    const crossings = files
      .filter((file) => isRole(folderOf(file)))
      .flatMap((file) =>
        importsOf(file)
          .filter((target) => isRole(folderOf(target)) && folderOf(target) !== folderOf(file))
          .filter((target) => target !== `${folderOf(target)}/unit.ts`)
          .map((target) => `${file} → ${target}`),
      )
    expect(crossings).toEqual([])
  })

  it('keeps shared code and the process modules free of any role, the entry points aside', () => {
    const shared = files.filter((file) => !isRole(folderOf(file)) && !ENTRIES.includes(file))
    const crossings = shared.flatMap((file) =>
      importsOf(file)
        .filter((target) => isRole(folderOf(target)))
        .map((target) => `${file} → ${target}`),
    )
    expect(crossings).toEqual([])
  })

  it("has main.ts and index.ts start roles only through each role's unit.ts", () => {
    const reached = ENTRIES.flatMap((file) => importsOf(file).filter((target) => isRole(folderOf(target))))
    expect(reached.length).toBeGreaterThan(0)
    expect(reached.filter((target) => target !== `${folderOf(target)}/unit.ts`)).toEqual([])
  })
})
