/**
 * Orders benchmark: fills a tenant with BENCH_ORDERS orders (default 1,000,000), then measures
 * GET /orders (take=100 with a project filter, a date range, a q search) and GET /orders/:id p95
 * against the same query functions called straight through the driver, and order creation
 * throughput with 10 concurrent clients against the same creation function called directly.
 *
 *   pnpm --filter @dispatch/bench bench:orders
 *   BENCH_ORDERS=100000 BENCH_SAMPLES=300 BENCH_DURATION_S=10 BENCH_KEEP_DB=1 (all optional)
 *
 * Runs in a database of its own, dropped at the end. BENCH_KEEP_DB=1 keeps it (to look at
 * plans); BENCH_REUSE_DB=<its url> measures over it again without generating.
 */
import { randomBytes } from 'node:crypto'
import { buildApp, createDeps, createLogger, parseApiConfig } from '@dispatch/api'
import type { OrderListQuery } from '@dispatch/contracts'
import { createDb, createOrder, findOrder, listOrders } from '@dispatch/db'
import { ensureDatabase, migrateDatabase } from '@dispatch/db/migrate'
import { deleteKeysUnder } from '@dispatch/testing'
import postgres from 'postgres'
import { keepAliveGet } from '../harness/http.ts'
import { printComparison } from '../harness/report.ts'
import { pairedP95 } from '../harness/stats.ts'
import { BENCH_TENANT, generateOrders, loadBenchCatalog, seedBenchCatalog } from './orders-generate.ts'

const total = Number(process.env.BENCH_ORDERS ?? 1_000_000)
const samples = Number(process.env.BENCH_SAMPLES ?? 300)
const duration = Number(process.env.BENCH_DURATION_S ?? 10)
const clients = 10
const baseUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'

/** `clients` loops creating orders for `duration` seconds; returns orders per second. */
async function throughput(create: () => Promise<void>) {
  const until = performance.now() + duration * 1000
  let done = 0
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (performance.now() < until) {
        await create()
        done++
      }
    }),
  )
  return done / duration
}

async function prepare() {
  const reuse = process.env.BENCH_REUSE_DB
  if (reuse) {
    const sql = postgres(reuse, { max: 1, onnotice: () => {} })
    const catalog = await loadBenchCatalog(sql)
    const [row] = await sql`select count(*)::int as n from orders where tenant_id = ${BENCH_TENANT}`
    await sql.end()
    return { databaseUrl: reuse, catalog, generated: Number(row?.n) }
  }
  const url = new URL(baseUrl)
  url.pathname = `/bench_orders_${randomBytes(3).toString('hex')}`
  const databaseUrl = url.toString()
  await ensureDatabase(databaseUrl)
  await migrateDatabase(databaseUrl)
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} })
  const catalog = await seedBenchCatalog(sql)
  console.log(`generating ${total.toLocaleString('en-US')} orders in ${url.pathname.slice(1)} …`)
  await generateOrders(sql, catalog, total)
  await sql.end()
  return { databaseUrl, catalog, generated: total }
}

async function dropDatabase(databaseUrl: string) {
  const name = new URL(databaseUrl).pathname.slice(1)
  const admin = postgres(baseUrl, { max: 1, onnotice: () => {} })
  await admin.unsafe(`drop database if exists "${name}" with (force)`)
  await admin.end()
}

const { databaseUrl, catalog, generated } = await prepare()
const config = parseApiConfig({
  DATABASE_URL: databaseUrl,
  REDIS_URL: redisUrl,
  QUEUE_PREFIX: new URL(databaseUrl).pathname.slice(1),
  LOG_LEVEL: 'warn',
})
const app = await buildApp(createDeps(config, { logger: createLogger(config) }))
const address = await app.listen({ host: '127.0.0.1', port: 0 })
const direct = createDb(databaseUrl)
const headers = { 'x-api-key': catalog.key }
const project = catalog.projectIds[7] as string
/** Matches ten invoice numbers (INV-xxxxxx0 … INV-xxxxxx9) out of the whole tenant. */
const fragment = `inv-${String(Math.floor(generated / 2))
  .padStart(7, '0')
  .slice(0, 6)}`
