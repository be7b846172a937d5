import { execFileSync } from 'node:child_process'
import { existsSync, readdirSync, statSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const PACKAGE = fileURLToPath(new URL('..', import.meta.url))
export const DIST = path.join(PACKAGE, 'dist')
/** What the build reads: the app's sources and config, and the typed client it calls. */
const SOURCES = ['src', 'index.html', 'vite.config.ts', 'package.json', '../client/src'].map((p) =>
  path.join(PACKAGE, p),
)

const newestUnder = (file: string): number => {
  const stat = statSync(file)
  if (!stat.isDirectory()) return stat.mtimeMs
  return Math.max(stat.mtimeMs, ...readdirSync(file).map((name) => newestUnder(path.join(file, name))))
}

/** Builds the console (`vite build`) when dist/ is missing or older than what it is built from. */
export function ensureConsoleBuilt(log: (line: string) => void = console.log): 'fresh' | 'built' {
  const built = path.join(DIST, 'index.html')
  if (
    existsSync(built) &&
    statSync(built).mtimeMs >= Math.max(...SOURCES.filter(existsSync).map(newestUnder))
  ) {
    return 'fresh'
  }
  log('building the console (packages/console/dist is missing or older than its sources)')
  const vite = path.join(PACKAGE, 'node_modules/vite/bin/vite.js')
  // A production build whoever asks: under vitest (NODE_ENV=test) Vite would compile JSX for
  // development, with every element's source file and line in the bundle.
  execFileSync(process.execPath, [vite, 'build', '--logLevel', 'warn'], {
    cwd: PACKAGE,
    stdio: 'inherit',
    env: { ...process.env, NODE_ENV: 'production' },
  })
  return 'built'
}

// `node packages/console/scripts/ensure-built.ts`: what scripts/start.sh and scripts/test.sh run.
if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  ensureConsoleBuilt((line) => console.error(`[dispatch] ${line}`))
}
