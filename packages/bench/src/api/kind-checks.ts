/**
 * The cost of the checks every send gained with the new message kinds (issue 22): exactly one of
 * `phone` and `userId`, and each kind's rules beyond its schema (one media source, unique button
 * ids, ≤ 10 list rows in all, a contact's name). Measured beside the send they are part of, in one
 * process, same run: CPU per `send-text` through the whole accept path (`inject`, 50 in flight),
 * against CPU per call of the checks alone on a text body, and on an interactive list (the most a
 * body asks of them). Aim: the checks ≤ 5 % of a send.
 *
 *   pnpm --filter @dispatch/bench bench:kind-checks   (BENCH_PAIRS, BENCH_BATCH)
 */

import { buildApp, createDeps, createLogger, parseApiConfig } from '@dispatch/api'
import { kindProblem, recipientProblem } from '@dispatch/contracts'
import { Redis } from 'ioredis'
import { printComparison } from '../harness/report.ts'
import { median } from '../harness/stats.ts'
import { clearFairAdmission, createBenchWorld } from '../harness/world.ts'
import { approvedKey, cpuPerInjectedSend } from './inject.ts'

const pairs = Number(process.env.BENCH_PAIRS ?? 6)
const batch = Number(process.env.BENCH_BATCH ?? 2000)
const text = { phone: '+5511987654321', text: 'Your code is 123456' }
const list = {
  phone: '+5511987654321',
  interactive: {
    type: 'list',
    body: { text: 'Pick a time' },
    action: {
      button: 'See times',
      sections: [
        {
          title: 'Tuesday',
          rows: Array.from({ length: 5 }, (_, i) => ({ id: `tue-${i}`, title: `${9 + i}:00` })),
        },
        {
          title: 'Wednesday',
          rows: Array.from({ length: 5 }, (_, i) => ({ id: `wed-${i}`, title: `${9 + i}:00` })),
        },
      ],
    },
  },
}

/** CPU per call of the two checks on `body` as a `type` send, µs. */
function cpuPerCheck(type: string, body: Record<string, unknown>, calls: number): number {
  const before = process.cpuUsage()
  let problems = 0
  for (let i = 0; i < calls; i++) {
    if (recipientProblem(body, 'body') ?? kindProblem(type, body, 'body')) problems++
  }
  const used = process.cpuUsage(before)
  if (problems) throw new Error('a valid body was refused')
  return (used.user + used.system) / calls
}

const world = await createBenchWorld('kind-checks')
const config = parseApiConfig({
  DATABASE_URL: world.databaseUrl,
  REDIS_URL: world.redisUrl,
  QUEUE_PREFIX: world.queuePrefix,
  LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
  MESSAGE_RATE_PER_SECOND: '1000000000',
})
const app = await buildApp(createDeps(config, { logger: createLogger(config) }))
const redis = new Redis(world.redisUrl)
try {
  const key = await approvedKey(app)
  const body = JSON.stringify(text)
  await cpuPerInjectedSend({ app, key }, body, batch)
  cpuPerCheck('text', text, 100_000)
  cpuPerCheck('interactive', list, 100_000)
  const sends: number[] = []
  const onText: number[] = []
  const onList: number[] = []
  for (let pair = 0; pair < pairs; pair++) {
    sends.push(await cpuPerInjectedSend({ app, key }, body, batch))
    onText.push(cpuPerCheck('text', text, 200_000))
    onList.push(cpuPerCheck('interactive', list, 200_000))
    await clearFairAdmission(redis, world.queuePrefix)
  }
  const send = median(sends)
  console.log(`kind checks beside the accept path, ${pairs} rounds, medians (CPU per call, this process):`)
  console.log(`  send-text through the API (inject)   ${send.toFixed(1)} µs`)
  for (const [name, values] of [
    ['checks on a text body', onText],
    ['checks on a 10-row list', onList],
  ] as const) {
    // The ratio is the checks' share of a send's CPU.
    printComparison({
      name: `  ${name}, CPU per call vs a send-text's`,
      figure: median(values),
      baseline: send,
      unit: 'µs',
      better: 'lower',
      aim: '≤ 0.05',
    })
  }
} finally {
  redis.disconnect()
  await app.close()
  await world.drop()
}
