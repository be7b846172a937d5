/**
 * Message search benchmark (issue 24: "p95 ≤ 300 ms for a phone or clientReference search over
 * 10,000,000 messages"). Fills MESSAGE_SEARCH_ROWS messages (default 10,000,000) over
 * MESSAGE_SEARCH_KEYS keys (1,000: one busy key with 30 % of them, the rest spread evenly), then
 * measures p50/p95 of the searches an admin console makes, through HTTP against the route's own
 * query function called straight through the driver (the raw query, same run, sampled alternately):
 *
 * - `GET /api/admin/messages?phone=…` and `?clientReference=…` across every key (no `apiKeyId`);
 * - `GET /api/third-party/messages?phone=…` and `?clientReference=…`, the busy key's own list;
 * - `q=<a client reference>` on both, what one pastes into a search box;
 *
 * each for random existing values and for values that match nothing, with the list's defaults
 * (`order=DESC`, `orderField=createdAt`, the page and its bounded count), `take=100`. Then the plan
 * of each statement (page and count: the indexes read, the time) from `EXPLAIN ANALYZE`.
 *
 * Then what the console's other pages ask (issue 45: every page ≤ 1 s at 10 M messages): each list
 * opened without a search (the admin's Messages, the portal's), filtered by status or error code
 * over the last 7 days, by key, by channel or fallback (the lists that probe `message_fallbacks`
 * per row); and the overview's chart for each range (1 h, 24 h, 7 d), through its query function
 * (`messagesPerMinute`: the route keeps its answer 5 s, so HTTP would time its cache) alternated
 * with the statement it sent before (`FORMER_CHART`, the same answers required), with both plans.
 *
 *   pnpm --filter @dispatch/bench bench:message-search
 *   MESSAGE_SEARCH_ROWS=1000000 BENCH_SAMPLES=200 BENCH_KEEP_DB=1 (all optional)
 *
 * Runs in a database of its own, dropped at the end. BENCH_KEEP_DB=1 keeps it (to look at plans);
 * BENCH_REUSE_DB=<its url> measures over it again without generating (MESSAGE_SEARCH_ROWS and
 * MESSAGE_SEARCH_KEYS must be those it was generated with).
 */

import {
  type AdminMessageListQuery,
  type MessageListQuery,
  OVERVIEW_RANGES,
  type OverviewRange,
} from '@dispatch/contracts'
import { createDb, generateApiKey, listAdminMessages, listMessages, messagesPerMinute } from '@dispatch/db'
import postgres from 'postgres'
import { millions } from '../harness/format.ts'
import { keepAliveGet } from '../harness/http.ts'
import { printComparison } from '../harness/report.ts'
import { median, p95 } from '../harness/stats.ts'
import { listenSearchApi, prepareSearchWorld, searchMessages } from './message-search-generate.ts'

const layout = searchMessages()
const { total, keyOf, phoneOf, referenceOf } = layout
const samples = Number(process.env.BENCH_SAMPLES ?? 300)
const AIM_MS = 300
/** A console page's aim (issue 45): each of its reads answers within a second. */
const PAGE_AIM_MS = 1000
const world = await prepareSearchWorld('message_search', layout)
const sql = postgres(world.databaseUrl, { max: 1, onnotice: () => {} })
const [busy] = await sql<{ id: string }[]>`select md5('search-key-0')::uuid::text as id`
const busyKeyId = busy?.id as string
// A fresh key value for the busy key (only its hash is stored, so a kept database needs one too).
const { key, keyHash, keyPrefix } = generateApiKey('development')
await sql`update api_keys set key_hash = ${keyHash}, key_prefix = ${keyPrefix} where id = ${busyKeyId}`
const [indexList] = await sql<{ names: string }[]>`
  select string_agg(indexname, ', ' order by indexname) as names from pg_indexes where tablename = 'messages'`
console.log(`indexes on messages: ${indexList?.names}`)

const adminToken = 'bench-search-admin-token'
const { app, config, address } = await listenSearchApi(world, adminToken)
// Three connections: the overview's 7-day chart counts three spans at once (`messagesPerMinute`).
const direct = createDb(world.databaseUrl, { max: 3 })
const http = keepAliveGet()

