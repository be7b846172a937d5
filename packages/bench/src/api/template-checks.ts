/**
 * The cost of the checks at the door (issue 21) on the accept path:
 *
 * - `send-template` from a key whose sender's catalog is synced (BENCH_TEMPLATES, 1,000 templates:
 *   the send is checked against its template, in memory) versus a key whose sender was never synced
 *   (nothing checked), in the same API process; autocannon, alternating rounds, medians. Aim ≥ 0.95×.
 * - `send-text` from a sender under `serviceWindowPolicy: enforce` (each send reads the recipient's
 *   window in Redis) versus one with the policy `off`, the same way.
 * - `send-template` from a sender under `messagingLimitPolicy: refuse` with a limit far above its
 *   portfolio's reach (10,000 recipients counted: the door reads the reach once a second, no send
 *   waits for it) versus the synced sender without a limit (issue 43); and from one whose limit is
 *   one above its reach (10,001: every send reads its window and the reach, as every send did
 *   before the door kept the reach a second) versus the same; then at the limit (a reach of 10,001,
 *   the limit 10,001): to a recipient reached before (counted in the reach) and to one whose window
 *   with the number is open, each taking no room: the door reads once what it then keeps (counted
 *   until 24 h after, open until the window closes), versus the same. A new recipient there is
 *   refused, after a read per turn: the send's answer is in Redis.
 * - The same pairs side by side: both sides loaded at once, half the connections each.
 * - Then both pairs in one process (`inject`, 50 in flight), CPU per send, BENCH_PAIRS pairs of
 *   BENCH_BATCH sends, the order alternating: the figure a shared machine does not blur.
 *
 *   pnpm --filter @dispatch/bench bench:template-checks   (BENCH_CONNECTIONS, BENCH_DURATION_S,
 *   BENCH_ROUNDS (0: the CPU pairs only), BENCH_TEMPLATES, BENCH_PAIRS, BENCH_BATCH; BENCH_ONLY=limit:
 *   the limit's pairs alone; BENCH_CONTROL=1: their limited senders under `off`, to read the noise)
 */

import { buildApp, createDeps, createLogger, parseApiConfig } from '@dispatch/api'
import { templateVariables } from '@dispatch/contracts'
import { createDb, hashApiKey, replaceSenderTemplates, type SyncedTemplate } from '@dispatch/db'
import {
  MESSAGING_LIMIT_WINDOW_MS,
  portfolioReachKey,
  recipientHasher,
  SERVICE_WINDOW_MS,
  serviceWindowKey,
  serviceWindowsLoadedKey,
} from '@dispatch/runtime'
import { Redis } from 'ioredis'
import { assertClean, autocannon, medianRun, type Run, settle } from '../harness/load.ts'
import { printComparison } from '../harness/report.ts'
import { median } from '../harness/stats.ts'
import { clearFairAdmission, createBenchWorld } from '../harness/world.ts'
import { startServer } from './child-server.ts'
import { approvedKey, pairedCpuPerSend } from './inject.ts'

const connections = Number(process.env.BENCH_CONNECTIONS ?? 100)
const duration = Number(process.env.BENCH_DURATION_S ?? 5)
const rounds = Number(process.env.BENCH_ROUNDS ?? 5)
const templates = Number(process.env.BENCH_TEMPLATES ?? 1000)
const pairs = Number(process.env.BENCH_PAIRS ?? 8)
const batch = Number(process.env.BENCH_BATCH ?? 2000)
/** BENCH_CONTROL=1: the limited senders' policy `off`, both sides of the limit's pairs alike: the pairing's own noise. */
const control = process.env.BENCH_CONTROL === '1'
const PHONE = '+5511987654321'
const templateBody = JSON.stringify({
  phone: PHONE,
  templateId: `notice_${Math.floor(templates / 2)}`,
  language: 'pt_BR',
  variables: { '1': 'Ana', '2': 'BR-1042' },
  headerVariables: [{ type: 'image', value: null, originalMediaId: 'media-123' }],
  buttonVariables: [{ buttonIndex: 0, text: 'track/BR-1042', type: 'URL' }],
})
const textBody = JSON.stringify({ phone: PHONE, text: 'Your table is ready' })
/** At the limit, a recipient whose window with the number is open (not counted in the reach). */
const OPEN_PHONE = '+5511987650000'
const openTemplateBody = templateBody.replace(PHONE, OPEN_PHONE)

