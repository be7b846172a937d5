import { randomBytes } from 'node:crypto'
import { ensureDatabase, migrateDatabase } from '@dispatch/db/migrate'
import { deleteKeysUnder } from '@dispatch/testing'
import type { Redis } from 'ioredis'
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