const month = new Date(Date.now() - 200 * 86_400_000).toISOString().slice(0, 7)

/** A lean keep-alive GET, so the client's own cost stays out of the figure. */
const http = keepAliveGet()
const httpGet = http.get
try {
  const base: OrderListQuery = { order: 'DESC', page: 1, take: 100, orderField: 'orderedAt' }
  const lists: [string, string, OrderListQuery][] = [
    ['project filter', `projectId=${project}`, { ...base, projectId: project }],
    [
      'date range (one month)',
      `startDate=${month}-01&endDate=${month}-28`,
      { ...base, startDate: `${month}-01`, endDate: `${month}-28` },
    ],
    ['q search (invoice fragment)', `q=${fragment}`, { ...base, q: fragment }],
  ]
  for (const [name, query, parsed] of lists) {
    const url = `${address}/api/third-party/orders?take=100&${query}`
    const check = await httpGet(url, headers)
    if (check.status !== 200) throw new Error(`${url}: ${check.status} ${check.body}`)
    const body = JSON.parse(check.body) as { data: unknown[]; itemCount: number }
    const { figure, baseline } = await pairedP95(
      () => httpGet(url, headers),
      () => listOrders(direct.db, BENCH_TENANT, parsed),
      samples,
    )
    printComparison({
      name: `GET /orders take=100, ${name} [${body.data.length} of ${body.itemCount}] p95`,
      figure,
      baseline,
      unit: 'ms',
      better: 'lower',
      aim: 'ratio ≤ 1.5, p95 ≤ 25 ms',
    })
  }

  const [one] = (await listOrders(direct.db, BENCH_TENANT, { ...base, take: 1, page: 5000 })).items
  const oneUrl = `${address}/api/third-party/orders/${one?.id}`
  const single = await pairedP95(
    () => httpGet(oneUrl, headers),
    () => findOrder(direct.db, BENCH_TENANT, one?.id as string),
    samples,
  )
  printComparison({
    name: 'GET /orders/:orderId p95',
    figure: single.figure,
    baseline: single.baseline,
    unit: 'ms',
    better: 'lower',
    aim: 'p95 ≤ 5 ms',
  })

  let serial = 0
  const body = () => ({
    order: { projectId: project, channelId: catalog.channelId, invoiceNo: 'BENCH-NEW' },
    orderItems: [
      { productId: catalog.kitId, price: 4900, quantity: 1, kitSerials: [`NEW-${process.pid}-${++serial}`] },
      { productId: catalog.probioticId, price: 2900, quantity: 2, kitSerials: [] },
    ],
  })
  const viaApi = await throughput(async () => {
    const res = await fetch(`${address}/api/third-party/orders`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify(body()),
    })
    if (res.status !== 201) throw new Error(`POST /orders: ${res.status} ${await res.text()}`)
    await res.arrayBuffer()
  })
  const viaDriver = await throughput(async () => {
    await createOrder(direct.db, {
      tenantId: BENCH_TENANT,
      apiKeyId: catalog.apiKeyId,
      body: body(),
      now: new Date(),
      bmeEmail: 'bme@dispatch.local',
    })
  })
  printComparison({
    name: `POST /orders, ${clients} concurrent clients`,
    figure: viaApi,
    baseline: viaDriver,
    unit: 'orders/s',
    better: 'higher',
    aim: 'ratio near 1',
  })
} finally {
  http.close()
  await app.close()
  await direct.close()
  if (process.env.BENCH_KEEP_DB || process.env.BENCH_REUSE_DB) console.log(`kept ${databaseUrl}`)
  else {
    await dropDatabase(databaseUrl)
    await deleteKeysUnder(redisUrl, config.QUEUE_PREFIX) // the queues' meta keys the API made
  }
}
