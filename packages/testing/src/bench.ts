import { randomBytes } from 'node:crypto'
import { ensureDatabase, migrateDatabase } from '@dispatch/db/migrate'
import { Redis } from 'ioredis'
import postgres from 'postgres'
import { benchEnv } from './env.ts'

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
      const redis = new Redis(redisUrl)
      let cursor = '0'
      do {
        const [next, keys] = await redis.scan(cursor, 'MATCH', `${id}*`, 'COUNT', 1000)
        if (keys.length) await redis.del(...keys)
        cursor = next
      } while (cursor !== '0')
      redis.disconnect()
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

/** Prints one comparison: the figure, its baseline from the same run, and the ratio. */
export function printComparison(line: BenchLine) {
  const ratio = line.figure / line.baseline
  const fmt = (n: number) => n.toLocaleString('en-US', { maximumFractionDigits: 2 })
  console.log(
    `${line.name}: ${fmt(line.figure)} ${line.unit} vs baseline ${fmt(line.baseline)} ${line.unit}` +
      ` → ratio ${ratio.toFixed(2)} (${line.better} is better${line.aim ? `; aim ${line.aim}` : ''})`,
  )
  return ratio
}