/** Random messages (1…total), optionally only the busy key's, or only those with a reference. */
function draw(count: number, accept: (i: number) => boolean) {
  const found: number[] = []
  while (found.length < count) {
    const i = 1 + Math.floor(Math.random() * total)
    if (accept(i)) found.push(i)
  }
  return found
}
const withReference = (i: number) => i % 2 === 0
const ofBusyKey = (i: number) => keyOf(i) === 0
const absent = (n: number) => Array.from({ length: n }, (_, j) => `ref-none-${j}-${Math.random()}`)
const n = samples + 30

interface Shape {
  name: string
  scope: 'admin' | 'key'
  /** The query string's filters for one of `values`. */
  params: (value: string) => Record<string, string>
  values: string[]
  aim: number
}
const search =
  (param: 'phone' | 'clientReference' | 'q') =>
  (value: string): Record<string, string> => ({ [param]: value })
const sevenDaysAgo = new Date(Date.now() - 7 * 86_400_000).toISOString()
/** A page opened with these filters: one "value", the filters fixed. */
const page = (name: string, scope: Shape['scope'], filters: Record<string, string>): Shape => ({
  name,
  scope,
  params: () => filters,
  values: ['-'],
  aim: PAGE_AIM_MS,
})
const shapes: Shape[] = [
  {
    name: 'admin, phone',
    scope: 'admin',
    params: search('phone'),
    values: draw(n, () => true).map(phoneOf),
    aim: AIM_MS,
  },
  {
    name: 'admin, phone (none)',
    scope: 'admin',
    params: search('phone'),
    values: ['+5521999999999'],
    aim: AIM_MS,
  },
  {
    name: 'admin, clientReference',
    scope: 'admin',
    params: search('clientReference'),
    values: draw(n, withReference).map(referenceOf),
    aim: AIM_MS,
  },
  {
    name: 'admin, clientReference (none)',
    scope: 'admin',
    params: search('clientReference'),
    values: absent(n),
    aim: AIM_MS,
  },
  {
    name: 'admin, q=<reference>',
    scope: 'admin',
    params: search('q'),
    values: draw(n, withReference).map(referenceOf),
    aim: AIM_MS,
  },
  {
    name: 'key, phone',
    scope: 'key',
    params: search('phone'),
    values: draw(n, ofBusyKey).map(phoneOf),
    aim: AIM_MS,
  },
  {
    name: 'key, phone (none)',
    scope: 'key',
    params: search('phone'),
    values: ['+5521999999999'],
    aim: AIM_MS,
  },
  {
    name: 'key, clientReference',
    scope: 'key',
    params: search('clientReference'),
    values: draw(n, (i) => ofBusyKey(i) && withReference(i)).map(referenceOf),
    aim: AIM_MS,
  },
  {
    name: 'key, clientReference (none)',
    scope: 'key',
    params: search('clientReference'),
    values: absent(n),
    aim: AIM_MS,
  },
  {
    name: 'key, q=<reference>',
    scope: 'key',
    params: search('q'),
    values: draw(n, (i) => ofBusyKey(i) && withReference(i)).map(referenceOf),
    aim: AIM_MS,
  },
  // The console's pages as they open, and their filters over the overview's longest range.
  page('admin, newest (the Messages page)', 'admin', {}),
  page('admin, status=failed, last 7 d', 'admin', { status: 'failed', startDate: sevenDaysAgo }),
  page('admin, errorCode=131026', 'admin', { errorCode: '131026' }),
  page('admin, one key (the busy one)', 'admin', { apiKeyId: '' }),
  page('key, newest (the portal)', 'key', {}),
  page('key, status=failed, last 7 d', 'key', { status: 'failed', startDate: sevenDaysAgo }),
  // The lists that keep nearly every message and probe message_fallbacks per row (issue 44).
  page('key, channel=whatsapp', 'key', { channel: 'whatsapp' }),
  page('key, fallback=none', 'key', { fallback: 'none' }),
  page('admin, channel=whatsapp', 'admin', { channel: 'whatsapp' }),
]

