/**
 * The cost of consent on the accept path (issue 23): a sender with BENCH_SUPPRESSED recipients
 * (1,000,000) on its suppression list (the Redis copy, marked complete: what the API reads) and a
 * frequency cap on marketing, versus a sender with neither, a key of each on the same API process:
 *
 * - `send-text` to a recipient not on the list (its entry is read in Redis, on both senders);
 * - a batch of BENCH_BATCH_SIZE (100) texts to as many recipients; and the same with a share
 *   BENCH_BATCH_MARKETING (0.5; 0 leaves this one out) of them MARKETING templates spread through it;
 * - `send-template` of a MARKETING template (the entry read, then the send counted against the cap:
 *   one Redis script per marketing message, on the capped sender only).
 *
 * Every message goes to a recipient never used before (`numbered` bodies), so the cap counts each
 * afresh and every send is accepted. Per pair: autocannon, alternating rounds, medians; both sides
 * at once, half the connections each; then CPU per request in one process (`inject`, 50 in flight,
 * BENCH_PAIRS pairs of BENCH_SENDS sends or BENCH_BATCHES batches, the order alternating): the
 * steadier figure on a shared machine. Aim ≥ 0.95×. Last, what each side asks of Redis per
 * message, counted, and the redis-server's CPU (a server of the benchmark's own).
 *
 *   pnpm --filter @dispatch/bench bench:consent   (BENCH_SUPPRESSED, BENCH_CONNECTIONS,
 *   BENCH_BATCH_CONNECTIONS, BENCH_DURATION_S, BENCH_ROUNDS, BENCH_BATCH_SIZE, BENCH_BATCH_MARKETING,
 *   BENCH_PAIRS, BENCH_SENDS, BENCH_BATCHES, REDIS_SERVER: the binary)
 */

import { buildApp, createDeps, createLogger, parseApiConfig } from '@dispatch/api'
import { templateVariables } from '@dispatch/contracts'
import { createDb, hashApiKey, replaceSenderTemplates, type SyncedTemplate } from '@dispatch/db'
import { recipientHasher, suppressionKey, suppressionsLoadedKey } from '@dispatch/runtime'
import { Redis } from 'ioredis'
import {
  assertClean,
  autocannon,
  medianRun,
  NUMBER,
  numberedBodies,
  type Run,
  settle,
} from '../harness/load.ts'
import { commandCounts, printCountTable, redisCpuSeconds, startRedisServer } from '../harness/redis-server.ts'
import { printComparison } from '../harness/report.ts'
import { median } from '../harness/stats.ts'
import { clearFairAdmission, createBenchWorld } from '../harness/world.ts'
import { startServer } from './child-server.ts'
import { approvedKey, cpuPerInjectedSend, pairedCpuPerSend } from './inject.ts'

const suppressed = Number(process.env.BENCH_SUPPRESSED ?? 1_000_000)
const connections = Number(process.env.BENCH_CONNECTIONS ?? 100)
const batchConnections = Number(process.env.BENCH_BATCH_CONNECTIONS ?? 10)
const duration = Number(process.env.BENCH_DURATION_S ?? 4)
const rounds = Number(process.env.BENCH_ROUNDS ?? 3)
const batchSize = Number(process.env.BENCH_BATCH_SIZE ?? 100)
const batchMarketing = Number(process.env.BENCH_BATCH_MARKETING ?? 0.5)
// Pairs much shorter than this measure the VM's hiccups more than the sends (24 pairs of 500 sends
// spread 0.39 to 2.55 on/off here with no difference in the work).
const pairs = Number(process.env.BENCH_PAIRS ?? 10)
const sends = Number(process.env.BENCH_SENDS ?? 1500)
const batches = Number(process.env.BENCH_BATCHES ?? 60)
/** A cap as an admin would set it: two marketing messages per recipient a day. */
const CAP = { count: 2, hours: 24 }

/**
 * Quiet hours on the `on` key, worked out for every send but holding none: a minute of São Paulo's
 * day twelve hours from now (every Brazilian zone is within three hours of it).
 */
