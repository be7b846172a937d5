/**
 * Every console and portal page at 10 M messages (issue 45: "every page answers in ≤ 1 s with 10 M
 * messages in the database"). Over the messages `bench:message-search` generates (the same generator,
 * message-search-generate.ts: MESSAGE_SEARCH_ROWS, default 10,000,000, over MESSAGE_SEARCH_KEYS keys,
 * one busy key with 30 % of them), it writes the other rows a service of that size has (`seedPageRows`):
 * 20 senders with 200 templates each, suppressions, webhook endpoints and, for the busy key's
 * messages of the last 30 days (the webhooks' retention), an event each and its delivery attempts to
 * one endpoint, three failed attempts per failed message, a few campaigns whose recipients are
 * existing messages with their tallies, and replies to one of them.
 *
 * Then it opens each page as the browser does: every call the page makes at once (its queries fire
 * together), timed until the last answers, through HTTP against the real API (an admin's token, the
 * busy key for the portal), for ids drawn afresh each time (a random message, key, sender, campaign).
 * The pages are visited in rounds, in a new order each round, so each sees the same machine. The
 * overview keeps its answer 5 s per range: each range is asked again only after that (its answer's
 * `generatedAt` checked), so every sample computes it. Each page's p50/p95 against the 1-s aim, its
 * slowest call's, and a table for docs/benchmarks-paths.md.
 *
 *   pnpm --filter @dispatch/bench bench:console-pages
 *   MESSAGE_SEARCH_ROWS=1000000 BENCH_SAMPLES=40 BENCH_KEEP_DB=1 BENCH_REUSE_DB=<url> (all optional)
 *
 * Runs in a database of its own, dropped at the end; BENCH_KEEP_DB=1 keeps it (for `EXPLAIN`),
 * BENCH_REUSE_DB=<its url> measures over it again without generating (one kept by
 * bench:message-search too: the other rows are written once, when missing).
 */

import { cpus, loadavg } from 'node:os'
import { Scopes } from '@dispatch/contracts'
import { generateApiKey } from '@dispatch/db'
import postgres from 'postgres'
import { millions, secondsSince } from '../harness/format.ts'
import { keepAliveGet } from '../harness/http.ts'
import { printFigure } from '../harness/report.ts'
import { median, p95 } from '../harness/stats.ts'
import { keyIdSql, listenSearchApi, prepareSearchWorld, searchMessages } from './message-search-generate.ts'

const layout = searchMessages()
const { total, keyCount } = layout
const rounds = Number(process.env.BENCH_SAMPLES ?? 40)
const WARMUP_ROUNDS = 2
/** A console page's aim (issue 45): it answers within a second. */
const PAGE_AIM_MS = 1000
/** The overview's cache (apps/api/src/routes/admin/overview.ts), and a margin. */
const OVERVIEW_AGAIN_MS = 5_200
const SENDERS = 20
const TEMPLATES_PER_SENDER = 200
const CAMPAIGNS = 10
/** A busy campaign's recipients: 50,000 at 10 M messages. */
const campaignSize = Math.max(1_000, Math.floor(total / 200))
const DEFAULT_PHONE_NUMBER_ID = '106540352242922'

/**
 * The rows besides the messages, set-based, as a restore writes them (triggers off); skipped when a
 * reused database has them already.
 */
