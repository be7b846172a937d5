/**
 * Campaign fairness (issue 43): key B's transactional sends' accept-to-sent p99 with key A's large
 * campaign running on the same sender, versus without it, in the same run. The service's real
 * entry points (`campaign-services.ts`): one API (its campaign feeder at the service's defaults
 * unless CAMPAIGN_WINDOW / CAMPAIGN_FEED_INTERVAL_MS are set), one worker (every role, sandbox),
 * the sender (the default one, both keys unbound) at BENCH_FAIR_SENDER_RATE (500) msg/s, so the
 * campaign runs at the sender's rate as a broadcast does, not at whatever the machine can do.
 *
 * After a warm-up (`warmUp`: BENCH_WARM_UP, 10,000, by campaign and by batch, then ANALYZE), A's
 * campaign of BENCH_FAIR_AUDIENCE (1,000,000) recipients is written as an upload leaves it and
 * started; then BENCH_FAIR_ROUNDS (2) rounds, the order alternating, of two phases:
 * - with: A's campaign running (resumed, and sending for 3 s before B starts);
 * - without: A's campaign paused, and what it had stored already sent.
 * In each, B sends `send-text` (normal priority) at BENCH_FAIR_B_RATE (20) a second, evenly spaced,
 * for BENCH_FAIR_SECONDS (30); its latencies are `sent_at - accepted_at` of its messages in
 * Postgres once every one is sent. The p99s of every round's phase pooled are compared. Aim ≤ 1.2×.
 * A's throughput in each phase is printed beside it: the campaign did run at the sender's rate.
 *
 *   pnpm --filter @dispatch/bench bench:campaign-fairness   (pnpm bench runs it as is: about 4 minutes)
 *   (BENCH_FAIR_AUDIENCE, BENCH_FAIR_SENDER_RATE, BENCH_FAIR_B_RATE, BENCH_FAIR_SECONDS, BENCH_FAIR_ROUNDS,
 *   BENCH_WARM_UP)
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { printComparison } from '../harness/report.ts'
import { percentile } from '../harness/stats.ts'
import {
  call,
  int,
  intEnv,
  load,
  readyCampaign,
  type Services,
  secs,
  sentRows,
  startServices,
  warmUp,
} from './campaign-services.ts'

const audience = Math.max(1, intEnv('BENCH_FAIR_AUDIENCE', 1_000_000))
const senderRate = Math.max(1, intEnv('BENCH_FAIR_SENDER_RATE', 500))
const bRate = Math.max(1, intEnv('BENCH_FAIR_B_RATE', 20))
const seconds = Math.max(1, intEnv('BENCH_FAIR_SECONDS', 30))
const rounds = Math.max(1, intEnv('BENCH_FAIR_ROUNDS', 2))

const feederEnv: Record<string, string> = {}
for (const name of ['CAMPAIGN_WINDOW', 'CAMPAIGN_FEED_INTERVAL_MS']) {
  const value = process.env[name]
  if (value !== undefined) feederEnv[name] = value
}

const { services, cleanUp } = await startServices('campaign_fair', {
  api: feederEnv,
  worker: { PLATFORM_RATE_PER_SECOND: String(senderRate) },
})

/** Waits until the worker's sent count has not moved for `quietMs`: nothing of A's is left to send. */
async function untilQuiet(s: Services, quietMs = 1500) {
  let last = await s.sentSoFar()
  let since = performance.now()
  for (;;) {
    await sleep(250)
    const now = await s.sentSoFar()
    if (now !== last) {
      last = now
      since = performance.now()
    } else if (performance.now() - since >= quietMs) return
  }
}

