/**
 * Campaign sending (issue 43): a campaign's delivery throughput versus the same messages sent
 * through `POST /messages/batch`, on the same API, worker and sandbox platform, in the same run.
 * The service's real entry points (`campaign-services.ts`): one API (its feeder at the service's
 * CAMPAIGN_WINDOW and CAMPAIGN_FEED_INTERVAL_MS unless set), one worker (every role, sandbox,
 * the platform's rate out of the way), a redis-server of the run's own.
 *
 * First a warm-up (`warmUp`: BENCH_WARM_UP, 20,000, each way, then ANALYZE), then each round, the
 * order alternating:
 * - campaign: a campaign of BENCH_CAMPAIGN_MESSAGES recipients (a template with two variables per
 *   row), its audience written as an upload leaves it, then `POST …/start`; timed from the start
 *   to the last message recorded `sent` in Postgres.
 * - batch: the same messages (the same recipients, template, variables, `low` priority) posted as
 *   batches of 1,000 (BENCH_BATCH_CONCURRENCY, 2, in flight); timed from the first request to the
 *   last message recorded `sent`.
 * Messages per second of each, medians of BENCH_ROUNDS (3) compared. Aim ≥ 0.9×. Progress every
 * BENCH_PROGRESS_MS (10,000).
 *
 *   pnpm --filter @dispatch/bench bench:campaign   (pnpm bench runs 100,000 a side)
 *   BENCH_CAMPAIGN_MESSAGES=1000000 pnpm --filter @dispatch/bench bench:campaign
 *   (BENCH_CAMPAIGN_MESSAGES, BENCH_ROUNDS, BENCH_BATCH_CONCURRENCY, BENCH_PROGRESS_MS, BENCH_WARM_UP; CAMPAIGN_WINDOW
 *   and CAMPAIGN_FEED_INTERVAL_MS pass through to the API)
 */
import { printComparison } from '../harness/report.ts'
import { median } from '../harness/stats.ts'
import {
  call,
  int,
  intEnv,
  load,
  readyCampaign,
  recipient,
  type Services,
  secs,
  startServices,
  TEMPLATE,
  untilSent,
  warmUp,
} from './campaign-services.ts'

const messages = Math.max(1, intEnv('BENCH_CAMPAIGN_MESSAGES', 100_000))
const rounds = Math.max(1, intEnv('BENCH_ROUNDS', 3))
const concurrency = Math.max(1, intEnv('BENCH_BATCH_CONCURRENCY', 2))
const progressMs = intEnv('BENCH_PROGRESS_MS', 10_000)
const batchSize = 1000
const warmUpSize = intEnv('BENCH_WARM_UP', 20_000)

const feederEnv: Record<string, string> = {}
for (const name of ['CAMPAIGN_WINDOW', 'CAMPAIGN_FEED_INTERVAL_MS']) {
  const value = process.env[name]
  if (value !== undefined) feederEnv[name] = value
}

const { services, cleanUp } = await startServices('campaign', { api: feederEnv })

interface Measured {
  perSecond: number
  seconds: number
}

