/**
 * What the message list's indexes (migration 0009) cost on writes: the same traffic, recorded by
 * the worker's own statement (`recordDeliveryOutcomes`, batches of 50 sent messages) and moved to
 * delivered, then read, by the platform webhook's own update (`applyPlatformStatus`, one per
 * status), against two databases alike but for those indexes, in alternating rounds; medians
 * compared (BENCH_INDEXES: other indexes than the list's). Each database first holds BENCH_PRELOAD messages (default 1,000,000), so the indexes
 * have a size.
 *
 *   pnpm --filter @dispatch/bench bench:message-list-writes
 *   BENCH_PRELOAD=1000000 BENCH_ROUND_MESSAGES=5000 BENCH_ROUNDS=3 (all optional)
 */
import { randomUUID } from 'node:crypto'
import {
  applyPlatformStatus,
  createDb,
  type DeliveryOutcome,
  recordDeliveryOutcomes,
  type Sql,
} from '@dispatch/db'
import postgres from 'postgres'
import { printComparison } from '../harness/report.ts'
import { median } from '../harness/stats.ts'
import { createBenchWorld } from '../harness/world.ts'
import { createBenchKey, generateMessages, withoutMessageIndexes } from './message-list-generate.ts'

const preload = Number(process.env.BENCH_PRELOAD ?? 1_000_000)
const perRound = Number(process.env.BENCH_ROUND_MESSAGES ?? 5_000)
const rounds = Number(process.env.BENCH_ROUNDS ?? 3)
const BATCH = 50
/** Webhooks arrive this many batches after the send: delivered soon, read later. */
const DELIVERED_LAG = 2
const READ_LAG = 10
/**
 * The indexes compared: the list's, or those BENCH_INDEXES names (comma-separated), as
 * `bench:redaction-index` does for timed content retention's partial index (issue 25).
 */
const LIST_INDEXES = process.env.BENCH_INDEXES?.split(',') ?? [
  'messages_api_key_status_accepted_at_idx',
  'messages_api_key_updated_at_idx',
  'messages_client_reference_idx',
]
const INDEXES = process.env.BENCH_INDEXES ? LIST_INDEXES.join(', ') : 'list indexes'

async function prepare(name: string, withListIndexes: boolean) {
  const world = await createBenchWorld(name)
  const sql = postgres(world.databaseUrl, { max: 2, onnotice: () => {} })
  if (!withListIndexes) for (const index of LIST_INDEXES) await sql.unsafe(`drop index ${index}`)
  const key = await createBenchKey(sql, 'bench')
  await withoutMessageIndexes(sql, () => generateMessages(sql, key.id, preload, name, () => {}))
  await sql`vacuum analyze messages`
  await sql.end()
  return { ...world, apiKeyId: key.id, label: withListIndexes ? 'with' : 'without' }
}
type Target = Awaited<ReturnType<typeof prepare>>

const counters = async (databaseUrl: string) => {
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} })
  const [row] = await sql`select n_tup_upd::int as updates, n_tup_hot_upd::int as hot,
    pg_indexes_size('messages')::float8 as "indexBytes" from pg_stat_user_tables where relname = 'messages'`
  await sql.end()
  return { updates: Number(row?.updates), hot: Number(row?.hot), indexBytes: Number(row?.indexBytes) }
}

const outcome = (
  apiKeyId: string,
  platformMessageId: string,
  clientReference: string | null,
): DeliveryOutcome => {
  const at = new Date()
  return {
    id: randomUUID(),
    apiKeyId,
    type: 'text',
    phone: `+5511${String(10_000_000 + Math.floor(Math.random() * 1_000_000))}`,
    userId: null,
    payload: { text: 'Your code is 123456' },
    clientReference,
    senderPhoneNumberId: '106540352242922',
    senderId: 'default',
    batchId: null,
    sendAt: null,
    expiresAt: null,
    acceptedAt: at,
    status: 'sent',
    attempts: 1,
    platformMessageId,
    lastErrorCode: null,
    lastErrorMessage: null,
    at,
  }
}

type Update = (platformMessageId: string, status: 'delivered' | 'read') => Promise<unknown>

/**
 * The traffic of one round on `target`: batches of BATCH sent messages recorded, each batch's
 * messages delivered DELIVERED_LAG batches later and read READ_LAG batches later (so an update finds
 * its page as it would in service: filled by later inserts, perhaps pruned). `update` applies one
 * status, concurrently within a batch. Returns the milliseconds spent recording and updating.
 */
async function traffic(target: Target, sql: Sql, tag: string, messages: number, update: Update) {
  const batches = Math.ceil(messages / BATCH)
  const platformId = (batch: number, i: number) => `wamid.${tag}.${batch}.${i}`
  const times = { record: 0, update: 0 }
  const timed = async (what: keyof typeof times, run: () => Promise<unknown>) => {
    const start = performance.now()
    await run()
    times[what] += performance.now() - start
  }
  for (let b = 0; b < batches + READ_LAG; b++) {
    if (b < batches) {
      const outcomes = Array.from({ length: BATCH }, (_, i) =>
        outcome(target.apiKeyId, platformId(b, i), i % 2 ? `${tag}-${b}-${i}` : null),
      )
      await timed('record', () => recordDeliveryOutcomes(sql, outcomes))
    }
    const updates: Promise<unknown>[] = []
    for (const [lag, status] of [
      [DELIVERED_LAG, 'delivered'],
      [READ_LAG, 'read'],
    ] as const) {
      const batch = b - lag
      if (batch >= 0 && batch < batches) {
        for (let i = 0; i < BATCH; i++) updates.push(update(platformId(batch, i), status))
      }
    }
    await timed('update', () => Promise.all(updates))
  }
  return times
}

