import { randomBytes } from 'node:crypto'
import { Agent, request } from 'node:http'
import { ensureDatabase, migrateDatabase } from '@dispatch/db/migrate'
import type { Redis } from 'ioredis'
import postgres from 'postgres'
import {
  currentBenchmark,
  describeMachine,
  formatNumber,
  formatRatio,
  judgeAim,
  recordResult,
} from './bench-results.ts'
import { benchEnv } from './env.ts'
import { deleteKeysUnder } from './redis-keys.ts'

/**
 * A migrated database and a queue prefix of the benchmark's own, removed by `drop()`, so a
 * benchmark never touches the service's data and leaves nothing behind.
 */
export async function createBenchWorld(name: string) {
  const { databaseUrl, redisUrl } = benchEnv()
  const id = `bench_${name}_${randomBytes(3).toString('hex')}`
  const url = new URL(databaseUrl)
  url.pathname = `/${id}`
  await ensureDatabase(url.toString())
  await migrateDatabase(url.toString())
  return {
    databaseUrl: url.toString(),
    redisUrl,
    queuePrefix: id,
    async drop() {
      if (benchEnv().keep) return console.log(`kept database ${id}`)
      await deleteKeysUnder(redisUrl, id)
      const adminUrl = new URL(databaseUrl)
      adminUrl.pathname = '/postgres'
      const admin = postgres(adminUrl.toString(), { max: 1, onnotice: () => {} })
      await admin.unsafe(`drop database if exists "${id}" with (force)`)
      await admin.end({ timeout: 5 })
    },
  }
}

/** The middle value of a benchmark's rounds (the upper middle of an even count). */
export const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0

export interface BenchLine {
  name: string
  figure: number
  baseline: number
  unit: string
  /** `higher` when more is better (throughput), `lower` when less is (latency). */
  better: 'higher' | 'lower'
  aim?: string
}

/**
 * Prints one comparison: the figure, its baseline from the same run, and the ratio; and appends it,
 * with its aim judged (`judgeAim`), to the results file `pnpm bench:table` reads.
 */
export function printComparison(line: BenchLine) {
  const ratio = line.figure / line.baseline
  const fmt = formatNumber
  console.log(
    `${line.name}: ${fmt(line.figure)} ${line.unit} vs baseline ${fmt(line.baseline)} ${line.unit}` +
      ` → ratio ${formatRatio(ratio)} (${line.better} is better${line.aim ? `; aim ${line.aim}` : ''})`,
  )
  record({ ...line, ratio })
  return ratio
}

/**
 * Prints a figure that has no baseline, only an absolute aim in its own unit (a latency p99 at a
 * given load, say), whether the aim holds, and records it as `printComparison` does.
 */
export function printFigure(line: Omit<BenchLine, 'baseline'>) {
  const fmt = formatNumber
  const { met } = judgeAim({ ...line, ratio: null })
  const verdict = met === null ? '' : met ? ': met' : ': not met'
  console.log(
    `${line.name}: ${fmt(line.figure)} ${line.unit}${line.aim ? ` (aim ${line.aim}${verdict})` : ''}`,
  )
  record({ ...line, baseline: null, ratio: null })
  return met
}

function record(line: Omit<BenchLine, 'baseline'> & { baseline: number | null; ratio: number | null }) {
  const name = line.name.trim()
  recordResult({
    name,
    figure: line.figure,
    baseline: line.baseline,
    unit: line.unit,
    better: line.better,
    ratio: line.ratio,
    aim: line.aim ?? null,
    ...judgeAim({ ...line, name }),
    benchmark: currentBenchmark(),
    timestamp: new Date().toISOString(),
    machine: describeMachine(),
  })
}

/** The value 95 % of the samples stay at or under. */
export const p95 = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length * 0.95)] ?? 0

/**
 * p95 (and median) in milliseconds of `figure` and of `baseline`, sampled alternately (after a shared warm-up of
 * 30 each), so machine noise and warm-up weigh on both alike rather than on whichever runs first.
 */
export async function pairedP95(
  figure: () => Promise<unknown>,
  baseline: () => Promise<unknown>,
  samples: number,
) {
  for (let i = 0; i < 30; i++) {
    await figure()
    await baseline()
  }
  const times = { figure: [] as number[], baseline: [] as number[] }
  const time = async (run: () => Promise<unknown>, into: number[]) => {
    const start = performance.now()
    await run()
    into.push(performance.now() - start)
  }
  for (let i = 0; i < samples; i++) {
    if (i % 2) {
      await time(figure, times.figure)
      await time(baseline, times.baseline)
    } else {
      await time(baseline, times.baseline)
      await time(figure, times.figure)
    }
  }
  return {
    figure: p95(times.figure),
    baseline: p95(times.baseline),
    medians: { figure: median(times.figure), baseline: median(times.baseline) },
  }
}

/** A lean keep-alive GET client (lighter than fetch), so the client's own cost stays out of a figure. */
export function keepAliveGet() {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 })
  const get = (url: string, headers: Record<string, string>) =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request(url, { agent, headers }, (res) => {
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }))
        res.on('error', reject)
      })
      req.on('error', reject)
      req.end()
    })
  return { get, close: () => agent.destroy() }
}

/**
 * What the API stores for admission since issue 13 (packages/runtime/src/message-handoff/fair-queue.ts), under a
 * queue prefix: every sender's fair-admission keys (`${prefix}:fair:{sender}:*`, its jobs hash, its
 * lists and rings) and the set of active senders. Answers how many messages were waiting (the jobs
 * and moving hashes: stored, not yet in a BullMQ queue) and removes every one of those keys, so the
 * next round of a benchmark starts on a Redis as empty as the first. `UNLINK`, so a large hash is
 * freed off Redis's main thread while requests of the next round may be arriving.
 */
export async function clearFairAdmission(redis: Redis, prefix: string): Promise<number> {
  let messages = 0
  for await (const keys of redis.scanStream({ match: `${prefix}:fair:*`, count: 1000 }) as AsyncIterable<
    string[]
  >) {
    for (const key of keys) {
      if (key.endsWith(':jobs') || key.endsWith(':moving')) messages += await redis.hlen(key)
    }
    if (keys.length) await redis.unlink(...keys)
  }
  return messages
}

/** The value a share `q` (0–1) of the samples stay at or under: `percentile(values, 0.99)` is the p99. */
export const percentile = (values: number[], q: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * q))] ?? 0
