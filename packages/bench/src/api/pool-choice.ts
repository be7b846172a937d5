/**
 * What choosing a pool's number costs a send (issue 44): the CPU of `chooseSender` for one
 * recipient (a new one, the spread over every member: its dearest case), set against the CPU an
 * accepted `send-text` costs this process in the same run; and the whole of it, an accepted
 * `send-text` from a key bound to a three-number pool (sticky read, choice, the chosen number's
 * checks, a sticky write for each new recipient) against one from a single-sender key, by
 * `app.inject` in this process, rounds alternating (steadier than bench:accept's network runs on
 * a shared machine). Aim ≤ 1.03 (docs/benchmarks-failover.md).
 *
 *   pnpm --filter @dispatch/bench bench:pool-choice   (BENCH_SENDS, BENCH_ROUNDS)
 */

import { buildApp, createDeps, createLogger, parseApiConfig } from '@dispatch/api'
import { type ChoiceMember, chooseSender, memberHash } from '@dispatch/api/sending/pools'
import { Redis } from 'ioredis'
import { NUMBER, numberedBodies } from '../harness/load.ts'
import { printComparison } from '../harness/report.ts'
import { median } from '../harness/stats.ts'
import { clearFairAdmission, createBenchWorld } from '../harness/world.ts'
import { approvedKey, cpuPerInjectedSend, pooledKeys } from './inject.ts'

const sends = Number(process.env.BENCH_SENDS ?? 2000)
const rounds = Number(process.env.BENCH_ROUNDS ?? 5)

const world = await createBenchWorld('pool_choice')
const redis = new Redis(world.redisUrl)
const config = parseApiConfig({
  DATABASE_URL: world.databaseUrl,
  REDIS_URL: world.redisUrl,
  QUEUE_PREFIX: world.queuePrefix,
  LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
  MESSAGE_RATE_PER_SECOND: '1000000000',
})
const app = await buildApp(createDeps(config, { logger: createLogger(config) }))
await app.ready()

/** µs of CPU per call of `chooseSender` for new recipients over `size` members, one of them out of rotation. */
function choiceCpu(size: number, calls = 300_000): number {
  // As a pool is kept in memory: each member's hash computed once, when the pool is loaded.
  const members: ChoiceMember[] = Array.from({ length: size }, (_, i) => {
    const senderId = crypto.randomUUID()
    return {
      senderId,
      weight: 1 + (i % 3),
      excluded: i === 1 ? 'quality_red' : null,
      hash: memberHash(senderId),
    }
  })
  const home = members[0]?.senderId as string
  let sink = 0
  const before = process.cpuUsage()
  for (let n = 0; n < calls; n++) {
    const choice = chooseSender({ members, recipient: `+5531${100_000_000 + n}`, home })
    sink += choice.senderId?.length ?? 0
  }
  const used = process.cpuUsage(before)
  if (sink === 0) throw new Error('no choice made')
  return (used.user + used.system) / calls
}

try {
  const key = await approvedKey(app)
  // A pooled key, and a key of the pool's first number alone: they differ by the pool only.
  const { pooled, single: alone } = await pooledKeys(app)
  const body = numberedBodies(JSON.stringify({ phone: `+5531${NUMBER}`, text: 'Your code is 123456' }))
  await cpuPerInjectedSend({ app, key }, body, Math.min(sends, 500)) // warm-up, unmeasured
  const accept: number[] = []
  const choice3: number[] = []
  const choice50: number[] = []
  const single: number[] = []
  const singleNew: number[] = []
  const pooledNew: number[] = []
  const pooledKnown: number[] = []
  const same = JSON.stringify({ phone: '+5531987654321', text: 'Your code is 123456' })
  await cpuPerInjectedSend({ app, key: pooled }, body, Math.min(sends, 500)) // warm-up, unmeasured
  for (let round = 0; round < rounds; round++) {
    await clearFairAdmission(redis, world.queuePrefix)
    accept.push(await cpuPerInjectedSend({ app, key }, body, sends))
    // The whole pooled send, beside the single-sender one: new recipients (each a sticky write),
    // and one recipient again and again (the sticky record read, nothing written).
    const order =
      round % 2 === 0 ? ['single', 'singleNew', 'new', 'known'] : ['known', 'new', 'singleNew', 'single']
    for (const which of order) {
      await clearFairAdmission(redis, world.queuePrefix)
      if (which === 'single') single.push(await cpuPerInjectedSend({ app, key: alone }, same, sends))
      else if (which === 'singleNew')
        singleNew.push(await cpuPerInjectedSend({ app, key: alone }, body, sends))
      else if (which === 'new') pooledNew.push(await cpuPerInjectedSend({ app, key: pooled }, body, sends))
      else pooledKnown.push(await cpuPerInjectedSend({ app, key: pooled }, same, sends))
    }
    choice3.push(choiceCpu(3))
    choice50.push(choiceCpu(50, 50_000))
  }
  const perSend = median(accept)
  console.log(
    `accepted send-text: ${perSend.toFixed(1)} µs CPU; the choice over 3 members ${median(choice3).toFixed(3)} µs, over 50 ${median(choice50).toFixed(3)} µs`,
  )
  for (const [size, cpu] of [
    [3, median(choice3)],
    [50, median(choice50)],
  ] as const) {
    printComparison({
      name: `send-text CPU with the pool choice over ${size} members added (new recipients; no sticky read), vs without`,
      figure: perSend + cpu,
      baseline: perSend,
      unit: 'µs',
      better: 'lower',
      aim: '≤ 1.03',
    })
  }
  console.log(
    `send-text from a key of one number: one recipient again ${median(single).toFixed(1)} µs, new recipients ` +
      `${median(singleNew).toFixed(1)} µs; from a key of a pool of three with it: one recipient again ` +
      `${median(pooledKnown).toFixed(1)} µs, new recipients ${median(pooledNew).toFixed(1)} µs`,
  )
  printComparison({
    name: 'send-text CPU from a pooled key, one recipient again (sticky read), vs a key of one of its numbers',
    figure: median(pooledKnown),
    baseline: median(single),
    unit: 'µs',
    better: 'lower',
    aim: '≤ 1.03',
  })
  printComparison({
    name: 'send-text CPU from a pooled key, new recipients (sticky read and write), vs a key of one of its numbers',
    figure: median(pooledNew),
    baseline: median(singleNew),
    unit: 'µs',
    better: 'lower',
    aim: '≤ 1.03',
  })
} finally {
  await clearFairAdmission(redis, world.queuePrefix)
  redis.disconnect()
  await app.close()
  await world.drop()
}