const saoPauloIn12h = new Intl.DateTimeFormat('en-GB', {
  timeZone: 'America/Sao_Paulo',
  hour: '2-digit',
  minute: '2-digit',
  hourCycle: 'h23',
})
const QUIET_HOURS = {
  start: saoPauloIn12h.format(Date.now() + 12 * 3_600_000),
  end: saoPauloIn12h.format(Date.now() + 12 * 3_600_000 + 60_000),
}

/**
 * The senders compared: `on` with everything consent reads at accept, `off` with none of it.
 * `settings` is the admin's `PATCH /api/admin/senders/:id` body, `keySettings` what is set on its
 * key (quiet hours); a check to be measured on its own is one more sender here and a pair naming it
 * below.
 */
const SENDERS = {
  on: {
    id: 'b0000000-0000-4000-8000-000000000021',
    phoneNumberId: '900000000000021',
    suppressed,
    settings: { marketingCap: CAP },
    keySettings: { quietHours: QUIET_HOURS },
    label: `${suppressed.toLocaleString('en-US')} suppressed, cap ${CAP.count}/${CAP.hours} h, quiet hours`,
  },
  off: {
    id: 'b0000000-0000-4000-8000-000000000022',
    phoneNumberId: '900000000000022',
    suppressed: 0,
    settings: {},
    keySettings: { quietHours: null },
    label: 'no list, no cap, no quiet hours',
  },
} as const
type SenderName = keyof typeof SENDERS

/** The list's recipients (`+5511900000000` on), none of whom the measured sends go to (`+5531…`). */
const listed = (i: number) => `+5511${900_000_000 + i}`
/** A quarter opted out of everything, the rest of marketing only. */
const scopeOf = (i: number) => (i % 4 === 0 ? 'all' : 'marketing')
const recipient = `+5531${NUMBER}`

const MARKETING = { templateId: 'spring_sale', language: 'pt_BR', variables: { '1': 'Ana' } }
const text = { text: 'Your table is ready' }
const catalog = (): SyncedTemplate[] =>
  [
    { name: 'spring_sale', category: 'MARKETING', text: 'Olá {{1}}, 20% de desconto até domingo.' },
    { name: 'order_shipped', category: 'UTILITY', text: 'Olá {{1}}, seu pedido {{2}} foi enviado.' },
  ].map((t, i) => {
    const components = [{ type: 'BODY', text: t.text }]
    return {
      platformTemplateId: String(7_100_000 + i),
      name: t.name,
      language: 'pt_BR',
      status: 'APPROVED',
      rejectedReason: null,
      category: t.category,
      quality: 'GREEN',
      parameterFormat: 'POSITIONAL',
      components,
      variables: templateVariables(components, 'POSITIONAL'),
    }
  })

interface Pair {
  name: string
  path: string
  /** With `NUMBER` where each message's recipient takes a number of its own. */
  body: string
  /** Messages per request. */
  messages: number
  connections: number
  on: SenderName
  off: SenderName
}

/** A batch to `batchSize` recipients, a share `marketing` of them MARKETING templates spread through it. */
const batchPair = (marketing: number): Pair => ({
  name: `batch of ${batchSize} ${marketing ? `(${Math.round(batchSize * marketing)} MARKETING)` : 'texts'}`,
  path: 'batch',
  body: JSON.stringify({
    messages: Array.from({ length: batchSize }, (_, i) =>
      Math.floor((i + 1) * marketing) > Math.floor(i * marketing)
        ? { type: 'template', phone: recipient, ...MARKETING }
        : { type: 'text', phone: recipient, ...text },
    ),
  }),
  messages: batchSize,
  connections: batchConnections,
  on: 'on',
  off: 'off',
})

const PAIRS: Pair[] = [
  {
    name: 'send-text',
    path: 'send-text',
    body: JSON.stringify({ phone: recipient, ...text }),
    messages: 1,
    connections,
    on: 'on',
    off: 'off',
  },
  batchPair(0),
  ...(batchMarketing > 0 ? [batchPair(batchMarketing)] : []),
  {
    name: 'send-template (MARKETING)',
    path: 'send-template',
    body: JSON.stringify({ phone: recipient, ...MARKETING }),
    messages: 1,
    connections,
    on: 'on',
    off: 'off',
  },
]
/** What a pair compares, as its lines say it. */
const what = (pair: Pair) => `${SENDERS[pair.on].label} vs ${SENDERS[pair.off].label}`