/** What the route's query function gets after validation: the list's defaults, the one filter. */
const paramsOf = (shape: Shape, value: string) => {
  const params = shape.params(value)
  // The busy key's id is known once the database is: filled in here.
  return 'apiKeyId' in params ? { ...params, apiKeyId: busyKeyId } : params
}
const queryOf = (shape: Shape, value: string) => {
  const { status, fallback, ...rest } = paramsOf(shape, value)
  return {
    order: 'DESC',
    page: 1,
    take: 100,
    orderField: 'createdAt',
    ...rest,
    ...(status ? { status: [status] } : {}),
    ...(fallback ? { fallback: [fallback] } : {}),
  } as MessageListQuery & AdminMessageListQuery
}
const urlOf = (shape: Shape, value: string) =>
  `${address}/api/${shape.scope === 'admin' ? 'admin' : 'third-party'}/messages?${new URLSearchParams({ take: '100', ...paramsOf(shape, value) })}`
const headersOf = (shape: Shape): Record<string, string> =>
  shape.scope === 'admin' ? { authorization: `Bearer ${adminToken}` } : { 'x-api-key': key }
const runQuery = (db: typeof direct.db, shape: Shape, value: string) =>
  shape.scope === 'admin'
    ? listAdminMessages(db, queryOf(shape, value))
    : listMessages(db, busyKeyId, queryOf(shape, value))

async function httpSearch(shape: Shape, value: string) {
  const response = await http.get(urlOf(shape, value), headersOf(shape))
  if (response.status !== 200) throw new Error(`${shape.name}: ${response.status} ${response.body}`)
  return JSON.parse(response.body) as { data: unknown[]; itemCount: number; itemCountExact: boolean }
}

/** p50/p95 of both sides, alternating which goes first; both walk the same values in the same order. */
async function measure(shape: Shape) {
  const at = (j: number) => shape.values[j % shape.values.length] as string
  const times = { http: [] as number[], sql: [] as number[] }
  let found = 0
  for (let j = 0; j < n; j++) {
    const value = at(j)
    const sides = [
      async () => {
        const started = performance.now()
        const body = await httpSearch(shape, value)
        if (j >= 30) times.http.push(performance.now() - started)
        found += body.data.length > 0 ? 1 : 0
      },
      async () => {
        const started = performance.now()
        await runQuery(direct.db, shape, value)
        if (j >= 30) times.sql.push(performance.now() - started)
      },
    ]
    if (j % 2) sides.reverse()
    for (const side of sides) await side()
  }
  return {
    http: { p50: median(times.http), p95: p95(times.http) },
    sql: { p50: median(times.sql), p95: p95(times.sql) },
    found,
  }
}

/**
 * The statements the query function sends for one value (the page and its count), caught on a
 * connection of their own, then each run under `EXPLAIN (ANALYZE, BUFFERS)`: the indexes it reads,
 * its time, its buffers read from outside shared_buffers.
 */
const plans = createDb(world.databaseUrl, { max: 1 })
const caught: { text: string; params: unknown[] }[] = []
const unsafe = plans.sql.unsafe.bind(plans.sql)
Object.assign(plans.sql, {
  unsafe: (text: string, params?: unknown[], options?: object) => {
    caught.push({ text, params: params ?? [] })
    return unsafe(text, params as never, options as never)
  },
})

interface PlanNode {
  'Node Type': string
  'Index Name'?: string
  'Relation Name'?: string
  'Total Cost'?: number
  Strategy?: string
  'Actual Rows'?: number
  'Actual Loops'?: number
  'Exact Heap Blocks'?: number
  'Lossy Heap Blocks'?: number
  'Shared Hit Blocks'?: number
  'Shared Read Blocks'?: number
  'Temp Written Blocks'?: number
  'Sort Method'?: string
  'Sort Space Type'?: string
  'Sort Space Used'?: number
  'Workers Launched'?: number
  Workers?: { 'Sort Method'?: string; 'Sort Space Type'?: string; 'Sort Space Used'?: number }[]
  Plans?: PlanNode[]
}

/**
 * What the overview's chart read and did, from its plan (`EXPLAIN (ANALYZE, BUFFERS)`): the messages
 * read (rows, heap pages, pages found in shared buffers against read from the OS), the groups the
 * first step folded them into, how each sort ran (in memory or spilled to disk: `work_mem`), and the
 * parallel workers. The figures a 10 M run must report beside its times (docs/benchmarks-paths.md).
 */
