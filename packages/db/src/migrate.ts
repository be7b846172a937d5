import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { drizzle } from 'drizzle-orm/postgres-js'
import { migrate } from 'drizzle-orm/postgres-js/migrator'
import postgres from 'postgres'

const migrationsFolder = fileURLToPath(new URL('../drizzle', import.meta.url))

/** Creates the database named in `url` when it does not exist yet (a fresh machine has none). */
export async function ensureDatabase(url: string): Promise<boolean> {
  const name = new URL(url).pathname.replace(/^\//, '')
  if (!name) throw new Error(`DATABASE_URL names no database: ${redactUrl(url)}`)
  const admin = new URL(url)
  admin.pathname = '/postgres'
  const sql = postgres(admin.toString(), { max: 1, onnotice: () => {}, connect_timeout: 5 })
  try {
    const [found] = await sql`select 1 from pg_database where datname = ${name}`
    if (found) return false
    await sql.unsafe(`create database "${name.replace(/"/g, '""')}"`)
    return true
  } finally {
    await sql.end({ timeout: 5 })
  }
}

/**
 * Applies every committed migration that the database has not seen yet; with `until` (a migration's
 * tag, such as `0020_content_redaction`), only those up to it: a test builds yesterday's layout,
 * fills it, then migrates the rest, as an upgrade does.
 */
export async function migrateDatabase(url: string, options: { until?: string } = {}): Promise<void> {
  const sql = postgres(url, { max: 1, onnotice: () => {}, connect_timeout: 5 })
  const folder = options.until ? await migrationsUntil(options.until) : migrationsFolder
  try {
    await migrate(drizzle({ client: sql }), { migrationsFolder: folder })
  } finally {
    await sql.end({ timeout: 5 })
    if (folder !== migrationsFolder) await rm(folder, { recursive: true, force: true })
  }
}

/** A copy of the migrations folder whose journal ends at `tag`. */
async function migrationsUntil(tag: string): Promise<string> {
  const journalPath = join(migrationsFolder, 'meta', '_journal.json')
  const journal = JSON.parse(await readFile(journalPath, 'utf8')) as { entries: { tag: string }[] }
  const end = journal.entries.findIndex((entry) => entry.tag === tag)
  if (end < 0) throw new Error(`no migration is tagged ${tag}`)
  const folder = await mkdtemp(join(tmpdir(), 'dispatch-migrations-'))
  await cp(migrationsFolder, folder, { recursive: true })
  const trimmed = { ...journal, entries: journal.entries.slice(0, end + 1) }
  await writeFile(join(folder, 'meta', '_journal.json'), JSON.stringify(trimmed))
  return folder
}

/** The URL without its password, fit for a log line. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url)
    if (u.password) u.password = '***'
    return u.toString()
  } catch {
    return '(unparseable URL)'
  }
}