// A redis-server of its own: the million entries stay off the shared one, and its counters see only this.
const redisServer = await startRedisServer()
const world = await createBenchWorld('consent')
const env = { DATABASE_URL: world.databaseUrl, REDIS_URL: redisServer.url, QUEUE_PREFIX: world.queuePrefix }
const redis = new Redis(redisServer.url, { maxRetriesPerRequest: null })
const { db, sql, close: closeDb } = createDb(world.databaseUrl, { max: 2 })

async function inProcessApp() {
  const config = parseApiConfig({
    ...env,
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
    MESSAGE_RATE_PER_SECOND: '1000000000',
  })
  const app = await buildApp(createDeps(config, { logger: createLogger(config) }))
  await app.ready()
  return app
}

/** The senders, their catalogs and settings, a key bound to each. Made before any API starts. */
async function setUp() {
  const app = await inProcessApp()
  const keys = {} as Record<SenderName, string>
  try {
    for (const [name, s] of Object.entries(SENDERS) as Array<[SenderName, (typeof SENDERS)[SenderName]]>) {
      await sql`insert into senders (id, phone_number_id, display_name, waba_id)
        values (${s.id}, ${s.phoneNumberId}, ${name}, '910000000000001')`
      await replaceSenderTemplates(db, s.id, catalog(), new Date())
      if (Object.keys(s.settings).length) {
        const res = await app.inject({
          method: 'PATCH',
          url: `/api/admin/senders/${s.id}`,
          headers: { authorization: `Bearer ${app.deps.config.adminTokens[0]?.token}` },
          payload: s.settings,
        })
        if (res.statusCode !== 200) throw new Error(`settings of ${s.id} refused: ${res.body}`)
      }
      const key = await approvedKey(app)
      const quiet = s.keySettings.quietHours
      await sql`update api_keys set sender_id = ${s.id}, quiet_hours = ${quiet ? JSON.stringify(quiet) : null}::jsonb
        where key_hash = ${hashApiKey(key)}`
      keys[name] = key
    }
  } finally {
    await app.close()
  }
  for (const s of Object.values(SENDERS)) await loadSuppressions(s.phoneNumberId, s.suppressed)
  // The copy is complete (as a worker's rebuild leaves it): a missing entry means not suppressed.
  await redis.set(suppressionsLoadedKey(world.queuePrefix), '1')
  return keys
}

const hash = recipientHasher({})

/** The list's Redis copy for one business number: MSETs of 1,000 entries, 20 to a pipeline. */
async function loadSuppressions(phoneNumberId: string, count: number) {
  if (count === 0) return
  const started = performance.now()
  let done = 0
  while (done < count) {
    const pipeline = redis.pipeline()
    for (let n = 0; n < 20 && done < count; n++) {
      const entries: string[] = []
      for (const end = Math.min(count, done + 1000); done < end; done++) {
        entries.push(suppressionKey(world.queuePrefix, phoneNumberId, hash(listed(done))), scopeOf(done))
      }
      pipeline.mset(...entries)
    }
    for (const [error] of (await pipeline.exec()) ?? []) if (error) throw error
    if (done % 200_000 === 0 || done === count) {
      console.log(
        `  suppression list of ${phoneNumberId}: ${done.toLocaleString('en-US')}/${count.toLocaleString('en-US')}`,
      )
    }
  }
  console.log(`  loaded in ${((performance.now() - started) / 1000).toFixed(1)} s`)
}

/**
 * Before measuring, that the figures measure what they say: the `on` sender refuses its listed
 * recipients and counts its cap, the `off` one does neither, and a numbered batch is accepted whole.
 */