async function seedPageRows(sql: postgres.Sql, busyKeyId: string) {
  const [done] = await sql`select 1 from campaigns where id = md5('bench-pages-campaign-0')::uuid`
  if (done) return console.log('the other rows are there already')
  const otherKeyId = await keyIdOf(sql, 1)
  const started = performance.now()
  console.log('writing the other rows a service of this size has …')
  // One transaction: a run stopped midway leaves none of them, and the next writes them all.
  await sql.begin(async (tx) => {
    await tx`set local session_replication_role = replica`
    const step = async (what: string, run: () => Promise<unknown>) => {
      const at = performance.now()
      const result = await run()
      const count = (result as { count?: number }).count
      console.log(
        `  ${what}${count === undefined ? '' : `: ${count.toLocaleString('en-US')} rows`} (${secondsSince(at)})`,
      )
    }
    await step(
      'senders',
      () => tx`
    insert into senders (id, phone_number_id, display_name)
    select case when i = 0 then 'default' else md5('bench-pages-sender-' || i)::uuid::text end,
      case when i = 0 then ${DEFAULT_PHONE_NUMBER_ID} else (200000000000000 + i)::text end, 'Sender ' || i
    from generate_series(0, ${SENDERS - 1}::int) i
    on conflict do nothing`,
    )
    await step(
      'templates',
      () => tx`
    insert into message_templates (sender_id, platform_template_id, name, language, status, components, variables,
      synced_at, updated_at)
    select s.id, s.id || '-' || n, 'template_' || n, case when n % 4 = 0 then 'en_US' else 'pt_BR' end,
      case when n % 10 = 0 then 'REJECTED' else 'APPROVED' end,
      '[{"type":"BODY","text":"Olá {{1}}, seu pedido {{2}} foi enviado"}]'::jsonb,
      '{"parameterFormat":"positional","body":["1","2"],"header":null,"buttons":[]}'::jsonb,
      now(), now() - n * interval '1 hour'
    from senders s cross join generate_series(1, ${TEMPLATES_PER_SENDER}::int) n`,
    )
    // One opt-out per 200 messages, on the default number, over the 90 days.
    await step(
      'suppressions',
      () => tx`
    insert into suppressions (phone_number_id, sender_id, recipient, scope, source, created_by, created_at)
    select ${DEFAULT_PHONE_NUMBER_ID}, 'default', '+5521' || (100000000 + i)::text,
      case when i % 3 = 0 then 'all' else 'marketing' end, case when i % 3 = 0 then 'admin' else 'keyword' end,
      'platform', now() - (i % 90) * interval '1 day' - (i % 86400) * interval '1 second'
    from generate_series(1, ${Math.max(1_000, Math.floor(total / 200))}::int) i
    on conflict do nothing`,
    )
    await step('webhook endpoints', () =>
      tx.unsafe(`
    insert into webhook_endpoints (id, api_key_id, url, secret, events, created_at)
    select md5('bench-pages-endpoint-' || k || '-' || e)::uuid, ${keyIdSql('k')},
      'https://hooks.bench.test/' || k || '/' || e, 'whsec_' || md5(k || '-' || e),
      '{message.sent,message.delivered,message.read,message.failed}', now() - (k + e) * interval '1 hour'
    from generate_series(0, ${Math.min(50, keyCount - 1)}) k cross join generate_series(0, 2) e
    where k = 0 or e = 0`),
    )
    // The busy key's messages of the last 30 days (webhook events' retention): one event each.
    await step(
      'webhook events',
      () => tx`
    insert into webhook_events (id, api_key_id, type, message_id, sequence, payload, created_at)
    select 'msg_' || lpad(to_hex((extract(epoch from m.updated_at) * 1000)::bigint), 12, '0')
        || '7' || substr(md5(m.id::text), 1, 19),
      m.api_key_id, 'message.' || m.status, m.id, 1,
      jsonb_build_object('type', 'message.' || m.status, 'timestamp', m.updated_at, 'data',
        jsonb_build_object('messageId', m.id, 'clientReference', m.client_reference, 'status', m.status,
          'sequence', 1, 'phone', m.phone)),
      m.updated_at
    from messages m
    where m.api_key_id = ${busyKeyId} and m.accepted_at >= now() - interval '30 days'
      and m.status in ('sent', 'delivered', 'read', 'failed')`,
    )
    // Each delivered to the busy key's first endpoint; one in twenty answered 500, then again a minute later.
    const endpoint = `md5('bench-pages-endpoint-0-0')::uuid`
    await step('webhook attempts', () =>
      tx.unsafe(`
    insert into webhook_attempts (endpoint_id, event_id, attempt, status_code, duration_ms, response_excerpt, error,
      created_at)
    select ${endpoint}, v.id, a, case when a = 1 and h % 20 = 0 then 500 else 200 end, 40 + h % 200,
      case when a = 1 and h % 20 = 0 then 'upstream unavailable' else 'ok' end,
      case when a = 1 and h % 20 = 0 then 'HTTP 500' end, v.created_at + (a - 1) * interval '1 minute'
    from (select id, created_at, abs(hashtext(id)) as h from webhook_events) v
      cross join generate_series(1, 2) a
    where a = 1 or h % 20 = 0`),
    )
    await step(
      'message attempts (three per failed message)',
      () => tx`
    insert into message_attempts (message_id, attempt, outcome, error_code, error_message, created_at)
    select id, a, 'failed', '131026', 'Message undeliverable', failed_at - (3 - a) * interval '1 second'
    from messages cross join generate_series(1, 3) a where status = 'failed'`,
    )
    // Campaigns of the busy key, each over existing messages of its day (their batch id set), the
    // newest one still running; two small ones of another key.
    for (let c = 0; c < CAMPAIGNS + 2; c++) {
      const own = c < CAMPAIGNS
      const size = own ? campaignSize : 1_000
      const keyId = own ? busyKeyId : otherKeyId
      const startedAt = new Date(Date.now() - (c + 1) * 3 * 86_400_000)
      const id = `md5('bench-pages-campaign-${c}')::uuid`
      await step(`campaign ${c} (${size.toLocaleString('en-US')} recipients)`, async () => {
        const audience = {
          rows: size,
          taken: size,
          skipped: 0,
          skippedByReason: {},
          format: 'csv',
          uploadedAt: new Date(startedAt.getTime() - 600_000).toISOString(),
        }
        await tx.unsafe(
          `insert into campaigns (id, api_key_id, sender_id, name, template, status, audience, fed_through,
           confirmed_through, fed_rows, created_at, started_at, completed_at, progress_at)
         values (${id}, $1, 'default', $2, '{"templateId":"template_1","language":"pt_BR"}'::jsonb, $3, $4::jsonb,
           $5, $5, $5, $6::timestamptz - interval '1 hour', $6::timestamptz, $7, $6::timestamptz)`,
          [
            keyId,
            `Campaign ${c + 1}`,
            c === 0 ? 'running' : 'completed',
            JSON.stringify(audience),
            size,
            startedAt.toISOString(),
            c === 0 ? null : new Date(startedAt.getTime() + 3_600_000).toISOString(),
          ],
        )
        await tx.unsafe(
          `with picked as (
           select id, accepted_at, phone, row_number() over (order by accepted_at, id) as line from (
             select id, accepted_at, phone from messages
             where api_key_id = $1 and accepted_at >= $2::timestamptz order by accepted_at limit $3) m),
         marked as (
           update messages m set batch_id = ${id} from picked p
           where m.id = p.id and m.accepted_at = p.accepted_at returning m.id)
         insert into campaign_recipients (campaign_id, line, phone, variables, state, message_id)
         select ${id}, line, phone, '{"1":"Ana","2":"BR-1042"}', 'fed', id from picked`,
          [keyId, startedAt.toISOString(), size],
        )
        return tx.unsafe(
          `insert into campaign_tallies (campaign_id, status, error_code, billable, category, n)
         select batch_id, status, case when status in ('failed', 'expired') then coalesce(last_error_code, '') else '' end,
           false, '', count(*)::int
         from messages where api_key_id = $1 and batch_id = ${id} group by 1, 2, 3`,
          [keyId],
        )
      })
    }
    // Replies from a thousand recipients of the running campaign (what its engagement counts).
    await step(
      'replies',
      () => tx`
    insert into inbound_messages (id, platform_message_id, phone_number_id, phone, type, content, api_key_id,
      received_at)
    select gen_random_uuid(), 'wamid.in.pages.' || r.line, ${DEFAULT_PHONE_NUMBER_ID}, r.phone, 'text',
      '{"text":"obrigado"}'::jsonb, ${busyKeyId}, now() - (r.line % 3600) * interval '1 second'
    from campaign_recipients r where r.campaign_id = md5('bench-pages-campaign-0')::uuid and r.line <= 1000`,
    )
    // Written with triggers off (replica), as a restore: every campaign's engagement counted in
    // full from the replies and opt-outs above, as migration 0051 counts it for the campaigns there are.
    await step(
      'campaign engagement',
      () => tx`select dispatch_campaign_engagement_recount(id) from campaigns`,
    )
  })
  const analyzing = performance.now()
  for (const table of [
    'senders',
    'message_templates',
    'suppressions',
    'webhook_endpoints',
    'webhook_events',
    'webhook_attempts',
    'message_attempts',
    'campaigns',
    'campaign_recipients',
    'campaign_tallies',
    'campaign_engagement',
    'inbound_messages',
    'messages',
  ])
    await sql.unsafe(`vacuum analyze ${table}`)
  console.log(`  vacuum analyze: ${secondsSince(analyzing)}; the other rows in ${secondsSince(started)}`)
}

