/**
 * The 10 M messages `bench:message-search` and `bench:console-pages` measure over, and the database
 * they are in: MESSAGE_SEARCH_ROWS messages (default 10,000,000) over MESSAGE_SEARCH_KEYS keys
 * (1,000: one busy key with 30 % of them, the rest spread evenly), accepted over the last 90 days,
 * written set-based with the table's indexes built afterwards. One generator, so a database kept by
 * one benchmark (BENCH_KEEP_DB=1) is the other's too (BENCH_REUSE_DB).
 */

import { buildApp, createDeps, createLogger, parseApiConfig } from '@dispatch/api'
import { Scopes } from '@dispatch/contracts'
import postgres from 'postgres'
import { millions, secondsSince } from '../harness/format.ts'
import { createBenchWorld } from '../harness/world.ts'
import { SPAN_DAYS, STATUS, TYPE, withoutMessageIndexes } from './message-list-generate.ts'

const BATCH = 500_000
const PARALLEL = 2

/** The generated messages' shape, so a benchmark draws existing values without reading them. */
export interface SearchMessages {
  total: number
  keyCount: number
  /** Distinct phones: about five messages each, spread over the 90 days and over several keys. */
  phones: number
  /** Key index (0: the busy one) of message `i` (1…total). */
  keyOf: (i: number) => number
  phoneOf: (i: number) => string
  /** Message `i`'s client reference; only even `i` have one. */
  referenceOf: (i: number) => string
}

/**
 * Message `i`'s key, phone and reference, the same in SQL and here (so the benchmark draws existing
 * values without reading them): `(i × 5761) mod 10,000` below 3,000 is the busy key 0 (30 %), else
 * one of the others; phone `(i × 7919) mod phones`, so a phone's messages are `phones` apart (spread
 * over time and keys); a reference on every other message, unique.
 */
export function searchMessages(
  total = Number(process.env.MESSAGE_SEARCH_ROWS ?? 10_000_000),
  keyCount = Math.max(2, Number(process.env.MESSAGE_SEARCH_KEYS ?? 1_000)),
): SearchMessages {
  const phones = Math.floor(total / 5) + 1
  const slot = (i: number) => (i * 5761) % 10_000
  return {
    total,
    keyCount,
    phones,
    keyOf: (i) => (slot(i) < 3_000 ? 0 : 1 + (slot(i) % (keyCount - 1))),
    phoneOf: (i) => `+5521${100_000_000 + ((i * 7919) % phones)}`,
    referenceOf: (i) => `ref-${i}`,
  }
}

/** Key `k`'s id, in SQL (`k` an expression): `md5('search-key-' || k)::uuid`. */
export const keyIdSql = (k: string) => `md5('search-key-' || ${k})::uuid`

const INSERT_BATCH = `
  insert into messages (id, api_key_id, type, phone, payload, client_reference, sender_phone_number_id, sender_id,
    status, attempts, platform_message_id, last_error_code, last_error_message, accepted_at, sent_at, delivered_at,
    read_at, failed_at, expired_at, canceled_at, updated_at)
  select gen_random_uuid(), ${keyIdSql('k')}, t, '+5521' || (100000000 + (i::bigint * 7919) % $3)::text,
    case t when 'text' then '{"text":"Your code is 123456"}'::jsonb
      when 'template' then '{"templateId":"order_shipped","language":"pt_BR","variables":{"1":"Ana","2":"BR-1042"}}'::jsonb
      else '{"image":{"mediaId":"media-456","text":"Your invoice"}}'::jsonb end,
    case when i % 2 = 0 then 'ref-' || i end, '106540352242922', 'default', s,
    case when s in ('scheduled', 'queued', 'expired', 'canceled') then 0 when s = 'failed' then 3 else 1 end,
    case when s in ('sent', 'delivered', 'read') then 'wamid.search.' || i end,
    case when s = 'failed' then '131026' end, case when s = 'failed' then 'Message undeliverable' end,
    a, case when s in ('sent', 'delivered', 'read') then a + interval '1 second' end,
    case when s in ('delivered', 'read') then a + interval '3 seconds' end,
    case when s = 'read' then a + interval '40 seconds' end,
    case when s = 'failed' then a + interval '5 seconds' end,
    case when s = 'expired' then a + interval '1 hour' end,
    case when s = 'canceled' then a + interval '10 minutes' end,
    a + interval '1 minute'
  from (
    select i, ${STATUS} as s, ${TYPE} as t,
      case when (i::bigint * 5761) % 10000 < 3000 then 0 else 1 + (i::bigint * 5761) % 10000 % ($4 - 1) end as k,
      $5::timestamptz + (i * $6::float8) * interval '1 microsecond' as a
    from generate_series($1::int, $2::int) i
  ) src`

