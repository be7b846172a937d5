/**
 * Writes per message (issue 46): the WAL and the table and index bytes one message costs Postgres,
 * as the service writes it, with the indexes of migration 0028 (`before`), of the latest migration
 * (`after`), and with the primary key alone (`pk`, the floor), in one run: three databases of the
 * benchmark's own, written in turns (ROUNDS rounds of N / ROUNDS messages each), so other traffic on
 * the server (WAL is the server's, not a database's) falls on every variant alike.
 *
 * A message, as it is written in production:
 * 1. the worker's record (`recordDeliveryOutcomes`, batches of 500: the row inserted `sent`, with
 *    its platform id, the phone, a client reference on every other one, a batch on one in ten);
 * 2. the platform's statuses, 4 at a time, as the status webhook applies them: the `sent` echo's
 *    pricing for every message (`recordMessagePricing`: the status itself changes nothing, the row
 *    is `sent` already), then `delivered` for every message and `read` for 55 % of them
 *    (`applyPlatformStatus`). With the primary key alone a status cannot find its message by
 *    platform id, so `pk` applies the same changes by (id, accepted_at) instead.
 * 3. with WAL_WEBHOOKS=1 (default), `before` and `after` again with a webhook endpoint on the key:
 *    the triggers write an event and an outbox row per status, and the relay marks them dispatched
 *    (`relayOutbox`): webhook_events and outbox writes included (not for `pk`: the trigger's
 *    sequence lookup needs its index).
 *
 * `0034` is the latest migration with 0040 undone: the platform id itself indexed (~55 random
 * characters, as the platform's are) instead of its 8-byte hash.
 *
 * Autovacuum is off on the tables measured, so each variant keeps its dead entries alike. Per
 * variant also the updates of `messages`' partitions and how many were HOT (`n_tup_hot_upd`: no
 * index entry written): `0030` is the latest indexes with partitions packed full, `after` with the
 * latest migration (0032: room left on each page, fillfactor 90).
 *
 * WAL: the records between pg_current_wal_flush_lsn() before and after each step that touch the
 * variant's database (pg_walinspect), divided by the messages written; the server's whole
 * pg_wal_lsn_diff beside it, which other databases' traffic inflates. A checkpoint starts each
 * variant's round, so each pays its full-page images alike. Bytes: heap, indexes (pg_indexes_size) and total (pg_total_relation_size) over the
 * `messages` partitions at the end, divided by N.
 *
 *   pnpm --filter @dispatch/bench bench:wal
 *   WAL_MESSAGES=20000 WAL_ROUNDS=4 WAL_WEBHOOKS=0 (the defaults but the last; all optional);
 *   WAL_FILLFACTOR=80 sets that fillfactor on `after`'s and `pk`'s partitions instead of the migrations'.
 * About 15 minutes on the 2-core development VM at the defaults.
 */
import { randomBytes } from 'node:crypto'
import type { MessagePricing } from '@dispatch/contracts'
import {
  applyPlatformStatus,
  createDb,
  type DeliveryOutcome,
  recordDeliveryOutcomes,
  recordMessagePricing,
  relayOutbox,
} from '@dispatch/db'
import { ensureDatabase, migrateDatabase } from '@dispatch/db/migrate'
import { messageIdAt } from '@dispatch/runtime'
import postgres from 'postgres'
import { createBenchKey } from '../api/message-list-generate.ts'
import { benchEnv } from '../harness/env.ts'
import { printComparison } from '../harness/report.ts'

const N = Number(process.env.WAL_MESSAGES ?? 20_000)
const ROUNDS = Math.max(1, Number(process.env.WAL_ROUNDS ?? 4))
const WEBHOOKS = process.env.WAL_WEBHOOKS !== '0'
const FILLFACTOR = process.env.WAL_FILLFACTOR ? Number(process.env.WAL_FILLFACTOR) : undefined
if (FILLFACTOR !== undefined && !(Number.isInteger(FILLFACTOR) && FILLFACTOR >= 10 && FILLFACTOR <= 100))
  throw new Error(`WAL_FILLFACTOR must be a whole number from 10 to 100, got ${process.env.WAL_FILLFACTOR}`)
