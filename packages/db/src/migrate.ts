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

/** Applies every committed migration that the database has not seen yet. */
export async function migrateDatabase(url: string): Promise<void> {
  const sql = postgres(url, { max: 1, onnotice: () => {}, connect_timeout: 5 })
  try {
    await migrate(drizzle({ client: sql }), { migrationsFolder })
  } finally {
    await sql.end({ timeout: 5 })
  }
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