function overviewFacts(top: PlanNode): string {
  let rows = 0
  let heapPages = 0
  let workers = 0
  const sorts: string[] = []
  const hasMessages = (node: PlanNode): boolean =>
    Boolean(node['Relation Name']?.startsWith('messages')) || (node.Plans ?? []).some(hasMessages)
  const walk = (node: PlanNode) => {
    if (node['Relation Name']?.startsWith('messages'))
      rows += (node['Actual Rows'] ?? 0) * (node['Actual Loops'] ?? 1)
    heapPages += (node['Exact Heap Blocks'] ?? 0) + (node['Lossy Heap Blocks'] ?? 0)
    workers += node['Workers Launched'] ?? 0
    if (node['Node Type'] === 'Sort') {
      const each = [node, ...(node.Workers ?? [])].filter((w) => w['Sort Method'])
      sorts.push(
        each.map((w) => `${w['Sort Method']} ${w['Sort Space Used']} kB ${w['Sort Space Type']}`).join(' / '),
      )
    }
    for (const child of node.Plans ?? []) walk(child)
  }
  walk(top)
  // The fold: the deepest aggregate over the messages (its output rows are the groups).
  const fold = (node: PlanNode): PlanNode | undefined =>
    (node.Plans ?? []).map(fold).find((found) => found !== undefined) ??
    (node['Node Type'] === 'Aggregate' && node.Plans?.some(hasMessages) ? node : undefined)
  const folded = fold(top)
  return [
    `${rows.toLocaleString('en-US')} messages read`,
    `${heapPages.toLocaleString('en-US')} heap pages`,
    `buffers ${top['Shared Hit Blocks'] ?? 0} hit / ${top['Shared Read Blocks'] ?? 0} read / ${top['Temp Written Blocks'] ?? 0} temp written`,
    `folded into ${folded?.['Actual Rows'] ?? '?'} groups (${folded?.Strategy ?? '?'})`,
    `sorts: ${sorts.join('; ') || 'none'}`,
    `${workers} parallel workers`,
  ].join(', ')
}
const nodesOf = (node: PlanNode): string[] => [
  ...(node['Index Name']
    ? [`${node['Node Type']} ${node['Index Name']}`]
    : node['Relation Name']
      ? [`${node['Node Type']} ${node['Relation Name']}`]
      : []),
  ...(node.Plans ?? []).flatMap(nodesOf),
]

async function explain(shape: Shape) {
  caught.length = 0
  await runQuery(plans.db, shape, shape.values[0] as string)
  const statements = [...caught]
  const lines: string[] = []
  for (const { text, params } of statements) {
    const [row] = await unsafe(`explain (analyze, buffers, format json) ${text}`, params as never)
    const [plan] = (row as unknown as { 'QUERY PLAN': [{ Plan: PlanNode; 'Execution Time': number }] })[
      'QUERY PLAN'
    ]
    const kind = /count\(\*\)/.test(text) ? 'count' : 'page'
    lines.push(`${kind}: ${nodesOf(plan.Plan).join(' → ')} (${plan['Execution Time'].toFixed(1)} ms)`)
  }
  return lines
}

/**
 * The overview's chart as `messagesPerMinute` read it until issue 45's 10 M run (its baseline here):
 * the range's messages grouped by their seven status buckets, sorted on all seven to do so (the
 * planner, with no statistics on the expressions, expects a group per message), then spread into
 * (bucket, status) pairs; JIT as the server has it. Sent as drizzle sent it (prepared).
 */
const FORMER_CHART = `select t.minute, t.status, sum(g.n)::text as count
  from (
    select ${[
      ['queued', 'accepted_at'],
      ['sent', 'sent_at'],
      ['delivered', 'delivered_at'],
      ['read', 'read_at'],
      ['failed', 'failed_at'],
      ['expired', 'expired_at'],
      ['canceled', 'canceled_at'],
    ]
      .map(
        ([status, column]) =>
          `case when m.${column} >= $1::timestamptz then date_bin($3::interval, m.${column}, timestamptz 'epoch') end as ${status}`,
      )
      .join(', ')}, count(*) as n
    from messages m
    where m.accepted_at >= $2::timestamptz
    group by 1, 2, 3, 4, 5, 6, 7
  ) g
  cross join lateral (values ('queued', g.queued), ('sent', g.sent), ('delivered', g.delivered), ('read', g.read),
    ('failed', g.failed), ('expired', g.expired), ('canceled', g.canceled)) as t(status, minute)
  where t.minute is not null
  group by 1, 2
  order by 1`
