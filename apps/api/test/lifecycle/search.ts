import type { Sql } from '@dispatch/db'
import type { Redis } from 'ioredis'
import { expect } from 'vitest'

/**
 * Every text, varchar, array, json and jsonb column of every table of the test's database: where a
 * search for a string looks. A partitioned table is searched whole, not its partitions again.
 */
async function searchedColumns(sql: Sql) {
  const columns = await sql<{ table_name: string; column_name: string }[]>`
    select c.table_name, c.column_name from information_schema.columns c
    join information_schema.tables t on t.table_schema = c.table_schema and t.table_name = c.table_name
    where c.table_schema = current_schema() and t.table_type = 'BASE TABLE'
      and c.data_type in ('text', 'jsonb', 'json', 'character varying', 'ARRAY')
      and c.table_name not in (select relname from pg_class where relispartition)`
  // The search is only as good as what it reads: the schema has well over 50 such columns.
  expect(columns.length).toBeGreaterThan(50)
  return columns
}

/** How many rows of `table.column` hold `needle`, compared as text. */
const rowsHolding = async (sql: Sql, table: string, column: string, needle: string) =>
  (
    await sql<{ n: number }[]>`
      select count(*)::int as n from ${sql(table)} where ${sql(column)}::text like ${`%${needle}%`}`
  )[0]?.n ?? 0

/**
 * Where strings are found in the test's database, searched (not assumed): one line per column and
 * string found, `table.column holds <string> (<n> rows)`.
 */
export async function findInPostgres(sql: Sql, needles: string[]): Promise<string[]> {
  const hits: string[] = []
  for (const { table_name, column_name } of await searchedColumns(sql)) {
    for (const needle of needles) {
      const n = await rowsHolding(sql, table_name, column_name, needle)
      if (n > 0) hits.push(`${table_name}.${column_name} holds ${needle} (${n} rows)`)
    }
  }
  return hits
}

/** The columns (`table.column`, sorted) of the test's database holding `needle`. */
export async function columnsHolding(sql: Sql, needle: string): Promise<string[]> {
  const found: string[] = []
  for (const { table_name, column_name } of await searchedColumns(sql)) {
    if ((await rowsHolding(sql, table_name, column_name, needle)) > 0)
      found.push(`${table_name}.${column_name}`)
  }
  return found.sort()
}

/**
 * Where a string is found in Redis under the test's prefix: every key's name, and its value of
 * whatever type (string, hash, list, set, sorted set, stream), read whole.
 */
export async function findInRedis(redis: Redis, prefix: string, needles: string[]): Promise<string[]> {
  const hits: string[] = []
  const has = (text: string) => needles.filter((n) => text.includes(n))
  let cursor = '0'
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000)
    cursor = next
    for (const key of keys) {
      const type = await redis.type(key)
      let text: string
      if (type === 'string') text = (await redis.get(key)) ?? ''
      else if (type === 'hash') text = JSON.stringify(await redis.hgetall(key))
      else if (type === 'list') text = JSON.stringify(await redis.lrange(key, 0, -1))
      else if (type === 'set') text = JSON.stringify(await redis.smembers(key))
      else if (type === 'zset') text = JSON.stringify(await redis.zrange(key, '0', '-1'))
      else if (type === 'stream') text = JSON.stringify(await redis.xrange(key, '-', '+'))
      else text = ''
      for (const needle of has(`${key}\n${text}`)) hits.push(`${key} (${type}) holds ${needle}`)
    }
  } while (cursor !== '0')
  return hits
}
