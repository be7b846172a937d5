/**
 * Message list benchmark: fills one key with BENCH_MESSAGES messages (default 10,000,000) and two
 * other keys with 250,000 each, then measures GET /api/third-party/messages (take=100: status
 * filters with date ranges, and a few other shapes) p95 through HTTP against the same query
 * function (`listMessages`) called straight through the driver.
 *
 *   pnpm --filter @dispatch/bench bench:message-list
 *   BENCH_MESSAGES=1000000 BENCH_SAMPLES=300 BENCH_KEEP_DB=1 (all optional)
 *
 * Runs in a database of its own, dropped at the end. BENCH_KEEP_DB=1 keeps it (to look at plans);
 * BENCH_REUSE_DB=<its url> measures over it again without generating.
 */

import { buildApp, createDeps, createLogger, parseApiConfig } from '@dispatch/api'
import { acceptedWindow, type MessageListQuery, parseTimeBound } from '@dispatch/contracts'
import { createDb, generateApiKey, listMessages } from '@dispatch/db'
import { deleteKeysUnder } from '@dispatch/testing'
import postgres from 'postgres'
import { millions, secondsSince } from '../harness/format.ts'
import { keepAliveGet } from '../harness/http.ts'
import { printComparison } from '../harness/report.ts'
import { pairedP95 } from '../harness/stats.ts'
import { createBenchWorld } from '../harness/world.ts'
import {
  createBenchKey,
  generateMessages,
  SPAN_DAYS,
  withoutMessageIndexes,
} from './message-list-generate.ts'

const total = Number(process.env.BENCH_MESSAGES ?? 10_000_000)
const others = Number(process.env.BENCH_OTHER_MESSAGES ?? 250_000)
const samples = Number(process.env.BENCH_SAMPLES ?? 300)

async function generate(databaseUrl: string) {
  const sql = postgres(databaseUrl, { max: 2, onnotice: () => {} })
  try {
    const main = await createBenchKey(sql, 'bench')
    const started = performance.now()
    console.log(
      `generating ${millions(total)} messages for one key, ${millions(2 * others)} for two others …`,
    )
    await withoutMessageIndexes(sql, async () => {
      await generateMessages(sql, main.id, total, 'main', (done) =>
        console.log(`  ${millions(done)} / ${millions(total)} (${secondsSince(started)})`),
      )
      for (const name of ['other-1', 'other-2']) {
        const other = await createBenchKey(sql, name)
        await generateMessages(sql, other.id, others, name, () => {})
      }
      console.log(`  rows written (${secondsSince(started)})`)
    })
    const vacuuming = performance.now()
    await sql`vacuum analyze messages`
    console.log(`  vacuum analyze: ${secondsSince(vacuuming)}`)
    const [size] = await sql`
      select pg_size_pretty(pg_table_size('messages')) as heap, pg_size_pretty(pg_indexes_size('messages')) as indexes`
    console.log(`  generated in ${secondsSince(started)}; table ${size?.heap}, its indexes ${size?.indexes}`)
    return main.id
  } finally {
    await sql.end()
  }
}

async function prepare() {
  const reuse = process.env.BENCH_REUSE_DB
  if (reuse) {
    const sql = postgres(reuse, { max: 1, onnotice: () => {} })
    const [row] = await sql`select id from api_keys where client_name = 'bench'`
    await sql.end()
    return {
      databaseUrl: reuse,
      redisUrl: process.env.REDIS_URL,
      queuePrefix: 'bench_reuse',
      apiKeyId: row?.id,
    }
  }
  const world = await createBenchWorld('message_list')
  return { ...world, apiKeyId: await generate(world.databaseUrl) }
}

const world = await prepare()
// A fresh key value for the bench key (only its hash is stored, so a kept database needs one too).
const { key, keyHash, keyPrefix } = generateApiKey('development')
const sql = postgres(world.databaseUrl, { max: 1, onnotice: () => {} })
await sql`update api_keys set key_hash = ${keyHash}, key_prefix = ${keyPrefix} where id = ${world.apiKeyId}`
await sql.end()

