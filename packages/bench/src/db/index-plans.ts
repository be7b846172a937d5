/**
 * Which index each query of the tables written per message reads (issue 46). Fills a database of
 * its own with realistic rows (INDEX_PLANS_ROWS messages, default 300,000, over four keys of 200/50/
 * 30/20 thousandths… see `generateMessages`, and as many webhook events, attempts, outbox rows, and a
 * tenth as many replies), then runs each query the service makes through its own function, catches
 * the statements it sends (`onStatement`), and prints the plan's indexes and time from
 * `EXPLAIN (ANALYZE)` (reads; writes are explained without running them again). Lists are planned
 * as the API plans them (`genericPlans`, a prepared statement's generic plan).
 *
 * Fails (exit 1) when a query listed in packages/db/src/hot-indexes.ts as served by an index does
 * not read it, or reads no index at all: every index kept must still be the one its query reads;
 * and when a list by a filter with no index on `messages` (channel, fallback: SEQ_SCAN_FREE) reads
 * its partitions whole.
 *
 *   pnpm --filter @dispatch/bench bench:index-plans
 *   INDEX_PLANS_ROWS=100000 BENCH_KEEP_DB=1 (optional)
 */
import { randomUUID } from 'node:crypto'
import { type AdminMessageListQuery, MESSAGE_COUNT_LIMIT, type MessageListQuery } from '@dispatch/contracts'
import {
  applyPlatformStatus,
  createDb,
  failingWebhookEndpoints,
  findInboundMedia,
  findMessageById,
  findWebhookEvents,
  HOT_TABLE_INDEXES,
  listAdminMessages,
  listInboundMessages,
  listMessages,
  listWebhookAttempts,
  messageHistory,
  messagesPerMinute,
  pendingOutboxAgeSeconds,
  purgeRelayedOutbox,
  recordDeliveryOutcomes,
  recordInboundMessage,
  recordMessagePricing,
  redactExpiredMessages,
  redactExpiredReplies,
  relayOutbox,
  retryFailedMessages,
  topErrorCodes,
  webhookEventsBetween,
} from '@dispatch/db'
import postgres from 'postgres'
import { createBenchKey, generateMessages } from '../api/message-list-generate.ts'
import { createBenchWorld } from '../harness/world.ts'

const total = Number(process.env.INDEX_PLANS_ROWS ?? 300_000)
const world = await createBenchWorld('index_plans')
const sql = postgres(world.databaseUrl, { max: 2, onnotice: () => {} })
let failed = false
/**
 * Cases whose plan must read no `messages` partition whole (sequential scans past WHOLE_READ rows):
 * the lists by a filter with no index of its own on `messages`, which must find their rows through
 * another table's index (`message_fallbacks`).
 */
const SEQ_SCAN_FREE = new Set([
  'list: key, channel=sms',
  'list: key, channel=whatsapp',
  'list: key, fallback=failed,unknown',
  'list: key, fallback=none',
  'list: key, status=failed, channel=sms',
  'admin list: channel=sms',
  'admin list: fallback=failed',
  'admin list: apiKeyId, channel=sms',
])
const wholeScans: string[] = []
/**
 * Rows a SEQ_SCAN_FREE list may read by sequential scans: its count's (up to MESSAGE_COUNT_LIMIT
 * matches, which the planner may read off a period whole), twice over. Key 0 holds 60 % of the rows:
 * at the default size a list reading it whole reads 180,000.
 */
const WHOLE_READ = 2 * MESSAGE_COUNT_LIMIT

