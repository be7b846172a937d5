/**
 * Day partitions benchmark (issue 25). Two parts, each against a baseline in the same run:
 *
 * 1. Retention: a day of DROP_BENCH_ROWS messages (default 10,000,000) removed by dropping its
 *    partition, against the same rows deleted in batches of 50,000 from an unpartitioned table with
 *    the same indexes (what a row-by-row purge does). Time and WAL written (pg_current_wal_lsn).
 * 2. Queries: PARTITION_BENCH_ROWS messages (default 2,000,000) over 90 days, in 90 day partitions
 *    and in one unpartitioned copy with the same indexes; the queries the service makes, as it makes
 *    them: the service's own functions on the partitioned table (which read a day's partition
 *    directly where they can), the statements they made before partitioning on the plain one. The
 *    key's newest page and its failed page (each with its bounded count), a lookup by id, a status's
 *    update by platform id (with our id echoed), the delivery record (17 outcomes a statement).
 *    Throughput over CONCURRENCY clients (default 8) in alternating rounds, its median, and the p95
 *    of single queries.
 *
 *   pnpm --filter @dispatch/bench bench:partitions
 *   DROP_BENCH_ROWS=1000000 PARTITION_BENCH_ROWS=500000 BENCH_ROUNDS=6 (all optional)
 */
import { randomUUID } from 'node:crypto'
import { MESSAGE_COUNT_LIMIT, type MessageListQuery } from '@dispatch/contracts'
import {
  applyPlatformStatus,
  createDb,
  type DeliveryOutcome,
  findMessageById,
  listMessages,
  maintainPartitions,
  messageColumns,
  messages,
  platformIdIs,
  recordDeliveryOutcomes,
  upsertOutcomes,
} from '@dispatch/db'
import { messageIdAt } from '@dispatch/runtime'
import { and, desc, sql as drizzleSql, eq, lt } from 'drizzle-orm'
import { alias, pgTable } from 'drizzle-orm/pg-core'
import postgres from 'postgres'
import { secondsSince } from '../harness/format.ts'
import { printComparison } from '../harness/report.ts'
import { median, pairedP95 } from '../harness/stats.ts'
import { createBenchWorld } from '../harness/world.ts'

