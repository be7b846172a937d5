/**
 * What writing the 131026 holds costs the worker (issue 44, docs/fallback.md "The timer"): a turn's
 * holds (20, a bundle's texts WhatsApp took together) armed through `SmsFallbackTimers.arm`, which
 * sends them in one call of packages/runtime/src/lua/redis/setEach.lua (`turnBatchedSet`), against a SET
 * each (what it did before, and does on a Cluster whose timers' prefix has no hash tag), both on
 * an auto-pipelined connection as the lanes' claims one. CPU of this process per hold, the job's
 * JSON included, rounds alternating in one run.
 *
 *   pnpm --filter @dispatch/bench bench:fallback-holds    (BENCH_TURNS, BENCH_PER)
 */
import { randomUUID } from 'node:crypto'
import { type MessageJob, smsFallbackHoldKey, UNDELIVERABLE_HOLD_SECONDS } from '@dispatch/contracts'
import { Redis } from 'ioredis'
import { SmsFallbackTimers } from '../../../../apps/worker/src/messages/fallback-timer.ts'

const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'
const PER = Number(process.env.BENCH_PER ?? 20)
const TURNS = Number(process.env.BENCH_TURNS ?? 1000)
const prefix = `bench:fallback-holds:${process.pid}`
const queue = new Redis(url)
const holds = new Redis(url, { enableAutoPipelining: true })
const timers = new SmsFallbackTimers(queue, prefix, holds)

/** Ten turns' messages, armed in rotation: the same keys written again, dropped at the end. */
const turns: MessageJob[][] = Array.from({ length: 10 }, () =>
  Array.from({ length: PER }, (_, i) => ({
    messageId: randomUUID(),
    apiKeyId: randomUUID(),
    acceptedAt: new Date().toISOString(),
    message: {
      type: 'text',
      body: { phone: `+55119876${String(i).padStart(5, '0')}`, text: 'Your code is 123456' },
    },
    fallback: { sms: { text: 'Your code is 123456 (by SMS)' } },
  })),
)

/** The hold as arm wrote it before: its timer job spread with `undeliverableOnly`, a SET each. */
function setEach(data: MessageJob, sentAt: Date) {
  const job = {
    messageId: data.messageId,
    acceptedAt: data.acceptedAt,
    to: data.message.body.phone as string,
    text: data.fallback?.sms.text as string,
    sentAt: sentAt.toISOString(),
  }
  return holds.set(
    smsFallbackHoldKey(prefix, data.messageId),
    JSON.stringify({ ...job, undeliverableOnly: true }),
    'EX',
    UNDELIVERABLE_HOLD_SECONDS,
  )
}

async function run(arm: (data: MessageJob, sentAt: Date) => Promise<unknown>) {
  for (let t = 0; t < TURNS; t++) {
    const sentAt = new Date()
    await Promise.all((turns[t % 10] as MessageJob[]).map((m) => arm(m, sentAt)))
  }
}
const batched = () => run((m, sentAt) => timers.arm(m, sentAt))
const each = () => run(setEach)

async function cpu(f: () => Promise<void>) {
  const before = process.cpuUsage()
  await f()
  const used = process.cpuUsage(before)
  return (used.user + used.system) / (TURNS * PER)
}
await each()
await batched()
const a: number[] = []
const b: number[] = []
for (let r = 0; r < 8; r++) {
  if (r % 2) {
    a.push(await cpu(each))
    b.push(await cpu(batched))
  } else {
    b.push(await cpu(batched))
    a.push(await cpu(each))
  }
}
const med = (x: number[]) => [...x].sort((p, q) => p - q)[Math.floor(x.length / 2)] as number
console.log(
  `µs CPU per hold, ${PER} a turn: a SET each`,
  a.map((x) => x.toFixed(2)).join(' '),
  '| one script call (arm)',
  b.map((x) => x.toFixed(2)).join(' '),
  '| medians',
  med(a).toFixed(2),
  med(b).toFixed(2),
)
await holds.del(...turns.flat().map((m) => smsFallbackHoldKey(prefix, m.messageId)))
await timers.close()
holds.disconnect()
queue.disconnect()
