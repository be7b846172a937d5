/**
 * What keying the suppression list by the recipient's hash costs the accept path (issue 25). Every
 * send's consent check reads its recipient's entry in Redis, one `GET` as before: the key now holds
 * the HMAC-SHA256 of the recipient under ERASURE_HASH_KEY, not the recipient, so an opt-out kept
 * after an erasure (stored hashed) is found by that same read. The added work is the HMAC, per
 * message. Two apps in one process on one Redis and Postgres, the same but for the hash: `on`
 * hashes (the service as it runs), `off` keys by the recipient itself (the path before). CPU per
 * request by `inject` (50 in flight, BENCH_PAIRS pairs of BENCH_SENDS sends or BENCH_BATCHES
 * batches of 100, the order alternating: the steadier figure on a shared machine); then the HMAC
 * alone. Aim ≤ 1.05.
 *
 *   pnpm --filter @dispatch/bench bench:recipient-hash   (BENCH_PAIRS, BENCH_SENDS, BENCH_BATCHES,
 *   BENCH_CONTROL)
 */

import { buildApp, createDeps, createLogger, parseApiConfig } from '@dispatch/api'
import { recipientHasher, suppressionsLoadedKey } from '@dispatch/runtime'
import { Redis } from 'ioredis'
import { NUMBER, numberedBodies } from '../harness/load.ts'
import { printComparison } from '../harness/report.ts'
import { median } from '../harness/stats.ts'
import { clearFairAdmission, createBenchWorld } from '../harness/world.ts'
import { approvedKey, pairedCpuPerSend } from './inject.ts'

const pairs = Number(process.env.BENCH_PAIRS ?? 10)
const sends = Number(process.env.BENCH_SENDS ?? 1500)
const batches = Number(process.env.BENCH_BATCHES ?? 60)

const world = await createBenchWorld('recipient_hash')
const redis = new Redis(world.redisUrl)
const config = parseApiConfig({
  DATABASE_URL: world.databaseUrl,
  REDIS_URL: world.redisUrl,
  QUEUE_PREFIX: world.queuePrefix,
  LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
  MESSAGE_RATE_PER_SECOND: '1000000000',
})
const appOf = async (recipientHash?: (recipient: string) => string) => {
  const app = await buildApp({ ...createDeps(config, { logger: createLogger(config) }), recipientHash })
  await app.ready()
  return app
}
// BENCH_CONTROL=plain or hashed: both sides alike, to read what the pairing itself reads here.
const control = process.env.BENCH_CONTROL
const plain = (recipient: string) => recipient
const on = await appOf(control === 'plain' ? plain : undefined)
const off = await appOf(control === 'hashed' ? undefined : plain)

try {
  // The copy is complete (as a worker's rebuild leaves it): every read is a real lookup.
  await redis.set(suppressionsLoadedKey(world.queuePrefix), '1')
  const keys = { on: await approvedKey(on), off: await approvedKey(off) }
  const cases = [
    {
      name: 'send-text',
      path: 'send-text',
      body: JSON.stringify({ phone: `+5531${NUMBER}`, text: 'Your code is 123456' }),
      count: sends,
    },
    {
      name: 'batch of 100 texts',
      path: 'batch',
      body: JSON.stringify({
        messages: Array.from({ length: 100 }, () => ({
          type: 'text',
          phone: `+5531${NUMBER}`,
          text: 'Your code is 123456',
        })),
      }),
      count: batches,
    },
  ]
  for (const c of cases) {
    await clearFairAdmission(redis, world.queuePrefix)
    const cpu = await pairedCpuPerSend(
      { on: { app: on, key: keys.on }, off: { app: off, key: keys.off } },
      {
        body: numberedBodies(c.body),
        count: c.count,
        pairs,
        path: c.path,
        between: () => clearFairAdmission(redis, world.queuePrefix),
      },
    )
    const ratios = cpu.on.map((value, i) => value / (cpu.off[i] as number))
    console.log(
      `  ${c.name} CPU, each pair hashed/plain: ${ratios.map((r) => r.toFixed(2)).join(', ')} (median ${median(ratios).toFixed(2)})`,
    )
    printComparison({
      name: `${c.name} CPU per request in one process (${c.count} requests × ${pairs} pairs), hashed vs plain key`,
      figure: median(cpu.on),
      baseline: median(cpu.off),
      unit: 'µs',
      better: 'lower',
      aim: '≤ 1.05',
    })
  }

  // The hash alone, per recipient.
  const hash = recipientHasher(config)
  const calls = 200_000
  const started = process.hrtime.bigint()
  for (let n = 0; n < calls; n++) hash(`+5531${100_000_000 + n}`)
  const perCall = Number(process.hrtime.bigint() - started) / calls / 1000
  console.log(`HMAC-SHA256 of one recipient: ${perCall.toFixed(2)} µs`)
} finally {
  await clearFairAdmission(redis, world.queuePrefix)
  redis.disconnect()
  await on.close()
  await off.close()
  await world.drop()
}