const dropRows = Number(process.env.DROP_BENCH_ROWS ?? 10_000_000)
const queryRows = Number(process.env.PARTITION_BENCH_ROWS ?? 2_000_000)
const rounds = Number(process.env.BENCH_ROUNDS ?? 6)
const concurrency = Number(process.env.CONCURRENCY ?? 8)
/** The workers' MESSAGE_PARTITION_DAYS: how many days one partition holds in the query part. */
const widthDays = Number(process.env.MESSAGE_PARTITION_DAYS ?? 30)
const ROUND_MS = 2000
const DAY = 86_400_000
const KEYS = 100
const today = Math.floor(Date.now() / DAY) * DAY
const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MiB`

const world = await createBenchWorld('partitions')
const sql = postgres(world.databaseUrl, { max: concurrency + 2, onnotice: () => {} })
try {
  await sql.unsafe(`
    insert into api_keys (id, key_hash, key_prefix, environment, client_name, email, scopes, status)
    select md5('partition-key-' || k)::uuid, 'hash-' || k, 'dk_' || k, 'development', 'Bench ' || k, 'b@x.test',
      '{send:free-text}', 'approved'
    from generate_series(0, ${KEYS - 1}) k`)
  /** `count` rows over the day starting at `dayMs`, or over the 90 days before today when it is null. */
  const rowsSql = (table: string, count: number, dayMs: number | null) => `
    insert into ${table} (id, api_key_id, type, phone, payload, status, attempts, platform_message_id,
      accepted_at, sent_at, updated_at, sender_id)
    select gen_random_uuid(), md5('partition-key-' || (i % ${KEYS}))::uuid, 'text',
      '+5521' || (100000000 + i)::text, '{"text":"Your code is 123456"}'::jsonb,
      (case when i % 50 = 0 then 'failed' else 'delivered' end)::message_status, 1, 'wamid.' || i,
      at, at, at, 'default'
    from (select i, ${
      dayMs === null
        ? `to_timestamp(${today / 1000}) - (i::double precision / ${count} * 90 * interval '1 day')`
        : `to_timestamp(${dayMs / 1000}) + ((i - 1)::double precision / ${count} * interval '1 day')`
    } as at from generate_series(1, ${count}) i) s`

  // ── 1. retention: drop a day vs delete it ──
  console.log(`retention: filling a day of ${dropRows.toLocaleString('en-US')} messages twice…`)
  let started = performance.now()
  const dropDay = today + 30 * DAY
  await maintainPartitions(sql, { now: new Date(dropDay), aheadDays: 0, retentionDays: 3650 })
  const dayTable = `messages_p${new Date(dropDay).toISOString().slice(0, 10).replaceAll('-', '')}`
  await sql.unsafe(`create table flat_day (like messages including all)`)
  for (let done = 0; done < dropRows; done += 1_000_000) {
    const n = Math.min(1_000_000, dropRows - done)
    await sql.unsafe(rowsSql('messages', n, dropDay))
    await sql.unsafe(rowsSql('flat_day', n, dropDay))
    console.log(
      `  ${(done + n).toLocaleString('en-US')} of ${dropRows.toLocaleString('en-US')} (${secondsSince(started, 1)})`,
    )
  }
  await sql`checkpoint`
  console.log(`  filled in ${secondsSince(started, 1)}`)
  const wal = async () =>
    (await sql<{ lsn: string }[]>`select pg_current_wal_insert_lsn()::text as lsn`)[0]?.lsn
  const walSince = async (lsn: string | undefined) =>
    Number(
      (
        await sql<
          { b: string }[]
        >`select pg_wal_lsn_diff(pg_current_wal_insert_lsn(), ${lsn ?? '0/0'})::text as b`
      )[0]?.b,
    )
  let lsn = await wal()
  started = performance.now()
  for (;;) {
    const gone = await sql.unsafe(
      `delete from flat_day where ctid in (select ctid from flat_day limit 50000)`,
    )
    if (gone.count === 0) break
  }
  const deleteMs = performance.now() - started
  const deleteWal = await walSince(lsn)
  lsn = await wal()
  started = performance.now()
  await sql.unsafe(`drop table ${dayTable}`)
  const dropMs = performance.now() - started
  const dropWal = await walSince(lsn)
  console.log(
    `  delete in batches: ${(deleteMs / 1000).toFixed(1)} s, ${mib(deleteWal)} of WAL (and a vacuum to come)`,
  )
  console.log(`  drop the partition: ${dropMs.toFixed(0)} ms, ${(dropWal / 1024).toFixed(0)} KiB of WAL`)
  printComparison({
    name: 'retention: time to remove a day',
    figure: dropMs,
    baseline: deleteMs,
    unit: 'ms',
    better: 'lower',
  })
  printComparison({
    name: 'retention: WAL to remove a day',
    figure: dropWal,
    baseline: deleteWal,
    unit: 'bytes',
    better: 'lower',
  })
  await sql.unsafe(`drop table flat_day`)

  // ── 2. queries: 90 day partitions vs one table ──
  console.log(
    `queries: ${queryRows.toLocaleString('en-US')} messages over 90 days, in partitions of ${widthDays} days and in one table…`,
  )
  started = performance.now()
  await sql.unsafe(`drop table messages_legacy`) // empty here; the days below take its place
  await maintainPartitions(sql, {
    now: new Date(today - 91 * DAY),
    aheadDays: 98,
    retentionDays: 3650,
    widthDays,
  })
  await sql.unsafe(`create table flat (like messages including all)`)
  await sql.unsafe(rowsSql('messages', queryRows, null))
  // The same webhook-event trigger as messages, so each side writes what the service's writes cost.
  await sql.unsafe(`create trigger flat_webhook_events after insert or update of status, attempts on flat
    for each row execute function dispatch_message_webhook_events()`)
  await sql.unsafe(`insert into flat select * from messages`)
  await sql.unsafe(`vacuum analyze messages`)
  await sql.unsafe(`vacuum analyze flat`)
  const [{ parts } = { parts: 0 }] = await sql<{ parts: number }[]>`
    select count(*)::int as parts from pg_inherits where inhparent = 'messages'::regclass`
  console.log(`  filled in ${secondsSince(started, 1)}; ${parts} partitions`)

  // Existing ids and platform ids to look up, and new ones with v7 ids for the partitioned lookups.
  const sample = await sql<{ id: string; wamid: string; at: Date }[]>`
    select id, platform_message_id as wamid, accepted_at as at from flat tablesample system (1) limit 2000`
  // The partitioned copy gets the same rows under v7 ids (what new messages have), so its lookups
  // can name their day; the unpartitioned one keeps its ids, found by id alone as before.
  const timed = sample.map((row) => ({ ...row, v7: messageIdAt(row.at.getTime()) }))
  for (const row of timed)
    await sql`update messages set id = ${row.v7} where id = ${row.id} and accepted_at = ${row.at}`
  let n = 0
  const pick = () => timed[n++ % timed.length] as (typeof timed)[number]
  const keyOf = () => `${n++ % KEYS}`
  const keyIds = new Map(
    (
      await sql<{ k: string; id: string }[]>`
        select k::text, md5('partition-key-' || k)::uuid::text as id from generate_series(0, ${KEYS - 1}) k`
    ).map((r) => [r.k, r.id]),
  )
  const keyId = () => keyIds.get(keyOf()) as string
  // The service's own functions on the partitioned table; on the plain one, the statements those
  // functions made before partitioning (the page and its bounded count, started together).
  const { db, close: closeDb } = createDb(world.databaseUrl, { max: concurrency + 2 })
  // Lists on connections like the API's for them (`genericPlans`); the plain table's before them.
  const lists = createDb(world.databaseUrl, { max: concurrency + 2, genericPlans: true })
  const list = (status?: 'failed') =>
    listMessages(lists.db, keyId(), {
      page: 1,
      take: 50,
      order: 'DESC',
      orderField: 'createdAt',
      ...(status ? { status: [status] } : {}),
    } as MessageListQuery)
  // The plain table under the alias `messages`, so the list's own filters and ordering apply to it.
  const flat = alias(pgTable('flat', messageColumns), 'messages') as unknown as typeof messages
  const flatList = (status?: 'failed') => {
    const where = and(eq(messages.apiKeyId, keyId()), status ? eq(messages.status, status) : undefined)
    return Promise.all([
      db.select().from(flat).where(where).orderBy(desc(messages.acceptedAt), desc(messages.id)).limit(50),
      db.select({ value: drizzleSql<number>`count(*)::int` }).from(
        db
          .select({ one: drizzleSql`1` })
          .from(flat)
          .where(where)
          .limit(MESSAGE_COUNT_LIMIT + 1)
          .as('m'),
      ),
    ])
  }
  const outcomes = (): DeliveryOutcome[] =>
    Array.from({ length: 17 }, () => {
      const at = new Date()
      return {
        id: messageIdAt(at.getTime()),
        apiKeyId: keyIds.get('1') as string,
        type: 'text',
        phone: '+552100000000',
        userId: null,
        payload: { text: 'hi' },
        clientReference: null,
        senderPhoneNumberId: '106540352242922',
        senderId: 'default',
        batchId: null,
        acceptedAt: at,
        sendAt: null,
        expiresAt: null,
        status: 'sent',
        attempts: 1,
        platformMessageId: `wamid.${randomUUID()}`,
        lastErrorCode: null,
        lastErrorMessage: null,
        at,
      }
    })
  type Query = { name: string; partitioned: () => Promise<unknown>; flat: () => Promise<unknown> }
  const queries: Query[] = [
    { name: "list: a key's newest page", partitioned: () => list(), flat: () => flatList() },
    { name: "list: a key's failed page", partitioned: () => list('failed'), flat: () => flatList('failed') },
    {
      name: 'lookup by id',
      partitioned: () => findMessageById(db, pick().v7),
      flat: () => db.select().from(flat).where(eq(messages.id, pick().id)).limit(1),
    },
    {
      name: "a status's update by platform id",
      partitioned: () => {
        const row = pick()
        return applyPlatformStatus(db, {
          platformMessageId: row.wamid,
          messageId: row.v7,
          status: 'delivered',
          at: new Date(),
        })
      },
      flat: () => {
        const plain = pgTable('flat', messageColumns)
        return db
          .update(plain)
          .set({ status: 'delivered', updatedAt: drizzleSql`now()` })
          .where(and(platformIdIs(plain, pick().wamid), lt(plain.status, 'delivered')))
          .returning({ id: plain.id, phone: plain.phone, userId: plain.userId })
      },
    },
    {
      name: 'delivery record: 17 outcomes a statement',
      partitioned: () => recordDeliveryOutcomes(sql, outcomes()),
      flat: () => upsertOutcomes(sql, 'flat', outcomes()),
    },
  ]

  /** Statements per second over `concurrency` clients for ROUND_MS. */
  const throughput = async (run: () => Promise<unknown>) => {
    let count = 0
    const until = performance.now() + ROUND_MS
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (performance.now() < until) {
          await run()
          count++
        }
      }),
    )
    return count / (ROUND_MS / 1000)
  }
  const only = process.env.BENCH_ONLY
  for (const query of queries.filter((q) => !only || q.name.includes(only))) {
    const figures = { partitioned: [] as number[], flat: [] as number[] }
    await throughput(query.partitioned) // warm-up
    await throughput(query.flat)
    for (let r = 0; r < rounds; r++) {
      const order = r % 2 ? (['partitioned', 'flat'] as const) : (['flat', 'partitioned'] as const)
      for (const layout of order) figures[layout].push(await throughput(query[layout]))
    }
    const aim = query.name.startsWith('delivery') ? '≥ 0.95' : '≥ 0.9'
    printComparison({
      name: `${query.name}, throughput`,
      figure: median(figures.partitioned),
      baseline: median(figures.flat),
      unit: 'statements/s',
      better: 'higher',
      aim,
    })
    const latency = await pairedP95(query.partitioned, query.flat, 300)
    printComparison({
      name: `${query.name}, p95`,
      figure: latency.figure,
      baseline: latency.baseline,
      unit: 'ms',
      better: 'lower',
      // Issue 25's aims: p95 for the lists and lookups; the record's is its throughput alone.
      ...(query.name.startsWith('delivery') ? {} : { aim: '≤ 1.1' }),
    })
  }
  await closeDb()
  await lists.close()
} finally {
  await sql.end({ timeout: 5 })
  await world.drop()
}