const formerChart = async (since: Date, acceptedSince: Date, bucketSeconds: number) => {
  const rows = await direct.sql.unsafe<{ minute: Date; status: string; count: string }[]>(
    FORMER_CHART,
    [since.toISOString(), acceptedSince.toISOString(), `${bucketSeconds} seconds`],
    { prepare: true },
  )
  return rows.map((row) => ({ minute: new Date(row.minute), status: row.status, count: Number(row.count) }))
}
/** A chart's rows in one order, to compare two answers. */
const chartKey = (rows: { minute: Date; status: string; count: number }[]) =>
  rows
    .map((row) => `${row.minute.toISOString()} ${row.status} ${row.count}`)
    .sort()
    .join('\n')

type ExplainRow = {
  'QUERY PLAN': [
    { Plan: PlanNode; 'Execution Time': number; JIT?: { Functions: number; Timing: { Total: number } } },
  ]
}
/**
 * A statement's plan as it runs: `EXPLAIN (ANALYZE, BUFFERS)` in a transaction of its own after the
 * settings its function sets there (`set local …`), JIT as the server has it otherwise.
 */
async function explainChart(text: string, params: unknown[], settings: string[]) {
  const [row] = await plans.sql.begin(async (tx) => {
    for (const setting of settings) await tx.unsafe(setting)
    return tx.unsafe(`explain (analyze, buffers, format json) ${text}`, params as never)
  })
  const [tree] = (row as unknown as ExplainRow)['QUERY PLAN']
  // JIT compiles a plan costed past jit_above_cost (inlines and optimises past 500,000): its
  // time is part of the execution time.
  const jit = tree.JIT
    ? `JIT: ${tree.JIT.Functions} functions, ${tree.JIT.Timing.Total.toFixed(1)} ms`
    : 'no JIT'
  return [
    `${nodesOf(tree.Plan).join(' → ')} (${tree['Execution Time'].toFixed(1)} ms)`,
    `${overviewFacts(tree.Plan)}, plan cost ${tree.Plan['Total Cost']}, ${jit}`,
  ]
}

/**
 * The overview's chart for each range, as the route computes it (its first bucket whole; the messages
 * read accepted at most a validity before), through its query function, alternated with the former
 * statement (`FORMER_CHART`) over the same windows; both answers must be the same. Then both plans.
 */
