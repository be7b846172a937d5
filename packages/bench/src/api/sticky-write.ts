/**
 * What writing a pooled send's sticky record costs the API (issue 44, docs/benchmarks-failover.md):
 * a turn's records (50, as 50 sends in flight to new recipients) set by one script call
 * (packages/runtime/src/lua/redis/setEach.lua through `turnBatchedSet`, what the API does on one server) against a
 * SET each in a pipeline (what it does on a Cluster, and did before), CPU of this process per
 * record, rounds alternating in one run.
 *
 *   pnpm --filter @dispatch/bench bench:sticky-write
 */
import { defineLuaCommand } from '@dispatch/runtime/lua-scripts'
import { SET_EACH_SCRIPT } from '@dispatch/runtime/redis'
import { Redis } from 'ioredis'

const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379')
const call = defineLuaCommand(redis, SET_EACH_SCRIPT)
const PER = 50
const TURNS = 1000
const keys = (t: number) =>
  Array.from({ length: PER }, (_, i) => `bench:sticky-write:${process.pid}:${t % 10}:${i}`)
async function pipelined() {
  for (let t = 0; t < TURNS; t++) {
    const p = redis.pipeline()
    for (const k of keys(t)) p.set(k, 'sender-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee 0', 'PX', 60000)
    await p.exec()
  }
}
async function scripted() {
  for (let t = 0; t < TURNS; t++) {
    const ks = keys(t)
    await call(ks.length, ...ks, 60000, ...ks.map(() => 'sender-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee 0'))
  }
}
async function cpu(f: () => Promise<void>) {
  const b = process.cpuUsage()
  await f()
  const u = process.cpuUsage(b)
  return (u.user + u.system) / (TURNS * PER)
}
await pipelined()
await scripted()
const a: number[] = [],
  b: number[] = []
for (let r = 0; r < 6; r++) {
  if (r % 2) {
    a.push(await cpu(pipelined))
    b.push(await cpu(scripted))
  } else {
    b.push(await cpu(scripted))
    a.push(await cpu(pipelined))
  }
}
const med = (x: number[]) => [...x].sort((p, q) => p - q)[Math.floor(x.length / 2)] as number
console.log(
  'µs CPU per record: SET each in a pipeline',
  a.map((x) => x.toFixed(2)).join(' '),
  '| one script call',
  b.map((x) => x.toFixed(2)).join(' '),
  '| medians',
  med(a).toFixed(2),
  med(b).toFixed(2),
)
const dels = Array.from({ length: 10 }, (_, t) => keys(t)).flat()
await redis.del(...dels)
redis.disconnect()