try {
  const keys: string[] = []
  for (let k = 0; k < 4; k++) keys.push((await createBenchKey(sql, `plans-${k}`)).id)
  const shares = [0.6, 0.2, 0.12, 0.08]
  const started = performance.now()
  for (const [i, id] of keys.entries())
    await generateMessages(sql, id, Math.round(total * (shares[i] as number)), `k${i}`, () => {})
  const [key0] = keys as [string]
  await generateOthers(sql, key0, total)
  await sql`analyze`
  console.log(
    `${total} messages and their events generated in ${((performance.now() - started) / 1000).toFixed(0)} s`,
  )

  // Values that exist, read once.
  const [sample] = await sql<
    { id: string; platform: string; phone: string; reference: string; batch: string; accepted: Date }[]
  >`select id, platform_message_id as platform, phone, client_reference as reference, accepted_at as accepted,
      (select batch_id from messages where api_key_id = ${key0} and batch_id is not null limit 1) as batch
    from messages where api_key_id = ${key0} and status = 'delivered' and client_reference is not null
    order by accepted_at desc limit 1`
  if (!sample) throw new Error('no sample message')
  const [event] = await sql<{ id: string; message_id: string }[]>`
    select id, message_id from webhook_events where message_id is not null order by created_at desc limit 1`
  const [endpoint] = await sql<{ id: string }[]>`select id from webhook_endpoints limit 1`
  const [media] = await sql<{ id: string }[]>`
    select content->'media'->>'id' as id from inbound_messages where content ? 'media' and api_key_id is not null limit 1`
  const now = new Date()
  const hourAgo = new Date(now.getTime() - 3_600_000)
  const dayAgo = new Date(now.getTime() - 86_400_000)

  const listQuery = (extra: Partial<MessageListQuery>): MessageListQuery => ({
    page: 1,
    take: 50,
    order: 'DESC',
    orderField: 'createdAt',
    ...extra,
  })
  const adminQuery = (extra: Partial<AdminMessageListQuery>) =>
    ({ page: 1, take: 50, order: 'DESC', orderField: 'createdAt', ...extra }) as AdminMessageListQuery

  /** Each case: the function run, and whether the service plans it generically (the lists' pool). */
  const cases: Record<string, { run: (db: PlanDb) => Promise<unknown>; generic?: boolean }> = {
    findMessageById: { run: (db) => findMessageById(db, sample.id) },
    applyPlatformStatus: {
      run: (db) =>
        applyPlatformStatus(db, {
          platformMessageId: sample.platform,
          messageId: sample.id,
          status: 'read',
          at: now,
        }),
    },
    recordMessagePricing: {
      run: (db) =>
        recordMessagePricing(
          db,
          sample.platform,
          { billable: true, pricingModel: 'PMP', category: 'utility', type: 'regular' },
          sample.id,
        ),
    },
    // A status whose `biz_opaque_callback_data` was lost: every partition's index probed.
    'applyPlatformStatus (no id)': {
      run: (db) => applyPlatformStatus(db, { platformMessageId: sample.platform, status: 'read', at: now }),
    },
    recordDeliveryOutcomes: {
      run: (db) =>
        recordDeliveryOutcomes(db.$client, [
          {
            id: sample.id,
            apiKeyId: key0,
            type: 'text',
            phone: sample.phone,
            userId: null,
            payload: { text: 'x' },
            clientReference: null,
            senderPhoneNumberId: '106540352242922',
            senderId: 'default',
            batchId: null,
            acceptedAt: sample.accepted,
            sendAt: null,
            expiresAt: null,
            status: 'sent',
            attempts: 1,
            platformMessageId: sample.platform,
            lastErrorCode: null,
            lastErrorMessage: null,
            at: now,
          },
        ]),
    },
    'routeReply (phone)': {
      run: (db) =>
        recordInboundMessage(db, {
          platformMessageId: `wamid.plans-${randomUUID()}`,
          phoneNumberId: '106540352242922',
          phone: sample.phone,
          userId: null,
          username: null,
          type: 'text',
          content: { text: 'hi' },
          contextId: null,
          receivedAt: now,
        } as never),
    },
    'routeReply (quoted)': {
      run: (db) =>
        recordInboundMessage(db, {
          platformMessageId: `wamid.plans-${randomUUID()}`,
          phoneNumberId: '106540352242922',
          phone: sample.phone,
          userId: null,
          username: null,
          type: 'text',
          content: { text: 'yes' },
          contextId: sample.platform,
          receivedAt: now,
        } as never),
    },
    'list: key, newest': { run: (db) => listMessages(db, key0, listQuery({})), generic: true },
    'list: key, status=failed': {
      run: (db) => listMessages(db, key0, listQuery({ status: ['failed'] })),
      generic: true,
    },
    'list: key, status=delivered,read': {
      run: (db) => listMessages(db, key0, listQuery({ status: ['delivered', 'read'] })),
      generic: true,
    },
    'list: key, orderField=updatedAt': {
      run: (db) => listMessages(db, key0, listQuery({ orderField: 'updatedAt' })),
      generic: true,
    },
    'list: key, clientReference': {
      run: (db) => listMessages(db, key0, listQuery({ clientReference: sample.reference })),
      generic: true,
    },
    'list: key, batchId': {
      run: (db) => listMessages(db, key0, listQuery({ batchId: sample.batch })),
      generic: true,
    },
    'list: key, phone': {
      run: (db) => listMessages(db, key0, listQuery({ phone: sample.phone })),
      generic: true,
    },
    // The channel fallback's filters (message-list.ts, fallbackFilters): an EXISTS on
    // message_fallbacks per row. A few messages' SMS went (`channel=sms`, `fallback=…`): such a list
    // must not read every row of the key, or of every key, to find them (SEQ_SCAN_FREE below).
    'list: key, channel=sms': {
      run: (db) => listMessages(db, key0, listQuery({ channel: 'sms' })),
      generic: true,
    },
    'list: key, channel=whatsapp': {
      run: (db) => listMessages(db, key0, listQuery({ channel: 'whatsapp' })),
      generic: true,
    },
    'list: key, fallback=failed,unknown': {
      run: (db) => listMessages(db, key0, listQuery({ fallback: ['failed', 'unknown'] })),
      generic: true,
    },
    'list: key, fallback=none': {
      run: (db) => listMessages(db, key0, listQuery({ fallback: ['none'] })),
      generic: true,
    },
    'list: key, status=failed, channel=sms': {
      run: (db) => listMessages(db, key0, listQuery({ status: ['failed'], channel: 'sms' })),
      generic: true,
    },
    'admin list: channel=sms': {
      run: (db) => listAdminMessages(db, adminQuery({ channel: 'sms' })),
      generic: true,
    },
    'admin list: fallback=failed': {
      run: (db) => listAdminMessages(db, adminQuery({ fallback: ['failed'] })),
      generic: true,
    },
    'admin list: apiKeyId, channel=sms': {
      run: (db) => listAdminMessages(db, adminQuery({ apiKeyId: key0, channel: 'sms' })),
      generic: true,
    },
    'admin list: newest': { run: (db) => listAdminMessages(db, adminQuery({})), generic: true },
    'admin list: status=failed': {
      run: (db) => listAdminMessages(db, adminQuery({ status: ['failed'] })),
      generic: true,
    },
    'admin list: apiKeyId': {
      run: (db) => listAdminMessages(db, adminQuery({ apiKeyId: keys[1] as string })),
      generic: true,
    },
    'admin search: clientReference': {
      run: (db) => listAdminMessages(db, adminQuery({ clientReference: sample.reference })),
      generic: true,
    },
    'admin search: q': {
      run: (db) => listAdminMessages(db, adminQuery({ q: sample.reference })),
      generic: true,
    },
    // The pick only: no message is released, so none moves.
    retryFailedMessages: {
      run: (db) =>
        retryFailedMessages(
          db,
          { limit: 100 },
          {},
          { actor: 'bench', now, expiresAt: now },
          { release: async () => new Set(), requeue: async () => {} },
        ),
    },
    'console: messagesPerMinute': { run: (db) => messagesPerMinute(db, hourAgo, hourAgo) },
    redactExpiredMessages: { run: (db) => redactExpiredMessages(db, now, 500) },
    messageHistory: { run: (db) => messageHistory(db, event?.message_id ?? sample.id) },
    'console: topErrorCodes': { run: (db) => topErrorCodes(db, hourAgo) },
    findWebhookEvents: { run: (db) => findWebhookEvents(db, [event?.id ?? 'none']) },
    webhookEventsBetween: {
      run: (db) =>
        webhookEventsBetween(db, {
          apiKeyId: key0,
          types: ['message.delivered'],
          since: dayAgo,
          until: now,
          limit: 100,
        }),
    },
    listWebhookAttempts: {
      run: (db) =>
        listWebhookAttempts(db, endpoint?.id ?? randomUUID(), { page: 1, take: 50, order: 'DESC' }),
    },
    'console: failingWebhookEndpoints': { run: (db) => failingWebhookEndpoints(db, hourAgo) },
    relayOutbox: { run: (db) => relayOutbox(db, 100, async () => {}) },
    pendingOutboxAgeSeconds: { run: (db) => pendingOutboxAgeSeconds(db) },
    purgeRelayedOutbox: { run: (db) => purgeRelayedOutbox(db, dayAgo, 1000) },
    findInboundMedia: { run: (db) => findInboundMedia(db, media?.id ?? 'none', key0) },
    'admin inbound: unrouted': {
      run: (db) =>
        listInboundMessages(db, {
          page: 1,
          take: 50,
          order: 'DESC',
          orderField: 'receivedAt',
          routed: false,
        }),
    },
    'admin inbound: apiKeyId': {
      run: (db) =>
        listInboundMessages(db, {
          page: 1,
          take: 50,
          order: 'DESC',
          orderField: 'receivedAt',
          apiKeyId: key0,
        }),
    },
    redactExpiredReplies: { run: (db) => redactExpiredReplies(db, now, 500) },
  }

  const parents = await indexParents(sql)
  const seen = new Map<string, Set<string>>()
  console.log('\n| query | indexes read | plan time (ms) |\n| --- | --- | --- |')
  for (const [name, { run, generic }] of Object.entries(cases)) {
    const statements: { query: string; parameters: unknown[] }[] = []
    const client = createDb(world.databaseUrl, {
      max: 1,
      genericPlans: generic,
      onStatement: (query, parameters) => statements.push({ query, parameters }),
    })
    try {
      await run(client.db)
      const used = new Set<string>()
      let wholeRows = 0
      let ms = 0
      for (const { query, parameters } of statements) {
        if (!/^\s*(select|update|insert|delete|with)/i.test(query)) continue
        const plan = await explain(client.sql, query, parameters, generic === true)
        for (const index of plan.indexes) used.add(parents.get(index) ?? index)
        for (const [table, rows] of plan.seqScans) if (table.startsWith('messages')) wholeRows += rows
        ms += plan.ms
      }
      seen.set(name, used)
      const note = wholeRows > 0 ? ` (${wholeRows} messages rows read by sequential scans)` : ''
      console.log(`| ${name} | ${[...used].sort().join(', ') || '(none)'}${note} | ${ms.toFixed(2)} |`)
      if (SEQ_SCAN_FREE.has(name) && wholeRows > WHOLE_READ) {
        failed = true
        wholeScans.push(name)
      }
    } finally {
      await client.close()
    }
  }

  // Each kept index's size over its table's rows (every partition's index summed under its parent's).
  const sizes = await sql<{ index: string; table: string; bytes: string; rows: string }[]>`
    select i.indexrelid::regclass::text as index, i.indrelid::regclass::text as table,
      pg_relation_size(i.indexrelid)::text as bytes, c.reltuples::bigint::text as rows
    from pg_index i join pg_class c on c.oid = i.indrelid
    join pg_namespace n on n.oid = c.relnamespace where n.nspname = 'public' and c.relkind = 'r'`
  const perIndex = new Map<string, { bytes: number; rows: number }>()
  for (const r of sizes) {
    const name = parents.get(r.index) ?? r.index
    const sum = perIndex.get(name) ?? { bytes: 0, rows: 0 }
    perIndex.set(name, { bytes: sum.bytes + Number(r.bytes), rows: sum.rows + Math.max(0, Number(r.rows)) })
  }
  console.log('\n| index | bytes | B/row |\n| --- | --- | --- |')
  for (const entry of HOT_TABLE_INDEXES) {
    const size = perIndex.get(entry.index)
    if (size)
      console.log(
        `| ${entry.index} | ${size.bytes} | ${size.rows >= 1 ? (size.bytes / size.rows).toFixed(1) : '–'} |`,
      )
  }

  if (wholeScans.length > 0)
    console.log(`\nLists that read messages partitions whole (sequential scans): ${wholeScans.join(', ')}`)
  console.log('\nEvery kept index, and whether its query reads it:')
  for (const entry of HOT_TABLE_INDEXES) {
    if (!entry.planCase) {
      console.log(`  ${entry.index}: ${entry.kind ?? 'index'}, not planned here (${entry.serves})`)
      continue
    }
    for (const planCase of [entry.planCase].flat()) {
      const ok = seen.get(planCase)?.has(entry.index) ?? false
      if (!ok) failed = true
      console.log(`  ${ok ? 'ok ' : 'NO '} ${entry.index} ← ${planCase}`)
    }
  }
} finally {
  await sql.end({ timeout: 5 })
  await world.drop()
}
if (failed) {
  console.error('\nA kept index is not read by the query it is kept for.')
  process.exit(1)
}