async function measureOverview(rows: string[]) {
  const overviewSamples = Math.max(10, Math.floor(samples / 10))
  console.log(
    `the overview's chart, ${overviewSamples} samples a range (its query function vs the former statement, alternated):`,
  )
  for (const range of Object.keys(OVERVIEW_RANGES) as OverviewRange[]) {
    const { bucketSeconds, spanSeconds } = OVERVIEW_RANGES[range]
    const window = () => {
      const now = Date.now()
      const since = new Date(
        Math.floor((now - spanSeconds * 1000) / (bucketSeconds * 1000)) * bucketSeconds * 1000,
      )
      return {
        since,
        acceptedSince: new Date(since.getTime() - config.MESSAGE_VALIDITY_SECONDS * 1000),
        until: new Date(now),
      }
    }
    const times = { now: [] as number[], former: [] as number[] }
    let buckets = 0
    let differing = 0
    for (let j = 0; j < overviewSamples + 3; j++) {
      const { since, acceptedSince, until } = window()
      const answers: Record<string, string> = {}
      const sides = [
        async () => {
          const started = performance.now()
          const found = await messagesPerMinute(direct.db, since, acceptedSince, bucketSeconds, { until })
          if (j >= 3) times.now.push(performance.now() - started)
          buckets = found.length
          answers.now = chartKey(found)
        },
        async () => {
          const started = performance.now()
          const found = await formerChart(since, acceptedSince, bucketSeconds)
          if (j >= 3) times.former.push(performance.now() - started)
          answers.former = chartKey(found)
        },
      ]
      if (j % 2) sides.reverse()
      for (const side of sides) await side()
      if (answers.now !== answers.former) differing++
    }
    if (differing > 0)
      throw new Error(`overview, ${range}: ${differing} answers differ from the former statement's`)
    // Its statements, caught as sent, explained on the same settings.
    const statements: { text: string; params: unknown[] }[] = []
    const catching = createDb(world.databaseUrl, {
      max: 1,
      onStatement: (text, params) => statements.push({ text, params }),
    })
    const { since, acceptedSince, until } = window()
    await messagesPerMinute(catching.db, since, acceptedSince, bucketSeconds, { until })
    await catching.close()
    const settings = [
      ...new Set(statements.filter(({ text }) => /^\s*set local /i.test(text)).map(({ text }) => text)),
    ]
    const chart = statements.filter(({ text }) => /from messages m/.test(text))
    const p = { p50: median(times.now), p95: p95(times.now) }
    const former = { p50: median(times.former), p95: p95(times.former) }
    const met = p.p95 <= PAGE_AIM_MS ? 'yes' : 'NO'
    printComparison({
      name: `  overview, ${range} p95 vs the former statement [${buckets} (bucket, status) rows, the same answers]`,
      figure: p.p95,
      baseline: former.p95,
      unit: 'ms',
      better: 'lower',
      aim: `p95 ≤ ${PAGE_AIM_MS} ms`,
    })
    console.log(`    p50 ${ms(p.p50)} vs ${ms(former.p50)} ms (aim p95 ≤ ${PAGE_AIM_MS} ms: ${met})`)
    for (const { text, params } of chart)
      for (const line of await explainChart(text, params, settings)) console.log(`    now: ${line}`)
    const formerParams = [since.toISOString(), acceptedSince.toISOString(), `${bucketSeconds} seconds`]
    for (const line of await explainChart(FORMER_CHART, formerParams, [])) console.log(`    former: ${line}`)
    rows.push(
      `| overview, ${range} (query; former statement ${ms(former.p50)} / ${ms(former.p95)}) | – | – | ${ms(p.p50)} | ${ms(p.p95)} | ${(p.p95 / former.p95).toFixed(2)} | ≤ ${PAGE_AIM_MS}: ${met} |`,
    )
  }
}

const ms = (v: number) => v.toLocaleString('en-US', { maximumFractionDigits: 1, minimumFractionDigits: 1 })
const rows: string[] = []
try {
  console.log(
    `searches, take=100, over ${millions(total)} messages (busy key ~${millions(total * 0.3)}), ${samples} samples each side (random values; "none" matches nothing):`,
  )
  for (const shape of shapes) {
    const sample = await httpSearch(shape, shape.values[0] as string)
    const result = await measure(shape)
    const ratio = result.http.p95 / result.sql.p95
    const met = result.http.p95 <= shape.aim ? 'yes' : 'NO'
    const count = `${sample.itemCount.toLocaleString('en-US')}${sample.itemCountExact ? '' : '+'}`
    printComparison({
      name: `  ${shape.name} p95 vs the raw query [e.g. ${sample.data.length} of ${count}; ${result.found}/${n} found some]`,
      figure: result.http.p95,
      baseline: result.sql.p95,
      unit: 'ms',
      better: 'lower',
      aim: `p95 ≤ ${shape.aim} ms`,
    })
    console.log(
      `    p50 ${ms(result.http.p50)} vs ${ms(result.sql.p50)} ms (aim p95 ≤ ${shape.aim} ms: ${met})`,
    )
    for (const line of await explain(shape)) console.log(`    ${line}`)
    rows.push(
      `| ${shape.name} | ${ms(result.http.p50)} | ${ms(result.http.p95)} | ${ms(result.sql.p50)} | ${ms(result.sql.p95)} | ${ratio.toFixed(2)} | ≤ ${shape.aim}: ${met} |`,
    )
  }
  await measureOverview(rows)
  console.log(
    '\n| Search | HTTP p50 ms | HTTP p95 ms | raw query p50 ms | raw query p95 ms | p95 ratio | p95 within its aim (ms) |',
  )
  console.log('|---|---|---|---|---|---|---|')
  for (const row of rows) console.log(row)
} finally {
  http.close()
  await app.close()
  await direct.close()
  await plans.close()
  await sql.end()
  if (process.env.BENCH_KEEP_DB || process.env.BENCH_REUSE_DB) console.log(`kept ${world.databaseUrl}`)
  else if ('drop' in world) await world.drop()
}