const BEFORE = '0028_tenant_owned_suppressions'
/** The indexes of 0029, the partitions' pages packed full (before 0032 left room on them). */
const PACKED = '0030_messaging_limit'
const PRICING: MessagePricing = { billable: true, pricingModel: 'PMP', category: 'utility', type: 'regular' }
const PER_ROUND = Math.ceil(N / ROUNDS)
const STATUS_CONCURRENCY = 4

interface Variant {
  name: string
  url: string
  db: ReturnType<typeof createDb>
  key: string
  /** Statuses by platform id (the service's way), or by primary key (`pk`). */
  byPlatformId: boolean
  webhooks: boolean
  databaseOid: string
  written: number
  wal: { record: number; statuses: number; relay: number }
  serverWal: number
  /** Updates of `messages`' partitions, and those of them that were HOT (written no index entry). */
  updates: { all: number; hot: number }
}

const { databaseUrl } = benchEnv()
const run = randomBytes(3).toString('hex')
const variants: Variant[] = []

async function createVariant(
  name: string,
  options: { until?: string; pkOnly?: boolean; webhooks?: boolean; textPlatformIndex?: boolean },
) {
  const url = new URL(databaseUrl)
  url.pathname = `/bench_wal_${name.replace(/\W/g, '_')}_${run}`
  await ensureDatabase(url.toString())
  await migrateDatabase(url.toString(), options.until ? { until: options.until } : {})
  const admin = postgres(url.toString(), { max: 1, onnotice: () => {} })
  try {
    if (options.pkOnly) {
      const indexes = await admin<{ name: string }[]>`
        select indexname as name from pg_indexes where schemaname = 'public' and tablename = 'messages'
          and indexname not in (select conname from pg_constraint where conrelid = 'messages'::regclass and contype = 'p')`
      for (const { name: index } of indexes) await admin.unsafe(`drop index "${index}"`)
    }
    if (options.textPlatformIndex) {
      // 0040's one change undone: the platform id itself indexed, not its hash. The service's
      // lookups name the id too (platformIdIs), so they read this index instead.
      await admin`drop index messages_platform_message_id_hash_idx`
      await admin`create index messages_platform_message_id_idx on messages (platform_message_id)
        where platform_message_id is not null`
    }
    await admin`create extension if not exists pg_walinspect`
    // No autovacuum on the tables measured: a vacuum landing in one variant's run and not another's
    // would make its dead entries' space reusable there alone. Every variant keeps them alike.
    const leaves = await admin<{ name: string }[]>`
      select relid::regclass::text as name from pg_partition_tree('messages') where isleaf
      union all select relid::regclass::text from pg_partition_tree('webhook_events') where isleaf
      union all select relid::regclass::text from pg_partition_tree('webhook_attempts') where isleaf
      union all select 'outbox'`
    for (const { name: leaf } of leaves)
      await admin.unsafe(`alter table ${leaf} set (autovacuum_enabled = false)`)
    if (FILLFACTOR !== undefined && !options.until) {
      for (const { name: leaf } of leaves.filter((l) => l.name.startsWith('messages')))
        await admin.unsafe(`alter table ${leaf} set (fillfactor = ${FILLFACTOR})`)
    }
    const [db0] = await admin<
      { oid: string }[]
    >`select oid::text from pg_database where datname = current_database()`
    const key = (await createBenchKey(admin, `wal-${name}`)).id
    if (options.webhooks) {
      await admin`
        insert into webhook_endpoints (api_key_id, url, secret, events)
        values (${key}, 'https://receiver.test/hook', ${`whsec_${randomBytes(16).toString('base64')}`},
          '{message.sent,message.delivered,message.read,message.failed}')`
    }
    variants.push({
      name,
      url: url.toString(),
      db: undefined as unknown as Variant['db'],
      key,
      byPlatformId: !options.pkOnly,
      webhooks: options.webhooks === true,
      databaseOid: db0?.oid as string,
      written: 0,
      wal: { record: 0, statuses: 0, relay: 0 },
      serverWal: 0,
      updates: { all: 0, hot: 0 },
    })
  } finally {
    await admin.end({ timeout: 5 })
  }
}

const lsn = async (v: Variant) =>
  (await v.db.sql<{ lsn: string }[]>`select pg_current_wal_flush_lsn()::text as lsn`)[0]?.lsn as string

