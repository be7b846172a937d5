import { randomBytes } from 'node:crypto'
import postgres from 'postgres'
import { inject } from 'vitest'

declare module 'vitest' {
  export interface ProvidedContext {
    /** A URL on the test Postgres server; tests clone `templateDatabase` from it. */
    postgresUrl: string
    templateDatabase: string
    redisUrl: string
    /** Every database and Redis key of this run starts with it, so teardown finds them all. */
    runId: string
  }
}

/** A fresh, migrated database of its own for one test file, cloned from the run's template. */
export async function createTestDatabase(): Promise<{
  url: string
  sql: postgres.Sql
  drop(): Promise<void>
}> {
  const base = inject('postgresUrl')
  const name = `${inject('runId')}_${randomBytes(4).toString('hex')}`
  const admin = postgres(base, { max: 1, onnotice: () => {} })
  // CREATE DATABASE … TEMPLATE needs the template to have no other session: retry briefly.
  for (let attempt = 0; ; attempt++) {
    try {
      await admin.unsafe(`create database "${name}" template "${inject('templateDatabase')}"`)
      break
    } catch (error) {
      if (attempt >= 20 || !/being accessed by other users/.test((error as Error).message)) throw error
      await new Promise((r) => setTimeout(r, 100))
    }
  }
  const url = new URL(base)
  url.pathname = `/${name}`
  const sql = postgres(url.toString(), { max: 2, onnotice: () => {} })
  return {
    url: url.toString(),
    /** A client on this database, for asserting on what the service wrote. */
    sql,
    drop: async () => {
      await sql.end({ timeout: 5 })
      await admin.unsafe(`drop database if exists "${name}" with (force)`)
      await admin.end({ timeout: 5 })
    },
  }
}

/** A queue prefix of its own for one test file (under the run id, so teardown removes its keys). */
export const testQueuePrefix = () => `${inject('runId')}-${randomBytes(4).toString('hex')}`
export const testRedisUrl = () => inject('redisUrl')