async function keyIdOf(sql: postgres.Sql, k: number) {
  const [row] = await sql.unsafe<{ id: string }[]>(`select ${keyIdSql('$1::int')}::text as id`, [k])
  return row?.id as string
}

const world = await prepareSearchWorld('console_pages', layout)
const sql = postgres(world.databaseUrl, { max: 2, onnotice: () => {} })
const busyKeyId = await keyIdOf(sql, 0)
await seedPageRows(sql, busyKeyId)
// The busy key signs in to the portal: a fresh key value (only its hash is stored) and every scope.
const { key, keyHash, keyPrefix } = generateApiKey('development')
await sql`
  update api_keys set key_hash = ${keyHash}, key_prefix = ${keyPrefix}, client_name = 'Busy client',
    scopes = ${`{${Object.values(Scopes).join(',')}}`}::text[]
  where id = ${busyKeyId}`

/** Ids to open pages with, drawn from the database (a random page's rows, not the first ones). */
const ids = async (query: string, params: unknown[] = []) =>
  (await sql.unsafe<{ id: string }[]>(query, params as never)).map((row) => row.id)
const shuffled = <T>(values: T[]) => values.toSorted(() => Math.random() - 0.5)
const want = rounds + WARMUP_ROUNDS
const anyMessages = shuffled(
  await ids(`select id::text from messages tablesample system (0.2) limit ${want * 4}`),
)
const failedMessages = shuffled(
  await ids(`select id::text from messages tablesample system (1) where status = 'failed' limit ${want * 2}`),
)
const busyRecent = shuffled(
  await ids(
    `select id::text from messages tablesample system (2)
     where api_key_id = $1 and accepted_at >= now() - interval '30 days' limit ${want * 2}`,
    [busyKeyId],
  ),
)
const keyIds = shuffled(await ids('select id::text from api_keys'))
const senderIds = shuffled(await ids('select id from senders'))
const ownCampaigns = await ids('select id::text from campaigns where api_key_id = $1', [busyKeyId])
const allCampaigns = await ids('select id::text from campaigns')
const busyEndpoint = (await ids(`select md5('bench-pages-endpoint-0-0')::uuid::text as id`))[0] as string
const ownEndpoints = await ids('select id::text from webhook_endpoints where api_key_id = $1 and id <> $2', [
  busyKeyId,
  busyEndpoint,
])
const attemptEvents = shuffled(
  await ids(
    `select event_id as id from webhook_attempts tablesample system (1) where endpoint_id = $1 limit ${want}`,
    [busyEndpoint],
  ),
)
const [counts] = await sql`
  select (select count(*) from webhook_attempts where endpoint_id = ${busyEndpoint})::int as attempts,
    (select count(*) from webhook_events)::int as events, (select count(*) from message_attempts)::int as failures,
    (select count(*) from suppressions)::int as suppressions, (select count(*) from message_templates)::int as templates`