/**
 * The WAL written since `from`: the records that touch this database's relations (pg_walinspect
 * reads them back, so the other databases' traffic on a shared server is not counted), and the
 * server's whole LSN difference beside it (`serverWal`, what pg_wal_lsn_diff alone would say).
 * Commits and other records naming no relation are left out of the first (alike in every variant).
 */
async function walSince(v: Variant, from: string, step: keyof Variant['wal']) {
  const to = await lsn(v)
  const [row] = await v.db.sql<{ ours: string; server: string }[]>`
    select coalesce(sum(record_length), 0)::text as ours,
      pg_wal_lsn_diff(${to}::pg_lsn, ${from}::pg_lsn)::text as server
    from pg_get_wal_records_info(${from}::pg_lsn, ${to}::pg_lsn)
    where block_ref like ${`% rel %/${v.databaseOid}/%`}`
  v.wal[step] += Number(row?.ours)
  v.serverWal += Number(row?.server)
  if (keeper) await keeper`select pg_replication_slot_advance(${SLOT}, ${to}::pg_lsn)`
}

/**
 * A temporary replication slot, held by a connection of its own for the run: it keeps the WAL of
 * a step from being recycled (by a checkpoint of the server's) before it is read back, and is
 * advanced past each step once read, so the server keeps no more than one step's WAL for it. It
 * goes with its connection, whatever ends the run.
 */
const SLOT = `bench_wal_${run}`
let keeper: postgres.Sql | undefined

/** Message `i` of a variant, as the worker records it once sent. */
function outcome(v: Variant, i: number, at: Date): DeliveryOutcome {
  const acceptedAt = new Date(at.getTime() - 2000)
  return {
    id: messageIdAt(acceptedAt.getTime()),
    apiKeyId: v.key,
    type: 'text',
    phone: `+5511${String(10_000_000 + ((i * 7919) % 1_000_000))}`,
    userId: null,
    payload: { phone: `+5511${String(10_000_000 + ((i * 7919) % 1_000_000))}`, text: 'Your code is 123456' },
    clientReference: i % 2 === 0 ? `ref-${run}-${i}` : null,
    senderPhoneNumberId: '106540352242922',
    senderId: 'default',
    batchId:
      i % 10 === 0 ? `00000000-0000-4000-8000-${String(Math.floor(i / 1000)).padStart(12, '0')}` : null,
    acceptedAt,
    sendAt: null,
    expiresAt: null,
    status: 'sent',
    attempts: 1,
    // As random as the platform's (`wamid.HBgL…`, ~55 characters): each lands on a random leaf of
    // the platform-id index, as in production.
    platformMessageId: `wamid.${randomBytes(36).toString('base64url')}`,
    lastErrorCode: null,
    lastErrorMessage: null,
    at,
  }
}

/** A round on a pool of its own, closed after it: five variants' pools open at once would hold a
 * shared server's connections for the whole run. */
async function round(v: Variant) {
  v.db = createDb(v.url, { max: STATUS_CONCURRENCY + 1 })
  try {
    await v.db.sql`checkpoint`
    await roundOn(v)
  } finally {
    await v.db.close()
  }
}

async function roundOn(v: Variant) {
  const first = v.written
  const rows: DeliveryOutcome[] = []
  for (let i = first; i < Math.min(N, first + PER_ROUND); i++) rows.push(outcome(v, i, new Date()))
  let from = await lsn(v)
  for (let i = 0; i < rows.length; i += 500)
    await refusedAgain(() => recordDeliveryOutcomes(v.db.sql, rows.slice(i, i + 500)))
  await walSince(v, from, 'record')

  from = await lsn(v)
  const updates = rows.flatMap((row, i) => [
    { row, status: 'priced' as const },
    { row, status: 'delivered' as const },
    ...((first + i) % 100 < 55 ? [{ row, status: 'read' as const }] : []),
  ])
  // Each message's sent (its pricing) before its delivered, before its read, as the platform sends them.
  const order = { priced: 0, delivered: 1, read: 2 }
  updates.sort((a, b) => order[a.status] - order[b.status])
  let next = 0
  const worker = async () => {
    for (let u = updates[next++]; u; u = updates[next++]) await applyStatus(v, u.row, u.status)
  }
  await Promise.all(Array.from({ length: STATUS_CONCURRENCY }, worker))
  await walSince(v, from, 'statuses')

  if (v.webhooks) {
    from = await lsn(v)
    while ((await relayOutbox(v.db.db, 500, async () => {})) > 0) {}
    await walSince(v, from, 'relay')
  }
  v.written += rows.length
}

