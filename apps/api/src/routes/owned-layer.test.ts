import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'

/**
 * Key routes reach rows only through `owned(db, caller)` (packages/db/src/owned/), whose every query
 * filters by the caller: a key-only route file imports no other value from `@dispatch/db` (types
 * aside), so a query without the owner's filter is not reachable from it. The suppression and
 * erasure routes serve admins too (their unscoped, audited queries): their key branches use
 * `owned(...)`, proven from outside by test/consent/tenancy.test.ts.
 */
const KEY_ROUTES = [
  'third-party/webhook-endpoints.ts',
  'third-party/webhook-deliveries.ts',
  'messages/list.ts',
  'messages/read.ts',
  'messages/lookup.ts',
  'lifecycle/export.ts',
]
/**
 * Values a key route may take from the package besides the owned layer: no query of owned rows
 * among them (`identitiesOf` reads the phone–BSUID pairs of the phone the caller names, no tenant's).
 */
const ALLOWED = new Set(['owned', 'isUuid', 'identitiesOf'])

function dbValueImports(source: string): string[] {
  const names: string[] = []
  for (const match of source.matchAll(/import\s+(type\s+)?\{([^}]*)\}\s+from\s+'@dispatch\/db'/g)) {
    if (match[1]) continue
    for (const part of (match[2] as string).split(',')) {
      const name = part.trim()
      if (name && !name.startsWith('type ')) names.push(name)
    }
  }
  return names
}

describe('key routes and the owned data layer', () => {
  it.each(KEY_ROUTES)('%s takes no unscoped query from @dispatch/db', (file) => {
    const source = readFileSync(new URL(`./${file}`, import.meta.url), 'utf8')
    expect(source).toContain('owned(')
    expect(dbValueImports(source).filter((name) => !ALLOWED.has(name))).toEqual([])
  })
})