console.log(
  `over ${millions(total)} messages: ${counts?.events.toLocaleString('en-US')} webhook events, the busy endpoint's ` +
    `${counts?.attempts.toLocaleString('en-US')} attempts, ${counts?.failures.toLocaleString('en-US')} failed ` +
    `delivery attempts, ${counts?.suppressions.toLocaleString('en-US')} suppressions, ` +
    `${counts?.templates.toLocaleString('en-US')} templates, ${allCampaigns.length} campaigns ` +
    `(${campaignSize.toLocaleString('en-US')} recipients each of the busy key's)`,
)

const adminToken = 'bench-pages-admin-token'
const { app, address } = await listenSearchApi(world, adminToken)
// As many connections as a browser opens to one host: a page's calls go at once.
const http = keepAliveGet({ maxSockets: 6 })

/** The query strings the console's lists send (packages/console/src/api.ts, `paging`). */
const paging = (take: number, extra: Record<string, string> = {}) =>
  `?${new URLSearchParams({ page: '1', take: String(take), order: 'DESC', orderField: 'createdAt', ...extra })}`
const SENDER_OPTIONS = `/api/admin/senders${paging(100)}`

interface Page {
  name: string
  scope: 'admin' | 'key'
  /** The page's calls, as it makes them, for the `j`-th visit. */
  calls: (j: number) => string[]
  /** The overview's range: asked again only once its cached answer is stale. */
  overview?: string
}
const at = <T>(values: T[], j: number) => values[j % values.length] as T
const pages: Page[] = [
  ...['1h', '24h', '7d'].map(
    (range): Page => ({
      name: `Overview, ${range}`,
      scope: 'admin',
      calls: () => [`/api/admin/overview?range=${range}`, SENDER_OPTIONS],
      overview: range,
    }),
  ),
  {
    name: 'Key requests',
    scope: 'admin',
    calls: () => [`/api/admin/api-keys${paging(100, { status: 'pending' })}`, SENDER_OPTIONS],
  },
  { name: 'Keys', scope: 'admin', calls: () => [`/api/admin/api-keys${paging(25)}`] },
  {
    name: 'A key',
    scope: 'admin',
    calls: (j) => [
      `/api/admin/api-keys/${at(keyIds, j)}`,
      SENDER_OPTIONS,
      `/api/admin/sender-pools?${new URLSearchParams({ page: '1', take: '100', order: 'ASC', orderField: 'name' })}`,
    ],
  },
  { name: 'Senders', scope: 'admin', calls: () => [`/api/admin/senders${paging(25)}`] },
  ...[
    { name: 'A sender', ids: senderIds },
    { name: 'The default sender (its suppressions)', ids: ['default'] },
  ].map(
    ({ name, ids: senders }): Page => ({
      name,
      scope: 'admin',
      calls: (j) => {
        const id = encodeURIComponent(at(senders, j))
        return [
          `/api/admin/senders/${id}`,
          `/api/admin/senders/${id}/templates${paging(100, { orderField: 'updatedAt' })}`,
          `/api/admin/suppressions${paging(50, { senderId: at(senders, j) })}`,
        ]
      },
    }),
  ),
  {
    name: 'Sender pools',
    scope: 'admin',
    calls: () => [`/api/admin/sender-pools${paging(10)}`, SENDER_OPTIONS],
  },
  { name: 'Messages', scope: 'admin', calls: () => [`/api/admin/messages${paging(25)}`] },
  { name: 'A message', scope: 'admin', calls: (j) => [`/api/admin/messages/${at(anyMessages, j)}/timeline`] },
  {
    name: 'A failed message',
    scope: 'admin',
    calls: (j) => [`/api/admin/messages/${at(failedMessages, j)}/timeline`],
  },
  {
    name: 'A message with webhook events',
    scope: 'admin',
    calls: (j) => [`/api/admin/messages/${at(busyRecent, j)}/timeline`],
  },
  { name: 'Campaigns', scope: 'admin', calls: () => ['/api/admin/campaigns'] },
  {
    name: 'A campaign',
    scope: 'admin',
    calls: (j) => [
      `/api/admin/campaigns/${at(allCampaigns, j)}`,
      `/api/admin/campaigns/${at(allCampaigns, j)}/recipients?take=25&after=0`,
    ],
  },
  { name: 'Queues', scope: 'admin', calls: () => ['/api/admin/queues', SENDER_OPTIONS] },
  { name: 'Portal: messages', scope: 'key', calls: () => [`/api/third-party/messages${paging(25)}`] },
  {
    name: 'Portal: a message',
    scope: 'key',
    calls: (j) => [`/api/third-party/messages/${at(busyRecent, j)}/timeline`],
  },
  { name: 'Portal: campaigns', scope: 'key', calls: () => ['/api/third-party/campaigns'] },
  {
    name: 'Portal: a campaign',
    scope: 'key',
    calls: (j) => [
      `/api/third-party/campaigns/${at(ownCampaigns, j)}`,
      `/api/third-party/campaigns/${at(ownCampaigns, j)}/recipients?take=25&after=0`,
      '/api/third-party/messaging-limit',
    ],
  },
  {
    name: 'Portal: new campaign, send a test (templates)',
    scope: 'key',
    calls: () => [
      `/api/third-party/templates?${new URLSearchParams({ page: '1', take: '1000', order: 'ASC', orderField: 'name', status: 'APPROVED' })}`,
    ],
  },
  {
    name: 'Portal: webhooks',
    scope: 'key',
    calls: () => [`/api/third-party/webhook-endpoints${paging(100)}`],
  },
  {
    name: 'Portal: a webhook endpoint',
    scope: 'key',
    calls: (j) => {
      const id = at(ownEndpoints, j)
      return [
        `/api/third-party/webhook-endpoints/${id}`,
        `/api/third-party/webhook-endpoints/${id}/attempts?page=1&take=25&order=DESC`,
        '/api/third-party/webhook-event-types',
      ]
    },
  },
  {
    name: 'Portal: the busy webhook endpoint',
    scope: 'key',
    calls: () => [
      `/api/third-party/webhook-endpoints/${busyEndpoint}`,
      `/api/third-party/webhook-endpoints/${busyEndpoint}/attempts?page=1&take=25&order=DESC`,
      '/api/third-party/webhook-event-types',
    ],
  },
  {
    name: 'Portal: an attempt opened',
    scope: 'key',
    calls: (j) => [`/api/third-party/webhook-endpoints/${busyEndpoint}/events/${at(attemptEvents, j)}`],
  },
  { name: 'Portal: limits and usage', scope: 'key', calls: () => ['/api/api-keys/me'] },
]