/**
 * `write`, again while the server refuses the connection for want of slots (53300, "too many
 * clients": the server is shared with other runs). The statement never reached Postgres then.
 */
async function refusedAgain<T>(write: () => Promise<T>): Promise<T> {
  for (let tries = 1; ; tries++) {
    try {
      return await write()
    } catch (error) {
      const code =
        (error as { code?: string; cause?: { code?: string } }).cause?.code ??
        (error as { code?: string }).code
      if (code !== '53300' || tries >= 50) throw error
      await new Promise((resolve) => setTimeout(resolve, 200))
    }
  }
}

async function applyStatus(v: Variant, row: DeliveryOutcome, status: 'priced' | 'delivered' | 'read') {
  await refusedAgain(() => (status === 'priced' ? recordPricing(v, row) : applyStatusOnce(v, row, status)))
}

/** The `sent` status's pricing, as the webhook records it (the status moves nothing: the row is sent). */
async function recordPricing(v: Variant, row: DeliveryOutcome) {
  if (v.byPlatformId) {
    await recordMessagePricing(v.db.db, row.platformMessageId as string, PRICING, row.id)
    return
  }
  await v.db.sql`
    update messages set pricing_billable = true, pricing_model = 'PMP', pricing_category = 'utility',
      pricing_type = 'regular'
    where id = ${row.id}::uuid and accepted_at = ${row.acceptedAt.toISOString()}::timestamptz
      and pricing_model is null and pricing_category is null and pricing_billable is null`
}

async function applyStatusOnce(v: Variant, row: DeliveryOutcome, status: 'delivered' | 'read') {
  const at = new Date()
  if (v.byPlatformId) {
    await applyPlatformStatus(v.db.db, {
      platformMessageId: row.platformMessageId as string,
      messageId: row.id,
      status,
      at,
    })
    return
  }
  // What applyPlatformStatus sets, found by the primary key (no platform id index here).
  const iso = at.toISOString()
  await v.db.sql`
    update messages set status = ${status}::message_status, updated_at = now(),
      delivered_at = coalesce(delivered_at, ${iso}::timestamptz),
      read_at = ${status === 'read' ? iso : null}::timestamptz
    where id = ${row.id}::uuid and accepted_at = ${row.acceptedAt.toISOString()}::timestamptz
      and status < ${status}::message_status`
}

/** The updates of `messages`' partitions so far, and the HOT ones (after the rounds: their backends have reported). */
async function updatesOf(v: Variant) {
  const [row] = await v.db.sql<{ all: string; hot: string }[]>`
    select coalesce(sum(n_tup_upd), 0)::text as all, coalesce(sum(n_tup_hot_upd), 0)::text as hot
    from pg_stat_user_tables where relid in (select relid from pg_partition_tree('messages') where isleaf)`
  return { all: Number(row?.all), hot: Number(row?.hot) }
}

async function sizes(v: Variant) {
  const [row] = await v.db.sql<{ heap: string; indexes: string; total: string; count: string }[]>`
    select sum(pg_relation_size(relid))::text as heap, sum(pg_indexes_size(relid))::text as indexes,
      sum(pg_total_relation_size(relid))::text as total,
      (select count(*) from pg_indexes where tablename = 'messages')::text as count
    from pg_partition_tree('messages') where isleaf`
  return {
    heap: Number(row?.heap) / v.written,
    indexes: Number(row?.indexes) / v.written,
    total: Number(row?.total) / v.written,
    count: Number(row?.count),
  }
}

