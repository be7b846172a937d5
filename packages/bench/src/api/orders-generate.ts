import { Scopes } from '@dispatch/contracts'
import { generateApiKey } from '@dispatch/db'
import type postgres from 'postgres'

export const BENCH_TENANT = 'bench'
const PROJECTS = 50
const BATCH = 100_000

/** The catalog the generated orders hang off. */
export async function seedBenchCatalog(sql: postgres.Sql) {
  const [channel] = await sql`
    insert into channels (name, timeline) values ('Bench channel', 'RESEARCH') returning id`
  await sql`
    insert into projects (tenant_id, channel_id, name)
    select ${BENCH_TENANT}, ${channel?.id}, 'Bench project ' || i from generate_series(1, ${PROJECTS}) i`
  await sql`
    insert into products (tenant_id, channel_id, name, stock, price, product_type)
    values (${BENCH_TENANT}, ${channel?.id}, 'Bench kit', 2000000000, 4900, 'KIT'),
           (${BENCH_TENANT}, ${channel?.id}, 'Bench probiotic', 2000000000, 2900, 'PROBIOTIC')`
  return loadBenchCatalog(sql)
}

/** The bench catalog of a (possibly kept) database, and a fresh approved key for its tenant. */
export async function loadBenchCatalog(sql: postgres.Sql) {
  const [channel] = await sql`select id from channels where name = 'Bench channel'`
  const projects = await sql`select id from projects where tenant_id = ${BENCH_TENANT} order by display_id`
  const products = await sql`select id from products where tenant_id = ${BENCH_TENANT} order by display_id`
  const { key, keyHash, keyPrefix } = generateApiKey('development')
  const [apiKey] = await sql`
    insert into api_keys (key_hash, key_prefix, environment, client_name, email, scopes, tenant_id, status)
    values (${keyHash}, ${keyPrefix}, 'development', 'bench', 'bench@dispatch.local',
            ${sql.array(Object.values(Scopes))}, ${BENCH_TENANT}, 'approved')
    returning id`
  return {
    key,
    apiKeyId: apiKey?.id as string,
    channelId: channel?.id as string,
    projectIds: projects.map((p) => p.id as string),
    kitId: products[0]?.id as string,
    probioticId: products[1]?.id as string,
  }
}

type Catalog = Awaited<ReturnType<typeof loadBenchCatalog>>

/**
 * Fills the bench tenant with `total` orders, set-based: one INSERT … SELECT generate_series per
 * batch writes the orders, their items (a kit for each, a probiotic for every third) and one kit
 * record per kit item. Orders spread over two years ending today; each has an invoice number.
 * The trigram index is built once at the end, which is far cheaper than maintaining it per row.
 */
export async function generateOrders(sql: postgres.Sql, catalog: Catalog, total: number) {
  const started = performance.now()
  await sql`drop index if exists orders_search_trgm_idx`
  for (let lo = 1; lo <= total; lo += BATCH) {
    const hi = Math.min(total, lo + BATCH - 1)
    await sql`
      with src as (
        select i, gen_random_uuid() as order_id, gen_random_uuid() as kit_item_id,
               gen_random_uuid() as probiotic_item_id,
               (${sql.array(catalog.projectIds)}::uuid[])[1 + i % ${catalog.projectIds.length}] as project_id,
               current_date - (730 - (i::bigint * 730 / ${total}))::int as ordered_at
        from generate_series(${lo}::int, ${hi}::int) i
      ), o as (
        insert into orders (id, tenant_id, user_id, channel_id, project_id, ordered_at, total, invoice_no,
                            partner_name, created_at, updated_at)
        select order_id, ${BENCH_TENANT}, ${catalog.apiKeyId}, ${catalog.channelId}, project_id, ordered_at,
               case when i % 3 = 0 then 7800 else 4900 end, 'INV-' || lpad(i::text, 7, '0'),
               'Partner ' || (i % 1000), ordered_at + make_interval(secs => i % 86400), now()
        from src
      ), items as (
        insert into order_items (id, order_id, product_id, quantity, price)
        select kit_item_id, order_id, ${catalog.kitId}::uuid, 1, 4900 from src
        union all
        select probiotic_item_id, order_id, ${catalog.probioticId}::uuid, 1, 2900 from src where i % 3 = 0
      )
      insert into kits (serial, tenant_id, order_id, order_item_id, project_id, created_at)
      select 'BENCH-' || lpad(i::text, 8, '0'), ${BENCH_TENANT}, order_id, kit_item_id, project_id, now() from src`
    const seconds = (performance.now() - started) / 1000
    console.log(
      `  ${hi.toLocaleString('en-US')} / ${total.toLocaleString('en-US')} orders (${seconds.toFixed(0)} s)`,
    )
  }
  console.log('  building the trigram index for q …')
  await sql`create index orders_search_trgm_idx on orders using gin (search_text gin_trgm_ops)`
  console.log('  vacuum analyze …')
  await sql`vacuum analyze orders, order_items, kits, products, projects, channels`
  console.log(`  generated in ${((performance.now() - started) / 1000).toFixed(0)} s`)
}
