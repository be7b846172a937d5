/**
 * Where a pooled key's accept spends its CPU beside a single-sender key's: the accept bench's API
 * (server.ts) run under V8's sampling profiler, autocannon's phases alternating between the two
 * keys, and each function's self time a request compared, phase by phase, on the profile's clock.
 * A tool for finding what to cut, not a figure to judge by (`bench:accept` is that).
 *
 *   pnpm --filter @dispatch/bench bench:accept-profile   (BENCH_ROUNDS, BENCH_DURATION_S, BENCH_TOP)
 *   BENCH_SIDES: the two keys compared, of `single` (a single-sender key), `pooled` (a key of a
 *   three-number pool), `number` (a key of that pool's first number alone) and `one` (a key of a
 *   pool of that number alone); `single,pooled` unless set (`number,one`: the sticky lookup alone).
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Redis } from 'ioredis'
import { autocannon, settle } from '../harness/load.ts'
import { clearFairAdmission, createBenchWorld } from '../harness/world.ts'
import { startPooledApp } from './child-server.ts'

const rounds = Number(process.env.BENCH_ROUNDS ?? 6)
// The first round warms the API and is not counted: one round would measure nothing.
if (!(Number.isInteger(rounds) && rounds >= 2)) {
  throw new Error(
    `BENCH_ROUNDS must be a whole number of 2 or more (the first round is not counted); got ${process.env.BENCH_ROUNDS}`,
  )
}
const duration = Number(process.env.BENCH_DURATION_S ?? 6)
const top = Number(process.env.BENCH_TOP ?? 30)
const connections = 100
const body = JSON.stringify({ phone: '+5511987654321', text: 'Your code is 123456' })

interface CpuProfile {
  nodes: Array<{ id: number; callFrame: { functionName: string; url: string; lineNumber: number } }>
  startTime: number
  samples: number[]
  timeDeltas: number[]
}

const world = await createBenchWorld('accept-profile')
const dir = mkdtempSync(join(tmpdir(), 'accept-profile-'))
const { api, sides } = await startPooledApp(world, 'single,pooled', {
  NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${dir} --cpu-prof-interval=200`,
})
const redis = new Redis(world.redisUrl, { maxRetriesPerRequest: null })
const url = `${api.url}/api/third-party/messages/send-text`
const [base, other] = sides.map((side) => side.name) as [string, string]
// The profile's clock: V8's ticks are the monotonic clock in µs, as hrtime's.
const nowUs = () => Number(process.hrtime.bigint() / 1000n)
const phases: Array<{ side: string; from: number; to: number; requests: number }> = []
try {
  for (const side of sides)
    await autocannon({ url, headers: { 'x-api-key': side.key }, body, connections, seconds: 2 })
  for (let round = 1; round <= rounds; round++) {
    for (const side of round % 2 ? sides : sides.toReversed()) {
      const from = nowUs()
      const run = await autocannon({
        url,
        headers: { 'x-api-key': side.key },
        body,
        connections,
        seconds: duration,
      })
      phases.push({ side: side.name, from, to: nowUs(), requests: run.requestsPerSecond * duration })
      await settle()
      await clearFairAdmission(redis, world.queuePrefix)
    }
    console.log(`  round ${round}/${rounds} done`)
  }
} finally {
  await api.stop()
  redis.disconnect()
  await world.drop()
}

const file = readdirSync(dir).find((name) => name.endsWith('.cpuprofile'))
if (!file) throw new Error(`no profile written in ${dir}`)
const profile = JSON.parse(readFileSync(join(dir, file), 'utf8')) as CpuProfile
rmSync(dir, { recursive: true, force: true })
const nameOf = new Map(
  profile.nodes.map((node) => {
    const { functionName, url: script, lineNumber } = node.callFrame
    const where = script
      ? `${script.replace(/^.*\/(packages|apps|node_modules)\//, '$1/')}:${lineNumber + 1}`
      : ''
    return [node.id, `${functionName || '(anonymous)'} ${where}`.trim()]
  }),
)
// Self time (µs) by function, summed per side over its phases (the first round dropped: warming).
const selfUs = new Map<string, Map<string, number>>(sides.map((s) => [s.name, new Map()]))
const requests = new Map<string, number>(sides.map((s) => [s.name, 0]))
const measured = phases.slice(sides.length)
for (const phase of measured) requests.set(phase.side, (requests.get(phase.side) ?? 0) + phase.requests)
let at = profile.startTime
for (let i = 0; i < profile.samples.length; i++) {
  at += profile.timeDeltas[i] ?? 0
  const delta = profile.timeDeltas[i + 1] ?? 0
  const phase = measured.find((p) => at >= p.from && at < p.to)
  if (!phase) continue
  const name = nameOf.get(profile.samples[i] as number) ?? '?'
  const bySide = selfUs.get(phase.side) as Map<string, number>
  bySide.set(name, (bySide.get(name) ?? 0) + delta)
}
const perRequest = (side: string, name: string) =>
  (selfUs.get(side)?.get(name) ?? 0) / (requests.get(side) || 1)
// Busy time only: the samples V8 files under `(idle)` are the process waiting, not CPU.
const total = (side: string) =>
  [...(selfUs.get(side) ?? [])].reduce((sum, [name, us]) => (name === '(idle)' ? sum : sum + us), 0) /
  (requests.get(side) || 1)
console.log(
  `CPU a request on the profile: ${base} ${total(base).toFixed(1)} µs, ${other} ${total(other).toFixed(1)} µs` +
    ` (${(total(other) / total(base)).toFixed(3)})`,
)
const names = new Set(sides.flatMap((s) => [...(selfUs.get(s.name)?.keys() ?? [])]))
const rows = [...names]
  .map((name) => ({ name, base: perRequest(base, name), other: perRequest(other, name) }))
  .sort((a, b) => Math.abs(b.other - b.base) - Math.abs(a.other - a.base))
  .slice(0, top)
console.log(`self µs a request: ${other} − ${base}, ${other}, ${base}, function`)
for (const row of rows) {
  console.log(
    `  ${(row.other - row.base).toFixed(2).padStart(7)} ${row.other.toFixed(2).padStart(7)} ${row.base.toFixed(2).padStart(7)}  ${row.name}`,
  )
}
