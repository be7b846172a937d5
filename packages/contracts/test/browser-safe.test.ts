import { readdirSync, readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'

/**
 * The browser console imports @dispatch/contracts, so the package holds wire shapes only: TypeBox
 * its one dependency, and its sources import nothing else (no `node:` module, no runtime package).
 * What a runtime needs (Redis, env, crypto…) belongs in @dispatch/runtime.
 */
const root = new URL('../', import.meta.url)
const ALLOWED_PACKAGES = ['typebox']

const sources = readdirSync(new URL('src/', root), { recursive: true, encoding: 'utf8' })
  .filter((file) => file.endsWith('.ts') && !file.endsWith('.test.ts'))
  .map((file) => ({ file, text: readFileSync(new URL(`src/${file}`, root), 'utf8') }))

/** Every module a source names: static and type imports, re-exports, dynamic imports. */
const importedModules = (text: string) => [
  ...[...text.matchAll(/^\s*(?:import|export)\b[^'"]*?\bfrom\s*['"]([^'"]+)['"]/gm)].map((m) => m[1] ?? ''),
  ...[...text.matchAll(/^\s*import\s*['"]([^'"]+)['"]/gm)].map((m) => m[1] ?? ''),
  ...[...text.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g)].map((m) => m[1] ?? ''),
]

const isAllowed = (specifier: string) =>
  specifier.startsWith('./') ||
  ALLOWED_PACKAGES.some((name) => specifier === name || specifier.startsWith(`${name}/`))

describe('@dispatch/contracts stays browser-safe', () => {
  it('depends on TypeBox only', () => {
    const pkg = JSON.parse(readFileSync(new URL('package.json', root), 'utf8'))
    expect(Object.keys(pkg.dependencies ?? {})).toEqual(ALLOWED_PACKAGES)
    expect(pkg.peerDependencies ?? {}).toEqual({})
    expect(pkg.optionalDependencies ?? {}).toEqual({})
  })

  it('imports nothing but TypeBox and its own files', () => {
    expect(sources.length).toBeGreaterThan(10)
    const outside = sources.flatMap(({ file, text }) =>
      importedModules(text)
        .filter((specifier) => !isAllowed(specifier))
        .map((specifier) => `${file}: ${specifier}`),
    )
    expect(outside).toEqual([])
  })

  it('reads nothing of Node: no process, Buffer or require', () => {
    const nodeOnly = sources.flatMap(({ file, text }) =>
      [...text.matchAll(/\b(process\.|Buffer\.|require\(|__dirname)/g)].map((m) => `${file}: ${m[1]}`),
    )
    expect(nodeOnly).toEqual([])
  })
})