type PlanDb = ReturnType<typeof createDb>['db']

/** Each partition's index, by its parent's (partitioned) index name. */
async function indexParents(sql: postgres.Sql) {
  const rows = await sql<{ child: string; parent: string }[]>`
    with recursive up as (
      select c.oid as child, c.oid as top from pg_class c where c.relkind in ('i', 'I')
      union all
      select up.child, i.inhparent from up join pg_inherits i on i.inhrelid = up.top)
    select c.relname as child, t.relname as parent from up
    join pg_class c on c.oid = up.child join pg_class t on t.oid = up.top
    where not exists (select 1 from pg_inherits i where i.inhrelid = up.top)`
  return new Map(rows.map((r) => [r.child, r.parent]))
}

/**
 * The indexes a statement reads and its time: reads run (`EXPLAIN ANALYZE`), writes only planned.
 * Generic: as a prepared statement's generic plan, the API's lists' way.
 */
async function explain(sql: postgres.Sql, query: string, parameters: unknown[], generic: boolean) {
  const reads = /^\s*(select|with)/i.test(query) && !/for update/i.test(query)
  const options = reads ? '(analyze, format json)' : '(format json)'
  const rows = await sql.begin(async (tx) => {
    if (generic) await tx`set local plan_cache_mode = force_generic_plan`
    const name = `plan_${randomUUID().replaceAll('-', '')}`
    await tx.unsafe(`prepare ${name} as ${query}`)
    const args = parameters.map((p) =>
      p === null
        ? 'null'
        : `'${String(typeof p === 'object' ? JSON.stringify(p) : p).replaceAll("'", "''")}'`,
    )
    const result = await tx.unsafe(
      `explain ${options} execute ${name}${args.length ? `(${args.join(', ')})` : ''}`,
    )
    await tx.unsafe(`deallocate ${name}`)
    return result
  })
  const plan = (rows[0] as unknown as { 'QUERY PLAN': [{ Plan: PlanNode; 'Execution Time'?: number }] })[
    'QUERY PLAN'
  ][0]
  const indexes = new Set<string>()
  /** Rows read by sequential scans, by table (an empty period's scan reads none). */
  const seqScans = new Map<string, number>()
  const walk = (node: PlanNode) => {
    if (node['Index Name']) indexes.add(node['Index Name'])
    if (node['Node Type'] === 'Seq Scan' && node['Relation Name']) {
      const rows =
        ((node['Actual Rows'] ?? 0) + (node['Rows Removed by Filter'] ?? 0)) * (node['Actual Loops'] ?? 0)
      seqScans.set(node['Relation Name'], (seqScans.get(node['Relation Name']) ?? 0) + rows)
    }
    for (const arbiter of node['Conflict Arbiter Indexes'] ?? []) indexes.add(arbiter)
    for (const child of node.Plans ?? []) walk(child)
  }
  walk(plan.Plan)
  return { indexes, seqScans, ms: plan['Execution Time'] ?? 0 }
}

