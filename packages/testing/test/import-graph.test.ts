import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { expect, it } from 'vitest'

/**
 * The shape of the source as imports draw it (issue 42): no two modules import each other, directly
 * or round a longer loop, since neither can then be read, moved or tested without the other; and
 * inside the API nothing outside `routes/` imports from `routes/` (the rules sit below the routes
 * that call them, never the other way round) but `app.ts`, the root that registers the routes.
 */

const root = join(dirname(fileURLToPath(import.meta.url)), '../../..')
const SKIPPED = new Set(['node_modules', 'dist', '.turbo'])

function sourcesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return SKIPPED.has(entry.name) ? [] : sourcesUnder(path)
    return /\.tsx?$/.test(entry.name) && !entry.name.endsWith('.d.ts') ? [path] : []
  })
}

/** The source file a relative specifier names (`./x.ts`, `./x`, `./x/index.ts`), or null for assets. */
function resolveSpecifier(from: string, specifier: string): string | null {
  const base = resolve(dirname(from), specifier.replace(/\?.*$/, ''))
  const candidates = [base, `${base}.ts`, `${base}.tsx`, join(base, 'index.ts'), join(base, 'index.tsx')]
  return (
    candidates.find((path) => /\.tsx?$/.test(path) && existsSync(path) && statSync(path).isFile()) ?? null
  )
}

/**
 * The specifiers a module imports or re-exports: statements that start a line (a comment's lines
 * start with `*` or `//`), and `import('…')` calls. TypeScript 7 has no JavaScript API to parse with.
 */
const specifiersOf = (source: string) =>
  [
    ...source.matchAll(/^\s*(?:import|export)\b[^'"`;]*?\bfrom\s*['"]([^'"]+)['"]/gm),
    ...source.matchAll(/^\s*import\s*['"]([^'"]+)['"]/gm),
    ...source.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g),
  ].map((match) => match[1] as string)

/** Every module's relative imports (type-only ones too: a circle of types is still a circle to read). */
function importGraph(): Map<string, string[]> {
  const files = [...sourcesUnder(join(root, 'apps')), ...sourcesUnder(join(root, 'packages'))]
  const graph = new Map<string, string[]>()
  for (const file of files) {
    const targets = specifiersOf(readFileSync(file, 'utf8'))
      .filter((specifier) => specifier.startsWith('.'))
      .flatMap((specifier) => resolveSpecifier(file, specifier) ?? [])
    graph.set(relative(root, file), [...new Set(targets.map((target) => relative(root, target)))])
  }
  return graph
}

/** The strongly connected components with more than one module, or a module importing itself (Tarjan). */
function cyclesOf(graph: Map<string, string[]>): string[][] {
  let next = 0
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const onStack = new Set<string>()
  const cycles: string[][] = []
  const visit = (node: string) => {
    index.set(node, next)
    low.set(node, next++)
    stack.push(node)
    onStack.add(node)
    for (const target of graph.get(node) ?? []) {
      if (!index.has(target)) {
        visit(target)
        low.set(node, Math.min(low.get(node) as number, low.get(target) as number))
      } else if (onStack.has(target)) {
        low.set(node, Math.min(low.get(node) as number, index.get(target) as number))
      }
    }
    if (low.get(node) !== index.get(node)) return
    const component: string[] = []
    let member: string | undefined
    do {
      member = stack.pop() as string
      onStack.delete(member)
      component.push(member)
    } while (member !== node)
    if (component.length > 1 || graph.get(node)?.includes(node)) cycles.push(component.sort())
  }
  for (const node of graph.keys()) if (!index.has(node)) visit(node)
  return cycles.sort((a, b) => (a[0] ?? '').localeCompare(b[0] ?? ''))
}

const graph = importGraph()

it('finds the sources it checks', () => {
  expect(graph.size).toBeGreaterThan(500)
  expect(graph.get('apps/api/src/app.ts')?.length).toBeGreaterThan(0)
})

it('no modules import each other, directly or round a loop', () => {
  const cycles = cyclesOf(graph).map((files) => files.join(' <-> '))
  expect(cycles).toEqual([])
})

it('no module of the API outside routes/ imports from routes/', () => {
  const routes = 'apps/api/src/routes/'
  const upward = [...graph]
    .filter(
      ([file]) =>
        file.startsWith('apps/api/src/') && !file.startsWith(routes) && file !== 'apps/api/src/app.ts',
    )
    .flatMap(([file, targets]) => targets.filter((t) => t.startsWith(routes)).map((t) => `${file} -> ${t}`))
  expect(upward).toEqual([])
})