async function probe(url: string, keys: Record<SenderName, string>) {
  const send = async (key: string, path: string, body: object) => {
    const res = await fetch(`${url}/api/third-party/messages/${path}`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    })
    return { status: res.status, body: (await res.json()) as Record<string, unknown> }
  }
  const expect = (
    what: string,
    got: { status: number; body: Record<string, unknown> },
    status: number,
    code?: string,
  ) => {
    if (got.status !== status || (code && got.body.errorCode !== code)) {
      throw new Error(
        `probe ${what}: expected ${status} ${code ?? ''}, got ${got.status} ${JSON.stringify(got.body)}`,
      )
    }
  }
  expect(
    'text to a listed recipient (all)',
    await send(keys.on, 'send-text', { phone: listed(0), ...text }),
    422,
    'RECIPIENT_OPTED_OUT',
  )
  expect(
    'marketing to a listed recipient',
    await send(keys.on, 'send-template', { phone: listed(1), ...MARKETING }),
    422,
    'RECIPIENT_OPTED_OUT',
  )
  expect(
    'the same, sender without the list',
    await send(keys.off, 'send-template', { phone: listed(1), ...MARKETING }),
    202,
  )
  // The key's quiet hours are worked out for each send but hold none (they are twelve hours away).
  const queued = await send(keys.on, 'send-text', { phone: '+5531999990001', ...text })
  expect('text outside quiet hours', queued, 202)
  if (queued.body.status !== 'queued') throw new Error(`probe quiet hours: ${JSON.stringify(queued.body)}`)
  const capped = numberedBodies(JSON.stringify({ phone: recipient, ...MARKETING }))()
  for (let n = 0; n < CAP.count; n++)
    expect('marketing under the cap', await send(keys.on, 'send-template', JSON.parse(capped)), 202)
  expect(
    'marketing past the cap',
    await send(keys.on, 'send-template', JSON.parse(capped)),
    422,
    'FREQUENCY_CAP_EXCEEDED',
  )
  for (const batch of PAIRS.filter((p) => p.path === 'batch')) {
    for (const name of ['on', 'off'] as const) {
      const got = await send(keys[name], 'batch', JSON.parse(numberedBodies(batch.body)()))
      expect(`${batch.name} (${name})`, got, 202)
      if (got.body.rejected !== 0)
        throw new Error(`probe ${batch.name} (${name}): ${JSON.stringify(got.body)}`)
    }
  }
}

const drain = async () => {
  await settle()
  return clearFairAdmission(redis, world.queuePrefix)
}

