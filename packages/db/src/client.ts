import { drizzle } from 'drizzle-orm/postgres-js'
import postgres from 'postgres'
import * as schema from './schema/index.ts'

export interface DbOptions {
  /** Pool size. */
  max?: number
  connection?: Record<string, string>
}

export function createDb(url: string, options: DbOptions = {}) {
  const sql = postgres(url, {
    max: options.max ?? 10,
    onnotice: () => {},
    connect_timeout: 5,
    ...(options.connection ? { connection: options.connection } : {}),
  })
  const db = drizzle({ client: sql, schema, casing: 'snake_case' })
  return { db, sql, close: () => sql.end({ timeout: 5 }) }
}

export type DbClient = ReturnType<typeof createDb>
export type Db = DbClient['db']
export type Sql = DbClient['sql']
