import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

/**
 * Key routes reach rows only through `owned(db, caller)` (packages/db/src/owned/), whose every query
 * filters by the caller: a file serving key routes imports no other value from `@dispatch/db`
 * (types aside) than the helpers below, so a query without the owner's filter is not reachable
 * from it.
 *
 * The files are found, not listed: every file under a folder of `routes/` whose entry plugin
 * declares API-key authentication for its prefix (`authenticate(app, 'api-key')`: /api/third-party,
 * /api/api-keys); every file of `routes/shared/` (route plugins a key prefix and another both
 * mount: suppressions, erasures); every file of `sending/` (the domain the send and message routes
 * call with the caller's key) but its `checks/` (the send rules of every sender, loaded once for
 * the process: no key's rows); and any other source file that guards a route with
 * `app.requireApiKey`. A new key route file is covered with no one naming it.
 */
const SRC = fileURLToPath(new URL('..', import.meta.url))

/**
 * Values a key route may take from the package besides the owned layer: none reads a tenant's (or
 * a key's) rows. `isUuid` checks an id's shape; `identitiesOf` reads the phone–BSUID pairs of the
 * phone the caller names, no tenant's; `OrderRejected` is the error an order's checks throw;
 * `findLoggedSent` reads a sender's sent log in Redis by message id (the message store's lookup,
 * whose caller then checks the message is the key's); `loadPoolMembers` reads every sender pool's
 * members and their health, held once for the process (sending/pools/pool-cache.ts), no key's rows.
 */
const ALLOWED = new Set([
  'owned',
  'isUuid',
  'identitiesOf',
  'OrderRejected',
  'findLoggedSent',
  'loadPoolMembers',
])

/**
 * Files that serve keys and another audience, named by the route plugin they export (so a move
 * keeps them named), with why they take unscoped queries. `owned`: their key branch goes through
 * the owned layer (and the route's key tests prove it from outside); `none`: their key route reads
 * no rows at all.
 */
const MIXED: Record<string, { reason: string; keyBranch: 'owned' | 'none' }> = {
  suppressionRoutes: {
    reason: "admins read and lift every sender's entries (audited); keys through owned(...).suppressions",
    keyBranch: 'owned', // test/consent/tenancy.test.ts
  },
  erasureRoutes: {
    reason: 'admins request and read any erasure (audited); keys through owned(...).erasures',
    keyBranch: 'owned', // test/consent/tenancy.test.ts, test/lifecycle/erasure.test.ts
  },
  portalSessionRoutes: {
    reason: "the admin sessions' audit log; the portal's own routes read only the request's key",
    keyBranch: 'none',
  },
  apiKeyRoutes: {
    reason: 'the public key request inserts a pending key; `/me` reads only the request’s key',
    keyBranch: 'none',
  },
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return sourceFiles(path)
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [path] : []
  })
}

const KEY_GUARD = /\bapp\.requireApiKey\b/
const KEY_PREFIX = /\bauthenticate\(app, 'api-key'\)/

/** The folders of routes/ whose prefix takes API keys (their entry plugin says so). */
const keyFolders = () =>
  readdirSync(join(SRC, 'routes'), { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => `routes/${entry.name}/`)
    .filter((folder) => {
      const entry = join(SRC, folder, 'index.ts')
      return sourceFiles(join(SRC, folder)).includes(entry) && KEY_PREFIX.test(readFileSync(entry, 'utf8'))
    })

/** The key route files of apps/api/src, by the rule above: path (from src) and source. */
function keyRouteFiles() {
  const folders = [...keyFolders(), 'routes/shared/', 'sending/']
  const exempt = 'sending/checks/'
  return sourceFiles(SRC)
    .map((path) => ({ file: relative(SRC, path).split('\\').join('/'), source: readFileSync(path, 'utf8') }))
    .filter(
      ({ file, source }) =>
        KEY_GUARD.test(source) ||
        (folders.some((folder) => file.startsWith(folder)) && !file.startsWith(exempt)),
    )
}

/** The values (not types) a file imports from `@dispatch/db` or a path of it. */
function dbValueImports(source: string): string[] {
  const names: string[] = []
  for (const match of source.matchAll(/import\s+(type\s+)?([^'";]*?)\s+from\s+'(@dispatch\/db[^']*)'/g)) {
    if (match[1]) continue
    const clause = (match[2] as string).trim()
    const named = /\{([^}]*)\}/.exec(clause)
    // A default or namespace import takes everything: named by its clause, never allowed.
    const rest = clause
      .replace(/\{[^}]*\}/, '')
      .replace(/,/g, '')
      .trim()
    if (rest) names.push(`${rest} (from '${match[3]}')`)
    for (const part of named?.[1]?.split(',') ?? []) {
      const name = part
        .trim()
        .split(/\s+as\s+/)[0]
        ?.trim()
      if (name && !name.startsWith('type '))
        names.push(match[3] === '@dispatch/db' ? name : `${name} (from '${match[3]}')`)
    }
  }
  if (/import\(\s*'@dispatch\/db/.test(source)) names.push("import('@dispatch/db')")
  return names
}

const mixedOf = (source: string) =>
  Object.keys(MIXED).find((name) => new RegExp(`export const ${name}\\b`).test(source))

const files = keyRouteFiles()

describe('key routes and the owned data layer', () => {
  it('finds the key route files (the rule still matches after a move)', () => {
    const found = files.map(({ file }) => file)
    expect(found.length).toBeGreaterThan(15)
    // One of each kind the rule must catch: a guarded route, a tenant route, a helper by its folder.
    for (const name of [
      'orders.ts',
      'list.ts',
      'find-message.ts',
      'submit.ts',
      'export.ts',
      'media.ts',
      'templates.ts',
    ]) {
      expect(found.some((file) => file.endsWith(`/${name}`))).toBe(true)
    }
  })

  it.each(files.filter(({ source }) => !mixedOf(source)).map(({ file, source }) => [file, source]))(
    '%s takes no unscoped query from @dispatch/db',
    (_file, source) => {
      expect(dbValueImports(source).filter((name) => !ALLOWED.has(name))).toEqual([])
    },
  )

  it.each(Object.entries(MIXED))(
    '%s (serving keys and another audience) is named for a reason',
    (name, entry) => {
      const file = files.find(({ source }) => mixedOf(source) === name)
      // Still a key route file, still taking an unscoped query: else it no longer needs naming here.
      expect(file, `no key route file exports ${name}`).toBeDefined()
      const source = file?.source ?? ''
      expect(dbValueImports(source).filter((value) => !ALLOWED.has(value)).length).toBeGreaterThan(0)
      if (entry.keyBranch === 'owned') expect(source).toContain('owned(')
      expect(entry.reason).not.toBe('')
    },
  )

  it('reads default, namespace, renamed and sub-path imports', () => {
    expect(dbValueImports("import { a, type B, c as d } from '@dispatch/db'")).toEqual(['a', 'c'])
    expect(dbValueImports("import type { A } from '@dispatch/db'")).toEqual([])
    expect(dbValueImports("import * as db from '@dispatch/db'")).toEqual(["* as db (from '@dispatch/db')"])
    expect(dbValueImports("import {\n  listOrders,\n  owned,\n} from '@dispatch/db/queries'")).toEqual([
      "listOrders (from '@dispatch/db/queries')",
      "owned (from '@dispatch/db/queries')",
    ])
  })
})