try {
  const keys = await setUp()
  const api = await startServer('app', env)
  await probe(api.url, keys)
  await drain()
  console.log(
    `consent at the door (on: ${SENDERS.on.label}; off: ${SENDERS.off.label}): ${rounds} rounds of ${duration} s` +
      ` per side (${connections} connections, batches ${batchConnections}), the API and autocannon in processes of` +
      ` their own; then CPU per request in one process, ${pairs} pairs`,
  )
  for (const pair of PAIRS) {
    const load = (side: SenderName, conns: number, seconds: number) =>
      autocannon({
        url: `${api.url}/api/third-party/messages/${pair.path}`,
        headers: { 'x-api-key': keys[side] },
        body: pair.body,
        numbered: true,
        connections: conns,
        seconds,
      })
    const sides = [pair.on, pair.off]
    for (const side of sides) await load(side, pair.connections, 2)
    await drain()
    const runs = { on: [] as Run[], off: [] as Run[] }
    for (let round = 1; round <= rounds; round++) {
      const order = round % 2 ? (['on', 'off'] as const) : (['off', 'on'] as const)
      // The first run after a drain ran slower whichever side it was: an unmeasured second first.
      await load(pair[order[0]], pair.connections, 1)
      const line: string[] = []
      for (const side of order) {
        const run = await load(pair[side], pair.connections, duration)
        assertClean(`${pair.name} ${side}`, run)
        runs[side].push(run)
        line.push(`${side} ${Math.round(run.requestsPerSecond * pair.messages)} msg/s, p99 ${run.p99} ms`)
      }
      await drain()
      console.log(`  ${pair.name} round ${round}/${rounds}: ${line.join('; ')}`)
    }
    printComparison({
      name: `${pair.name} throughput, ${what(pair)}`,
      figure: medianRun(runs.on).requestsPerSecond * pair.messages,
      baseline: medianRun(runs.off).requestsPerSecond * pair.messages,
      unit: 'msg/s',
      better: 'higher',
      aim: '≥ 0.95',
    })
    // Both sides at the same moment, half the connections each: whatever the machine does then, it
    // does to both, so drift between rounds cancels out.
    const together = { on: [] as number[], off: [] as number[] }
    for (let round = 1; round <= rounds; round++) {
      const [on, off] = (await Promise.all(
        (['on', 'off'] as const).map((side) => load(pair[side], Math.max(1, pair.connections / 2), duration)),
      )) as [Run, Run]
      assertClean(`${pair.name} side by side`, on)
      assertClean(`${pair.name} side by side`, off)
      together.on.push(on.requestsPerSecond * pair.messages)
      together.off.push(off.requestsPerSecond * pair.messages)
      await drain()
    }
    console.log(
      `  ${pair.name} side by side: on ${together.on.map(Math.round).join(', ')} msg/s; off ${together.off.map(Math.round).join(', ')} msg/s`,
    )
    printComparison({
      name: `${pair.name} throughput side by side, ${what(pair)}`,
      figure: median(together.on),
      baseline: median(together.off),
      unit: 'msg/s',
      better: 'higher',
      aim: '≥ 0.95',
    })
  }
  await api.stop()

  const app = await inProcessApp()
  try {
    for (const pair of PAIRS) {
      const count = pair.messages > 1 ? batches : sends
      let stored = await clearFairAdmission(redis, world.queuePrefix)
      const cpu = await pairedCpuPerSend(
        { on: { app, key: keys[pair.on] }, off: { app, key: keys[pair.off] } },
        {
          body: numberedBodies(pair.body),
          count,
          pairs,
          path: pair.path,
          between: async () => {
            stored += await clearFairAdmission(redis, world.queuePrefix)
          },
        },
      )
      // Every message of both sides stored (a warm-up of each, then the pairs): none refused at the door.
      stored += await clearFairAdmission(redis, world.queuePrefix)
      const sent = 2 * (pairs + 1) * count * pair.messages
      if (stored !== sent) throw new Error(`${pair.name}: ${stored} messages stored of ${sent} sent`)
      // Each pair's sides ran one after the other: their ratio is the least blurred by drift.
      const ratios = cpu.on.map((on, i) => on / (cpu.off[i] as number))
      console.log(
        `  ${pair.name} CPU, each pair on/off: ${ratios.map((r) => r.toFixed(2)).join(', ')} (median ${median(ratios).toFixed(2)})`,
      )
      printComparison({
        name: `${pair.name} CPU per request in one process (${count} requests × ${pairs} pairs), ${what(pair)}`,
        figure: median(cpu.on),
        baseline: median(cpu.off),
        unit: 'µs',
        better: 'lower',
        aim: '≤ 1.05',
      })
    }
    // What each side asks of Redis per message: counted (commandstats count a script's own calls too),
    // and the server's CPU, timed (an indication: the machine's noise is in it).
    console.log(
      `Redis per message (${sends} sends or ${batches} batches each side; a script counts 1 + the commands it runs):`,
    )
    for (const pair of PAIRS) {
      const count = pair.messages > 1 ? batches : sends
      const side = async (name: SenderName) => {
        await clearFairAdmission(redis, world.queuePrefix)
        const [counts, cpu] = [await commandCounts(redis), await redisCpuSeconds(redis)]
        await cpuPerInjectedSend({ app, key: keys[name] }, numberedBodies(pair.body), count, pair.path)
        const [after, cpuAfter] = [await commandCounts(redis), await redisCpuSeconds(redis)]
        for (const [command, calls] of after) counts.set(command, calls - (counts.get(command) ?? 0))
        return { counts, cpu: ((cpuAfter - cpu) * 1e6) / (count * pair.messages) }
      }
      const on = await side(pair.on)
      const off = await side(pair.off)
      console.log(`  ${pair.name}:`)
      printCountTable(
        [
          { name: 'on', phases: { accept: on.counts } },
          { name: 'off', phases: { accept: off.counts } },
        ],
        count * pair.messages,
      )
      printComparison({
        name: `  ${pair.name} redis-server CPU per message`,
        figure: on.cpu,
        baseline: off.cpu,
        unit: 'µs',
        better: 'lower',
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
  await redisServer.stop()
}