try {
  const began = performance.now()
  const a = await services.approvedKey('Campaign A', ['send:template', 'manage:campaigns'])
  const b = await services.approvedKey('Transactional B', ['send:free-text'])
  await warmUp(services, a, intEnv('BENCH_WARM_UP', 10_000))
  const loading = performance.now()
  const campaignId = await readyCampaign(services, a.key, audience)
  console.log(
    `campaign fairness: key A's campaign of ${int(audience)} recipients (written in ${secs(performance.now() - loading)})` +
      ` and key B's send-text at ${bRate}/s for ${seconds} s, on one sender at ${senderRate} msg/s (sandbox);` +
      ` ${rounds} rounds, with and without the campaign alternating; ${load()}`,
  )
  await call(services, a.key, 'POST', `/api/third-party/campaigns/${campaignId}/start`)
  let running = true

  const phase = async (withCampaign: boolean) => {
    if (withCampaign && !running) {
      await call(services, a.key, 'POST', `/api/third-party/campaigns/${campaignId}/resume`)
      running = true
    }
    if (!withCampaign && running) {
      await call(services, a.key, 'POST', `/api/third-party/campaigns/${campaignId}/pause`)
      running = false
      await untilQuiet(services)
    }
    if (withCampaign) await sleep(3000) // the campaign sending at the sender's rate before B starts
    const since = new Date()
    const sentBefore = await services.sentSoFar()
    const startedAt = performance.now()
    const total = bRate * seconds
    const sends: Promise<unknown>[] = []
    for (let i = 0; i < total; i++) {
      const due = startedAt + (i * 1000) / bRate
      const wait = due - performance.now()
      if (wait > 0) await sleep(wait)
      sends.push(
        call(
          services,
          b.key,
          'POST',
          '/api/third-party/messages/send-text',
          {
            phone: `+5521${900_000_000 + i}`,
            text: `Your code is ${String(i).padStart(6, '0')}`,
          },
          202,
        ),
      )
    }
    await Promise.all(sends)
    const sentDuring = (await services.sentSoFar()) - sentBefore
    const elapsed = performance.now() - startedAt
    for (;;) {
      if ((await sentRows(services, b.id, since)) >= total) break
      if (performance.now() - startedAt > elapsed + 120_000) throw new Error('B: not every message sent')
      await sleep(200)
    }
    const rows = await services.sql<{ ms: number }[]>`
      select (extract(epoch from (sent_at - accepted_at)) * 1000)::float8 as ms from messages
      where api_key_id = ${b.id}::uuid and status = 'sent' and accepted_at >= ${since.toISOString()}::timestamptz`
    const latencies = rows.map((r) => r.ms)
    const aRate = ((sentDuring - total) / elapsed) * 1000
    console.log(
      `    ${withCampaign ? 'with the campaign   ' : 'without the campaign'}: B p50 ${percentile(latencies, 0.5).toFixed(0)} ms,` +
        ` p99 ${percentile(latencies, 0.99).toFixed(0)} ms, max ${Math.max(...latencies).toFixed(0)} ms (${latencies.length} sent);` +
        ` A sent about ${int(Math.max(0, aRate))} msg/s meanwhile; ${load()}`,
    )
    return latencies
  }

  const withIt: number[] = []
  const without: number[] = []
  for (let round = 1; round <= rounds; round++) {
    console.log(`  round ${round}/${rounds}`)
    const order = round % 2 === 1 ? [true, false] : [false, true]
    for (const withCampaign of order) (withCampaign ? withIt : without).push(...(await phase(withCampaign)))
  }
  await call(services, a.key, 'POST', `/api/third-party/campaigns/${campaignId}/cancel`)
  printComparison({
    name: `key B's accept-to-sent p99 with key A's ${int(audience)}-recipient campaign running vs without (${senderRate} msg/s sender, B at ${bRate}/s)`,
    figure: percentile(withIt, 0.99),
    baseline: percentile(without, 0.99),
    unit: 'ms',
    better: 'lower',
    aim: 'p99 ≤ 1.2×',
  })
  console.log(`campaign fairness: done in ${((performance.now() - began) / 1000).toFixed(0)} s`)
} finally {
  await cleanUp()
}
