import type { Sql } from '@dispatch/db'
import type { Redis } from 'ioredis'

/**
 * Where a string is found in the test's database: every text, varchar, json and jsonb column of
 * every table, searched (not assumed). Answers `table.column` for each hit.
 */
export async function findInPostgres(sql: Sql, needles: string[]): Promise<string[]> {
  const columns = await sql<{ table_name: string; column_name: string }[]>`
    select c.table_name, c.column_name from information_schema.columns c
    join information_schema.tables t on t.table_schema = c.table_schema and t.table_name = c.table_name
    where c.table_schema = current_schema() and t.table_type = 'BASE TABLE'
      and c.data_type in ('text', 'jsonb', 'json', 'character varying')
      -- A partitioned table is searched whole, not its partitions again.
      and c.table_name not in (select relname from pg_class where relispartition)`
  const hits: string[] = []
  for (const { table_name, column_name } of columns) {
    for (const needle of needles) {
      const [row] = await sql<{ n: number }[]>`
        select count(*)::int as n from ${sql(table_name)} where ${sql(column_name)}::text like ${`%${needle}%`}`
      if ((row?.n ?? 0) > 0) hits.push(`${table_name}.${column_name} holds ${needle} (${row?.n} rows)`)
    }
  }
  return hits
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