const config = parseApiConfig({
  DATABASE_URL: world.databaseUrl,
  REDIS_URL: world.redisUrl ?? 'redis://127.0.0.1:6379',
  QUEUE_PREFIX: world.queuePrefix,
  LOG_LEVEL: 'warn',
})
const app = await buildApp(createDeps(config, { logger: createLogger(config) }))
const address = await app.listen({ host: '127.0.0.1', port: 0 })
// The route's own function on connections like the route's (one plan per statement, no JIT); and on
// connections that leave the choice to Postgres, to show what those plans save or cost.
const direct = createDb(world.databaseUrl, { genericPlans: true })
const planned = createDb(world.databaseUrl)
const http = keepAliveGet()
const headers = { 'x-api-key': key }
const day = (daysAgo: number) => new Date(Date.now() - daysAgo * 86_400_000).toISOString().slice(0, 10)
const perDay = Math.round(total / SPAN_DAYS)

try {
  const cases: [string, string][] = [
    ['status=failed, one week', `status=failed&startDate=${day(9)}&endDate=${day(3)}`],
    ['status=failed, one day', `status=failed&startDate=${day(5)}&endDate=${day(5)}`],
    ['status=delivered,read, one day', `status=delivered,read&startDate=${day(5)}&endDate=${day(5)}`],
    ['status=scheduled,expired,canceled, a month', `status=scheduled,expired,canceled&startDate=${day(40)}`],
    ['no filter (newest first)', ''],
    ['orderField=updatedAt', 'orderField=updatedAt'],
    ['clientReference', `clientReference=ref-main-${total - (total % 2) - 1_000}`],
  ]
  console.log(
    `GET /messages take=100 over ${millions(total)} messages of one key (~${perDay.toLocaleString('en-US')} a day), ${samples} samples each side:`,
  )
  for (const [name, filter] of cases) {
    const url = `${address}/api/third-party/messages?take=100${filter ? `&${filter}` : ''}`
    const check = await http.get(url, headers)
    if (check.status !== 200) throw new Error(`${url}: ${check.status} ${check.body}`)
    const body = JSON.parse(check.body) as { data: unknown[]; itemCount: number; itemCountExact: boolean }
    // The baseline is what the route does after validation: the same window, the same function.
    const query = parseQuery(filter)
    const window = acceptedWindow(bound(query.startDate), bound(query.endDate))
    const { figure, baseline, medians } = await pairedP95(
      () => http.get(url, headers),
      () => listMessages(direct.db, world.apiKeyId as string, query, window),
      samples,
    )
    const count = `${body.itemCount.toLocaleString('en-US')}${body.itemCountExact ? '' : '+'}`
    printComparison({
      name: `  ${name} [${body.data.length} of ${count}] p95`,
      figure,
      baseline,
      unit: 'ms',
      better: 'lower',
      aim: 'ratio ≤ 1.5, p95 ≤ 25 ms',
    })
    console.log(`    medians ${medians.figure.toFixed(2)} ms vs ${medians.baseline.toFixed(2)} ms`)
    const plans = await pairedP95(
      () => listMessages(direct.db, world.apiKeyId as string, query, window),
      () => listMessages(planned.db, world.apiKeyId as string, query, window),
      samples,
    )
    printComparison({
      name: `  ${name}: one plan per statement, p95 against Postgres' choice`,
      figure: plans.figure,
      baseline: plans.baseline,
      unit: 'ms',
      better: 'lower',
    })
  }
} finally {
  http.close()
  await app.close()
  await direct.close()
  await planned.close()
  if (process.env.BENCH_KEEP_DB || process.env.BENCH_REUSE_DB) console.log(`kept ${world.databaseUrl}`)
  else if ('drop' in world) await world.drop()
  // A reused database's run makes its queues' keys under its own prefix: none outlives the run.
  if (!('drop' in world)) await deleteKeysUnder(config.REDIS_URL, world.queuePrefix)
}

/** The query the route sees for `filter` after validation (defaults applied, lists split). */
function parseQuery(filter: string): MessageListQuery {
  const query: MessageListQuery = { order: 'DESC', page: 1, take: 100, orderField: 'createdAt' }
  for (const [name, value] of new URLSearchParams(filter)) {
    if (name === 'status') query.status = value.split(',') as MessageListQuery['status']
    else if (name === 'orderField') query.orderField = value as MessageListQuery['orderField']
    else Object.assign(query, { [name]: value })
  }
  return query
}

function bound(value: string | undefined) {
  return value === undefined ? undefined : parseTimeBound(value)
}