/** One timed round, through the webhook's own update. */
async function round(target: Target, n: number) {
  // A pool of its own, closed at the end: a backend flushes its statistics as it exits.
  const { db, sql, close } = createDb(target.databaseUrl)
  try {
    return await traffic(target, sql, `round${n}`, perRound, (platformMessageId, status) =>
      applyPlatformStatus(db, { platformMessageId, status, at: new Date() }),
    )
  } finally {
    await close()
  }
}

/**
 * WAL per webhook update, from each statement's own accounting (EXPLAIN ANALYZE WAL), so the other
 * databases' traffic on the server stays out of it: the same traffic, its updates being
 * applyPlatformStatus's statement run under EXPLAIN, one at a time.
 */
async function walPerUpdate(target: Target, messages: number) {
  const { sql, close } = createDb(target.databaseUrl, { max: 1 })
  const total = { updates: 0, records: 0, fpi: 0, bytes: 0 }
  try {
    await traffic(target, sql, 'wal', messages, async (platformMessageId, status) => {
      const [row] = await sql.unsafe(
        `explain (analyze, wal, format json) update messages set status = $2::message_status, updated_at = now(),
           delivered_at = coalesce(delivered_at, now()), read_at = case when $2 = 'read' then now() end
         where hashtextextended(platform_message_id, 0) = hashtextextended($1, 0) and platform_message_id = $1
           and status < $2::message_status`,
        [platformMessageId, status],
      )
      const plan = (row?.['QUERY PLAN'] as { Plan: Record<string, number> }[] | undefined)?.[0]?.Plan ?? {}
      total.updates++
      total.records += plan['WAL Records'] ?? 0
      total.fpi += plan['WAL FPI'] ?? 0
      total.bytes += plan['WAL Bytes'] ?? 0
    })
  } finally {
    await close()
  }
  const per = (n: number) => n / total.updates
  return { records: per(total.records), fpi: per(total.fpi), bytes: per(total.bytes) }
}

const targets = [await prepare('writes_with', true), await prepare('writes_without', false)]
try {
  console.log(
    `message writes: ${perRound.toLocaleString('en-US')} messages a round (recorded in batches of ${BATCH}, then delivered and read),` +
      ` ${rounds} alternating rounds, over ${preload.toLocaleString('en-US')} preloaded`,
  )
  const results = new Map(targets.map((t) => [t.label, { record: [] as number[], update: [] as number[] }]))
  const before = await Promise.all(targets.map((t) => counters(t.databaseUrl)))
  for (let n = 1; n <= rounds; n++) {
    for (const target of n % 2 ? targets : [...targets].reverse()) {
      const times = await round(target, n)
      results.get(target.label)?.record.push(times.record)
      results.get(target.label)?.update.push(times.update)
      console.log(
        `  round ${n}/${rounds} ${target.label} ${INDEXES}: record ${times.record.toFixed(0)} ms, delivered+read ${times.update.toFixed(0)} ms`,
      )
    }
  }
  // Statistics reach the shared counters shortly after each backend exits.
  await new Promise((resolve) => setTimeout(resolve, 1500))
  const after = await Promise.all(targets.map((t) => counters(t.databaseUrl)))
  const [withIdx, withoutIdx] = targets.map(
    (t) => results.get(t.label) as { record: number[]; update: number[] },
  )
  const perMessage = (ms: number) => (ms * 1000) / perRound
  printComparison({
    name: '  record (worker batch insert) per message',
    figure: perMessage(median(withIdx?.record ?? [])),
    baseline: perMessage(median(withoutIdx?.record ?? [])),
    unit: 'µs',
    better: 'lower',
  })
  printComparison({
    name: '  delivered + read (two webhook updates) per message',
    figure: perMessage(median(withIdx?.update ?? [])),
    baseline: perMessage(median(withoutIdx?.update ?? [])),
    unit: 'µs',
    better: 'lower',
  })
  targets.forEach((target, i) => {
    const updates = (after[i]?.updates ?? 0) - (before[i]?.updates ?? 0)
    const hot = (after[i]?.hot ?? 0) - (before[i]?.hot ?? 0)
    const share = updates ? ((100 * hot) / updates).toFixed(0) : '?'
    const grown = ((after[i]?.indexBytes ?? 0) - (before[i]?.indexBytes ?? 0)) / 2 ** 20
    console.log(
      `  ${target.label} ${INDEXES}: HOT updates ${hot} of ${updates} (${share} %); the table's indexes grew ${grown.toFixed(1)} MB`,
    )
  })
  for (const target of targets) {
    const wal = await walPerUpdate(target, 1000)
    console.log(
      `  WAL per webhook update ${target.label} ${INDEXES}: ${wal.bytes.toFixed(0)} bytes, ${wal.records.toFixed(1)} records, ${wal.fpi.toFixed(2)} full-page images`,
    )
  }
} finally {
  for (const target of targets) await target.drop()
}