try {
  keeper = postgres(databaseUrl, { max: 1, onnotice: () => {} })
  await keeper`select pg_create_physical_replication_slot(${SLOT}, true, true)`
  const started = performance.now()
  await createVariant('before', { until: BEFORE })
  await createVariant('0030', { until: PACKED })
  await createVariant('0034', { textPlatformIndex: true })
  await createVariant('after', {})
  await createVariant('pk', { pkOnly: true })
  if (WEBHOOKS) {
    await createVariant('before+webhooks', { until: BEFORE, webhooks: true })
    await createVariant('after+webhooks', { webhooks: true })
  }
  for (let r = 0; r < ROUNDS; r++) {
    // Every variant starts its round's pages afresh: each pays the full-page images of the pages
    // it first touches after a checkpoint, as a server does once per checkpoint interval.
    for (const v of variants) await round(v)
    console.log(`round ${r + 1}/${ROUNDS} (${((performance.now() - started) / 1000).toFixed(0)} s)`)
  }
  const per = (v: Variant) => ({
    record: v.wal.record / v.written,
    statuses: v.wal.statuses / v.written,
    relay: v.wal.relay / v.written,
    total: (v.wal.record + v.wal.statuses + v.wal.relay) / v.written,
    server: v.serverWal / v.written,
  })
  const rows: { v: Variant; wal: ReturnType<typeof per>; size: Awaited<ReturnType<typeof sizes>> }[] = []
  // The last round's backends report their counts as they exit.
  await new Promise((resolve) => setTimeout(resolve, 2000))
  for (const v of variants) {
    v.db = createDb(v.url, { max: 1 })
    v.updates = await updatesOf(v)
    rows.push({ v, wal: per(v), size: await sizes(v) })
    await v.db.close()
  }
  const f = (n: number) => n.toFixed(0)
  console.log(`\n${N} messages a variant (${ROUNDS} rounds), statuses: delivered 100 %, read 55 %`)
  console.log(
    '\n| variant | messages indexes | WAL/msg: record | statuses | relay | total | (server) | heap B/msg | index B/msg | table+indexes B/msg | updates | HOT |',
  )
  console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |')
  for (const { v, wal, size } of rows)
    console.log(
      `| ${v.name} | ${size.count} | ${f(wal.record)} | ${f(wal.statuses)} | ${f(wal.relay)} | ${f(wal.total)} | ${f(wal.server)} | ${f(size.heap)} | ${f(size.indexes)} | ${f(size.total)} | ${v.updates.all} | ${v.updates.hot} (${((v.updates.hot / Math.max(1, v.updates.all)) * 100).toFixed(0)} %) |`,
    )
  const get = (name: string) => rows.find((r) => r.v.name === name)
  const before = get('before')
  const after = get('after')
  const pk = get('pk')
  if (before && after && pk) {
    console.log()
    for (const [name, row] of [
      ['before', before],
      ['after', after],
    ] as const) {
      printComparison({
        name: `WAL per message, record + statuses (${name} vs primary key only)`,
        figure: row.wal.record + row.wal.statuses,
        baseline: pk.wal.record + pk.wal.statuses,
        unit: 'bytes',
        better: 'lower',
      })
      printComparison({
        name: `messages table+indexes per message (${name} vs primary key only)`,
        figure: row.size.total,
        baseline: pk.size.total,
        unit: 'bytes',
        better: 'lower',
      })
    }
    const text = get('0034')
    if (text) {
      printComparison({
        name: 'WAL per message, record + statuses (after vs 0034, the platform id itself indexed)',
        figure: after.wal.record + after.wal.statuses,
        baseline: text.wal.record + text.wal.statuses,
        unit: 'bytes',
        better: 'lower',
      })
      printComparison({
        name: 'messages indexes per message (after vs 0034)',
        figure: after.size.indexes,
        baseline: text.size.indexes,
        unit: 'bytes',
        better: 'lower',
      })
    }
    printComparison({
      name: 'WAL per message, record + statuses (after vs before)',
      figure: after.wal.record + after.wal.statuses,
      baseline: before.wal.record + before.wal.statuses,
      unit: 'bytes',
      better: 'lower',
    })
  }
  const bw = get('before+webhooks')
  const aw = get('after+webhooks')
  if (bw && aw)
    printComparison({
      name: 'WAL per message with webhooks, record + statuses + relay (after vs before)',
      figure: aw.wal.total,
      baseline: bw.wal.total,
      unit: 'bytes',
      better: 'lower',
    })
} finally {
  await keeper?.end({ timeout: 5 })
  const admin = postgres(databaseUrl, { max: 1, onnotice: () => {} })
  for (const v of variants) {
    if (!benchEnv().keep)
      await admin.unsafe(`drop database if exists "${new URL(v.url).pathname.slice(1)}" with (force)`)
  }
  await admin.end({ timeout: 5 })
}