interface PlanNode {
  'Node Type'?: string
  'Relation Name'?: string
  'Actual Loops'?: number
  'Actual Rows'?: number
  'Rows Removed by Filter'?: number
  'Index Name'?: string
  'Conflict Arbiter Indexes'?: string[]
  Plans?: PlanNode[]
}

/**
 * Set-based, as a restore writes them (triggers off): an event per message of key 0 in its last
 * SPAN, an attempt per event (5 % failing) to five endpoints, an outbox row per event (all but 50
 * dispatched), an attempt row per failed message, a reply per ten messages (5 % with media, a tenth
 * unrouted, a tenth due for redaction).
 */
async function generateOthers(sql: postgres.Sql, key: string, count: number) {
  await sql.begin(async (tx) => {
    await tx`set local session_replication_role = replica`
    await tx`
      insert into webhook_endpoints (api_key_id, url, secret, events)
      select ${key}, 'https://example.test/hook-' || i, 'whsec_' || md5(i::text), '{message.delivered,message.read}'
      from generate_series(1, 5) i`
    await tx`
      insert into webhook_events (id, api_key_id, type, message_id, sequence, payload, created_at)
      select 'msg_' || lpad(to_hex((extract(epoch from m.accepted_at + interval '3 seconds') * 1000)::bigint), 12, '0')
          || '7' || substr(md5(m.id::text), 1, 19),
        ${key}, 'message.delivered', m.id, 1, '{"type":"message.delivered"}'::jsonb, m.accepted_at + interval '3 seconds'
      from messages m where m.api_key_id = ${key} and m.status in ('delivered', 'read')
      limit ${count}`
    await tx`
      insert into webhook_attempts (endpoint_id, event_id, attempt, status_code, duration_ms, created_at)
      select e.id, v.id, 1, case when row_number() over () % 20 = 0 then 500 else 200 end, 40, v.created_at
      from webhook_events v cross join lateral (select id from webhook_endpoints order by random() limit 1) e`
    await tx`
      insert into outbox (topic, payload, created_at, dispatched_at)
      select 'webhook', jsonb_build_object('eventId', id), created_at,
        case when row_number() over (order by created_at desc) > 50 then created_at end
      from webhook_events order by created_at`
    await tx`
      insert into message_attempts (message_id, attempt, outcome, error_code, error_message, created_at)
      select id, a, 'failed', '131026', 'Message undeliverable', failed_at
      from messages cross join generate_series(1, 3) a where status = 'failed'`
    // A channel fallback for half of every key's failed messages (131026): 2.5 % of the messages,
    // the SMS sent for most, refused or unknown for a few.
    await tx`
      insert into message_fallbacks (message_id, accepted_at, api_key_id, reason, reason_code, state, decided_at,
        settled_at, provider, provider_message_id, provider_status)
      select id, accepted_at, api_key_id, 'whatsapp_undeliverable', '131026',
        case when n % 20 = 0 then 'failed' when n % 20 = 1 then 'unknown' else 'sent' end,
        failed_at, failed_at, 'twilio', case when n % 20 > 1 then 'SM' || md5(id::text) end,
        case when n % 20 > 1 then 'delivered' end
      from (select id, accepted_at, api_key_id, failed_at, row_number() over () as n
        from messages where status = 'failed') f
      where n % 2 = 0`
    await tx`
      insert into inbound_messages (id, platform_message_id, phone_number_id, phone, type, content, api_key_id,
        received_at, redact_after)
      select gen_random_uuid(), 'wamid.in.' || i, '106540352242922', '+5511' || (10000000 + i % 1000000)::text,
        case when i % 20 = 0 then 'image' else 'text' end,
        case when i % 20 = 0 then jsonb_build_object('media', jsonb_build_object('id', 'media-' || i))
          else '{"text":"ok"}'::jsonb end,
        case when i % 10 = 0 then null else ${key}::uuid end,
        now() - (i * interval '1 second'), case when i % 10 = 1 then now() + interval '1 day' end
      from generate_series(1, ${Math.max(1000, Math.round(count / 10))}) i`
  })
}