const headersOf = (page: Page): Record<string, string> =>
  page.scope === 'admin' ? { authorization: `Bearer ${adminToken}` } : { 'x-api-key': key }
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const lastOverview = new Map<string, number>()

/** One visit: every call at once; the page's time is the last answer's. */
async function visit(page: Page, j: number) {
  if (page.overview) {
    const wait = (lastOverview.get(page.overview) ?? 0) + OVERVIEW_AGAIN_MS - Date.now()
    if (wait > 0) await sleep(wait)
  }
  const started = performance.now()
  const startedAt = Date.now()
  const calls = page.calls(j)
  const times = await Promise.all(
    calls.map(async (path) => {
      const response = await http.get(`${address}${path}`, headersOf(page))
      if (response.status !== 200)
        throw new Error(`${page.name}: ${path} → ${response.status} ${response.body}`)
      if (path.startsWith('/api/admin/overview')) {
        const generated = Date.parse((JSON.parse(response.body) as { generatedAt: string }).generatedAt)
        if (generated < startedAt - 50) throw new Error(`${page.name}: a cached overview (${generated})`)
      }
      return { path, ms: performance.now() - started }
    }),
  )
  if (page.overview) lastOverview.set(page.overview, Date.now())
  return { ms: performance.now() - started, calls: times }
}