try {
  const began = performance.now()
  const key = await services.approvedKey('Campaign bench', ['send:template', 'manage:campaigns'])
  console.log(
    `campaign sending: ${int(messages)} template messages a side, campaign vs batch (${batchSize} a request,` +
      ` ${concurrency} in flight, low priority); ${rounds} alternating rounds; one API (feeder: CAMPAIGN_WINDOW` +
      ` ${feederEnv.CAMPAIGN_WINDOW ?? 'default'}, CAMPAIGN_FEED_INTERVAL_MS ${feederEnv.CAMPAIGN_FEED_INTERVAL_MS ?? 'default'}),` +
      ` one worker (every role, sandbox); ${load()}`,
  )
  await warmUp(services, key, Math.min(messages, warmUpSize))
  let sentBase = await services.sentSoFar()

  const campaign = async (): Promise<Measured> => {
    const loading = performance.now()
    const id = await readyCampaign(services, key.key, messages)
    console.log(`    audience of ${int(messages)} rows written in ${secs(performance.now() - loading)}`)
    const since = new Date()
    const startedAt = performance.now()
    await call(services, key.key, 'POST', `/api/third-party/campaigns/${id}/start`)
    const endedAt = await untilSent(services, 'campaign', {
      target: sentBase + messages,
      expected: messages,
      apiKeyId: key.id,
      since,
      startedAt,
      progressMs,
    })
    sentBase += messages
    await timeline('campaign', key.id, since)
    return { perSecond: (messages / (endedAt - startedAt)) * 1000, seconds: (endedAt - startedAt) / 1000 }
  }

  const batch = async (): Promise<Measured> => {
    const since = new Date()
    const startedAt = performance.now()
    await postBatches(services, key.key)
    const acceptedIn = performance.now() - startedAt
    const endedAt = await untilSent(services, 'batch', {
      target: sentBase + messages,
      expected: messages,
      apiKeyId: key.id,
      since,
      startedAt,
      progressMs,
    })
    sentBase += messages
    console.log(`    batch: all accepted in ${secs(acceptedIn)}`)
    await timeline('batch', key.id, since)
    return { perSecond: (messages / (endedAt - startedAt)) * 1000, seconds: (endedAt - startedAt) / 1000 }
  }

  const campaigns: number[] = []
  const batches: number[] = []
  for (let round = 1; round <= rounds; round++) {
    // Alternating which goes first: load that drifts during the run moves both alike.
    const order = round % 2 === 1 ? (['campaign', 'batch'] as const) : (['batch', 'campaign'] as const)
    const measured: Partial<Record<(typeof order)[number], Measured>> = {}
    for (const side of order) {
      console.log(`  round ${round}/${rounds}: ${side}…`)
      measured[side] = side === 'campaign' ? await campaign() : await batch()
    }
    const c = measured.campaign as Measured
    const b = measured.batch as Measured
    campaigns.push(c.perSecond)
    batches.push(b.perSecond)
    console.log(
      `  round ${round}/${rounds}: campaign ${int(c.perSecond)} msg/s (${c.seconds.toFixed(1)} s), batch` +
        ` ${int(b.perSecond)} msg/s (${b.seconds.toFixed(1)} s) → ${(c.perSecond / b.perSecond).toFixed(2)}; ${load()}`,
    )
  }
  printComparison({
    name: `campaign delivery throughput vs the same messages through batch (${int(messages)} a side)`,
    figure: median(campaigns),
    baseline: median(batches),
    unit: 'msg/s',
    better: 'higher',
    aim: '≥ 0.9',
  })
  console.log(`campaign sending: done in ${((performance.now() - began) / 1000).toFixed(0)} s`)
} finally {
  await cleanUp()
}

/**
 * Where a side's time went: when its messages were accepted (a campaign's: when the feeder gave
 * their window ids) and when they were recorded sent, as seconds since the side began, at the
 * quartiles. A campaign whose last message is accepted just before it is sent was held by its
 * feeder; one whose acceptance ends early, by the delivery.
 */
async function timeline(side: string, apiKeyId: string, since: Date) {
  const since_ = since.toISOString()
  const [row] = await services.sql<{ accepted: string; sent: string }[]>`
    select
      array_to_string(percentile_disc(array[0.25, 0.5, 0.75, 1]) within group
        (order by round(extract(epoch from accepted_at - ${since_}::timestamptz)::numeric, 1)), ' / ') as accepted,
      array_to_string(percentile_disc(array[0.25, 0.5, 0.75, 1]) within group
        (order by round(extract(epoch from sent_at - ${since_}::timestamptz)::numeric, 1)), ' / ') as sent
    from messages where api_key_id = ${apiKeyId}::uuid and accepted_at >= ${since_}::timestamptz`
  console.log(
    `    ${side}: accepted by ${row?.accepted} s, sent by ${row?.sent} s (quartiles, since its start)`,
  )
}

/** The campaign's messages as batches of `batchSize` template items, `concurrency` requests in flight. */
async function postBatches(s: Services, key: string) {
  let next = 0
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < messages) {
        const from = next
        const size = Math.min(batchSize, messages - from)
        next += size
        const items = Array.from({ length: size }, (_, i) => ({
          type: 'template',
          ...recipient(from + i),
          ...TEMPLATE,
          priority: 'low',
        }))
        const body = await call<{ accepted: number }>(
          s,
          key,
          'POST',
          '/api/third-party/messages/batch',
          { messages: items },
          202,
        )
        if (body.accepted !== size) throw new Error(`batch accepted ${body.accepted} of ${size}`)
      }
    }),
  )
}