/** A catalog like a busy account's: every template with an image header, two variables and a URL button. */
const catalog = (): SyncedTemplate[] =>
  Array.from({ length: templates }, (_, i) => {
    const components = [
      { type: 'HEADER', format: 'IMAGE' },
      { type: 'BODY', text: 'Olá {{1}}, seu pedido {{2}} foi enviado.' },
      { type: 'BUTTONS', buttons: [{ type: 'URL', text: 'Rastrear', url: 'https://acme.test/{{1}}' }] },
    ]
    return {
      platformTemplateId: String(7_000_000 + i),
      name: `notice_${i}`,
      language: 'pt_BR',
      status: 'APPROVED',
      rejectedReason: null,
      category: 'UTILITY',
      quality: 'GREEN',
      parameterFormat: 'POSITIONAL',
      components,
      variables: templateVariables(components, 'POSITIONAL'),
    }
  })

const world = await createBenchWorld('template_checks')
// A key stores tens of thousands of messages a round at this machine's best (drained between
// rounds): a bound far above that, as bench:accept has, so no send is refused for it.
const env = {
  DATABASE_URL: world.databaseUrl,
  REDIS_URL: world.redisUrl,
  QUEUE_PREFIX: world.queuePrefix,
  MESSAGE_OUTSTANDING_MAX: '100000000',
  // Set, so the bench hashes a recipient into a reach as the API does.
  ERASURE_HASH_KEY: 'bench-template-checks-erasure-hash-key',
}
const redis = new Redis(world.redisUrl, { maxRetriesPerRequest: null })
const { db, sql, close: closeDb } = createDb(world.databaseUrl, { max: 2 })

/** The senders (synced or not; enforce or off; limited), a key bound to each. Made before any API starts. */
async function setUp() {
  const setup = await inProcessApp()
  const senders = {
    checked: { id: 'bench-synced', phoneNumberId: '900000000000001', policy: 'off' },
    unchecked: { id: 'bench-unsynced', phoneNumberId: '900000000000002', policy: 'off' },
    enforce: { id: 'bench-enforce', phoneNumberId: '900000000000003', policy: 'enforce' },
    off: { id: 'bench-off', phoneNumberId: '900000000000004', policy: 'off' },
    limited: { id: 'bench-limited', phoneNumberId: '900000000000005', policy: 'off' },
    nearLimit: { id: 'bench-near-limit', phoneNumberId: '900000000000006', policy: 'off' },
    atLimit: { id: 'bench-at-limit', phoneNumberId: '900000000000007', policy: 'off' },
  } as const
  const keys = {} as Record<keyof typeof senders, string>
  for (const [name, s] of Object.entries(senders) as Array<
    [keyof typeof senders, (typeof senders)[keyof typeof senders]]
  >) {
    await sql`insert into senders (id, phone_number_id, display_name, service_window_policy, waba_id)
      values (${s.id}, ${s.phoneNumberId}, ${name}, ${s.policy}, '910000000000001')`
    const key = await approvedKey(setup.app)
    await sql`update api_keys set sender_id = ${s.id} where key_hash = ${hashApiKey(key)}`
    keys[name] = key
  }
  await replaceSenderTemplates(db, senders.checked.id, catalog(), new Date())
  // The unchecked sender has the same templates, never synced: nothing is checked for it.
  await replaceSenderTemplates(db, senders.unchecked.id, catalog(), new Date())
  await sql`update senders set templates_synced_at = null where id = ${senders.unchecked.id}`
  // The limited senders: the same catalog, synced, under refuse, each its own portfolio that has
  // reached 10,000 recipients in the last 24 hours (read, never written, at accept); one's limit no
  // send comes near, the next's one above the reach (the bench's recipient, never counted, fits);
  // the last's reach holds the bench's recipient too, at its limit of 10,001.
  const now = Date.now()
  for (const [s, limit, business] of [
    [senders.limited, 1_000_000_000, '920000000000001'],
    [senders.nearLimit, 10_001, '920000000000002'],
    [senders.atLimit, 10_001, '920000000000003'],
  ] as const) {
    await replaceSenderTemplates(db, s.id, catalog(), new Date())
    await sql`update senders set messaging_limit_policy = ${control ? 'off' : 'refuse'}, messaging_limit_override = ${limit},
      business_id = ${business} where id = ${s.id}`
    const key = portfolioReachKey(world.queuePrefix, `business:${business}`)
    const reach = redis.pipeline()
    for (let i = 0; i < 10_000; i++) reach.zadd(key, now - i * 1000, `hmac:r${i}`)
    if (s === senders.atLimit) reach.zadd(key, now - 60_000, recipientHasher(env)(PHONE))
    reach.pexpire(key, MESSAGING_LIMIT_WINDOW_MS)
    await reach.exec()
  }
  await redis.set(
    serviceWindowKey(world.queuePrefix, senders.atLimit.phoneNumberId, OPEN_PHONE),
    String(Date.now()),
    'PX',
    SERVICE_WINDOW_MS,
  )
  // The recipient's window is open on both text senders (the enforced one reads it per send).
  for (const s of [senders.enforce, senders.off]) {
    await redis.set(
      serviceWindowKey(world.queuePrefix, s.phoneNumberId, PHONE),
      String(Date.now()),
      'PX',
      SERVICE_WINDOW_MS,
    )
  }
  await redis.set(serviceWindowsLoadedKey(world.queuePrefix), '1')
  await setup.app.close()
  return keys
}