const results = new Map<string, { page: number[]; calls: Map<string, number[]> }>(
  pages.map((page) => [page.name, { page: [], calls: new Map() }]),
)
/** A call's name without its ids and query string, so a page's visits add up per call. */
const callName = (path: string) =>
  path
    .split('?')[0]
    ?.replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, ':id')
    .replace(/msg_[0-9a-z]{32}/g, ':eventId')
    .replace(/\/senders\/[^/]+/, '/senders/:id') ?? path

const ms = (v: number) => v.toLocaleString('en-US', { maximumFractionDigits: 1, minimumFractionDigits: 1 })
try {
  const measuring = performance.now()
  const loads: number[] = []
  console.log(
    `${pages.length} pages, ${rounds} visits each (after ${WARMUP_ROUNDS} unrecorded), in rounds of a new order; aim p95 ≤ ${PAGE_AIM_MS} ms`,
  )
  for (let round = 0; round < want; round++) {
    for (const page of shuffled(pages)) {
      const { ms: took, calls } = await visit(page, round)
      if (round < WARMUP_ROUNDS) continue
      const result = results.get(page.name)
      if (!result) continue
      result.page.push(took)
      for (const call of calls) {
        const name = callName(call.path)
        result.calls.set(name, [...(result.calls.get(name) ?? []), call.ms])
      }
    }
    loads.push(loadavg()[0] ?? 0)
    if (round % 10 === 9) console.log(`  round ${round + 1} / ${want} (${secondsSince(measuring)})`)
  }
  const rows: string[] = []
  for (const page of pages) {
    const result = results.get(page.name)
    if (!result) continue
    const p = { p50: median(result.page), p95: p95(result.page) }
    const slowest = [...result.calls.entries()]
      .map(([name, times]) => ({ name, p50: median(times), p95: p95(times) }))
      .sort((a, b) => b.p95 - a.p95)
    const calls = [...result.calls.keys()]
    printFigure({
      name: `  ${page.name} p95 [${calls.length} call${calls.length > 1 ? 's' : ''}, ${result.page.length} visits]`,
      figure: p.p95,
      unit: 'ms',
      better: 'lower',
      aim: `p95 ≤ ${PAGE_AIM_MS} ms`,
    })
    console.log(`    p50 ${ms(p.p50)} ms; calls (p50 / p95 ms, slowest first):`)
    for (const call of slowest) console.log(`      ${call.name}: ${ms(call.p50)} / ${ms(call.p95)}`)
    rows.push(
      `| ${page.name} | ${calls.map((c) => `\`${c}\``).join(', ')} | ${ms(p.p50)} | ${ms(p.p95)} | ${p.p95 <= PAGE_AIM_MS ? 'yes' : 'NO'} |`,
    )
  }
  const sorted = loads.toSorted((a, b) => a - b)
  console.log(
    `\nmeasured in ${secondsSince(measuring)}; load average (1 min) ${sorted[0]?.toFixed(1)}–${sorted.at(-1)?.toFixed(1)} on ${cpus().length} cores`,
  )
  console.log(`\n| page | calls | p50 ms | p95 ms | ≤ ${PAGE_AIM_MS} ms |`)
  console.log('| --- | --- | --- | --- | --- |')
  for (const row of rows) console.log(row)
} finally {
  http.close()
  await app.close()
  await sql.end()
  if (process.env.BENCH_KEEP_DB || process.env.BENCH_REUSE_DB) console.log(`kept ${world.databaseUrl}`)
  else if ('drop' in world) await world.drop()
}