async function generate(databaseUrl: string, { total, keyCount, phones }: SearchMessages) {
  const sql = postgres(databaseUrl, { max: PARALLEL, onnotice: () => {} })
  try {
    await sql.unsafe(
      `insert into api_keys (id, key_hash, key_prefix, environment, client_name, email, scopes, status)
       select ${keyIdSql('k')}, 'search-unused-' || k, 'dk_dev_', 'development', 'search-' || k,
         'bench@dispatch.local', '{${Scopes.readMessages}}', 'approved'
       from generate_series(0, $1::int - 1) k`,
      [keyCount],
    )
    const started = performance.now()
    console.log(
      `generating ${millions(total)} messages over ${keyCount.toLocaleString('en-US')} keys (key 0: 30 %), ~${millions(phones)} phones, a reference on half …`,
    )
    const start = new Date(Date.now() - SPAN_DAYS * 86_400_000).toISOString()
    const stepMicros = (SPAN_DAYS * 86_400_000_000) / total
    const batches: [number, number][] = []
    for (let lo = 1; lo <= total; lo += BATCH) batches.push([lo, Math.min(total, lo + BATCH - 1)])
    let done = 0
    await withoutMessageIndexes(sql, async () => {
      const loader = async () => {
        for (let next = batches.shift(); next; next = batches.shift()) {
          const [lo, hi] = next
          await sql.begin(async (tx) => {
            await tx`set local session_replication_role = replica`
            await tx.unsafe(INSERT_BATCH, [lo, hi, phones, keyCount, start, stepMicros])
          })
          done += hi - lo + 1
          console.log(`  ${millions(done)} / ${millions(total)} (${secondsSince(started)})`)
        }
      }
      await Promise.all(Array.from({ length: PARALLEL }, loader))
      console.log(`  rows written (${secondsSince(started)})`)
    })
    const analyzing = performance.now()
    await sql`vacuum analyze messages`
    console.log(`  vacuum analyze: ${secondsSince(analyzing)}`)
    const [size] = await sql`
      select pg_size_pretty(pg_table_size('messages')) as heap, pg_size_pretty(pg_indexes_size('messages')) as indexes`
    console.log(`  generated in ${secondsSince(started)}; table ${size?.heap}, its indexes ${size?.indexes}`)
  } finally {
    await sql.end()
  }
}

/**
 * The API in this process over `world`'s database, an admin token of its own, listening on a free
 * port of 127.0.0.1: what both benchmarks ask their pages and searches of.
 */
export async function listenSearchApi(
  world: { databaseUrl: string; redisUrl?: string | undefined; queuePrefix: string },
  adminToken: string,
) {
  const config = parseApiConfig({
    DATABASE_URL: world.databaseUrl,
    REDIS_URL: world.redisUrl ?? 'redis://127.0.0.1:6379',
    QUEUE_PREFIX: world.queuePrefix,
    LOG_LEVEL: 'warn',
    ADMIN_TOKENS: `bench=${adminToken}`,
  })
  const app = await buildApp(createDeps(config, { logger: createLogger(config) }))
  return { app, config, address: await app.listen({ host: '127.0.0.1', port: 0 }) }
}

/**
 * The database the searches run over: BENCH_REUSE_DB=<its url> (generated before, with the same
 * `total` and `keyCount`, kept with BENCH_KEEP_DB=1), or a new one of its own (`createBenchWorld`)
 * filled by `generate`, which `drop()` removes.
 */
export async function prepareSearchWorld(name: string, layout: SearchMessages) {
  const reuse = process.env.BENCH_REUSE_DB
  if (reuse) return { databaseUrl: reuse, redisUrl: process.env.REDIS_URL, queuePrefix: 'bench_reuse' }
  const world = await createBenchWorld(name)
  try {
    await generate(world.databaseUrl, layout)
  } catch (error) {
    await world.drop()
    throw error
  }
  return world
}