async function inProcessApp() {
  const config = parseApiConfig({
    ...env,
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
    MESSAGE_RATE_PER_SECOND: '1000000000',
  })
  const app = await buildApp(createDeps(config, { logger: createLogger(config) }))
  await app.ready()
  return { app, key: '' }
}

const drain = async () => {
  await settle()
  return clearFairAdmission(redis, world.queuePrefix)
}

try {
  const keys = await setUp()
  const api = await startServer('app', env)
  const pairsToRun = [
    {
      name: 'send-template',
      path: 'send-template',
      body: templateBody,
      on: keys.checked,
      off: keys.unchecked,
      what: `catalog checks on (${templates} templates) vs a sender never synced`,
    },
    {
      name: 'send-text',
      path: 'send-text',
      body: textBody,
      on: keys.enforce,
      off: keys.off,
      what: 'window policy enforce (window read in Redis) vs off',
    },
    {
      name: 'send-template (limit)',
      path: 'send-template',
      body: templateBody,
      on: keys.limited,
      off: keys.checked,
      what: 'messaging limit under refuse, far from it (the reach read once a second) vs no limit',
    },
    {
      name: 'send-template (at the limit)',
      path: 'send-template',
      body: templateBody,
      on: keys.nearLimit,
      off: keys.checked,
      what: 'messaging limit under refuse, one under it, the recipient let through (read once a second) vs no limit',
    },
    {
      name: 'send-template (at the limit, reached before)',
      path: 'send-template',
      body: templateBody,
      on: keys.atLimit,
      off: keys.checked,
      what: 'messaging limit under refuse, at it, a recipient counted before (read once, then known) vs no limit',
    },
    {
      name: 'send-template (at the limit, window open)',
      path: 'send-template',
      body: openTemplateBody,
      on: keys.atLimit,
      off: keys.checked,
      what: 'messaging limit under refuse, at it, a recipient in an open window (read once, then known) vs no limit',
    },
  ].filter((pair) => process.env.BENCH_ONLY !== 'limit' || pair.name.includes('limit'))
  console.log(
    `checks at the door: ${connections} connections, ${rounds} rounds of ${duration} s per side, the API and` +
      ` autocannon in processes of their own; then ${pairs} pairs of ${batch} sends in one process`,
  )
  for (const pair of pairsToRun) {
    // BENCH_ROUNDS=0: only the CPU pairs in one process (below), the figure a loaded machine blurs least.
    if (rounds === 0) continue
    const url = `${api.url}/api/third-party/messages/${pair.path}`
    const sides = [
      { side: 'on', key: pair.on },
      { side: 'off', key: pair.off },
    ] as const
    for (const { key } of sides)
      await autocannon({ url, headers: { 'x-api-key': key }, body: pair.body, connections, seconds: 2 })
    await drain()
    const runs = { on: [] as Run[], off: [] as Run[] }
    for (let round = 1; round <= rounds; round++) {
      const line: string[] = []
      const order = round % 2 ? sides : [...sides].reverse()
      // The first run after a drain ran slower whichever side it was: an unmeasured second first.
      await autocannon({
        url,
        headers: { 'x-api-key': order[0].key },
        body: pair.body,
        connections,
        seconds: 1,
      })
      for (const { side, key } of order) {
        const run = await autocannon({
          url,
          headers: { 'x-api-key': key },
          body: pair.body,
          connections,
          seconds: duration,
        })
        assertClean(`${pair.name} ${side}`, run)
        runs[side].push(run)
        line.push(`${side} ${Math.round(run.requestsPerSecond)} req/s, p99 ${run.p99} ms`)
      }
      await drain()
      console.log(`  ${pair.name} round ${round}/${rounds}: ${line.join('; ')}`)
    }
    printComparison({
      name: `${pair.name} throughput, ${pair.what}`,
      figure: medianRun(runs.on).requestsPerSecond,
      baseline: medianRun(runs.off).requestsPerSecond,
      unit: 'req/s',
      better: 'higher',
      aim: '≥ 0.95',
    })
    // Both sides at the same moment, half the connections each: whatever the machine does then, it
    // does to both, so drift between rounds cancels out.
    const together = { on: [] as number[], off: [] as number[] }
    for (let round = 1; round <= rounds; round++) {
      const [on, off] = await Promise.all(
        sides.map(({ key }) =>
          autocannon({
            url,
            headers: { 'x-api-key': key },
            body: pair.body,
            connections: connections / 2,
            seconds: duration,
          }),
        ),
      )
      together.on.push((on as Run).requestsPerSecond)
      together.off.push((off as Run).requestsPerSecond)
      await drain()
    }
    console.log(
      `  ${pair.name} side by side: on ${together.on.map(Math.round).join(', ')} req/s; off ${together.off.map(Math.round).join(', ')} req/s`,
    )
    printComparison({
      name: `${pair.name} throughput side by side (${connections / 2} connections each), ${pair.what}`,
      figure: median(together.on),
      baseline: median(together.off),
      unit: 'req/s',
      better: 'higher',
      aim: '≥ 0.95',
    })
  }
  await api.stop()

  const app = (await inProcessApp()).app
  try {
    for (const pair of pairsToRun) {
      const cpu = await pairedCpuPerSend(
        { on: { app, key: pair.on }, off: { app, key: pair.off } },
        {
          body: pair.body,
          count: batch,
          pairs,
          path: pair.path,
          between: () => clearFairAdmission(redis, world.queuePrefix),
        },
      )
      const ratios = cpu.on.map((on, i) => on / (cpu.off[i] ?? on))
      console.log(
        `  ${pair.name} CPU per send, on/off per pair: ${ratios.map((r) => r.toFixed(3)).join(', ')} (median ${median(ratios).toFixed(3)})`,
      )
      printComparison({
        name: `${pair.name} CPU per send in one process, ${pair.what}`,
        figure: median(cpu.on),
        baseline: median(cpu.off),
        unit: 'µs',
        better: 'lower',
        aim: '≤ 1.05',
      })
    }
  } finally {
    await app.close()
  }
} finally {
  await drain().catch(() => {})
  redis.disconnect()
  await closeDb()
  await world.drop()
}
