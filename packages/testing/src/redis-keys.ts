import { Redis } from 'ioredis'

/**
 * Deletes every key under `prefix` on the Redis at `redisUrl`, a SCAN page at a time (never
 * `KEYS`, which would stall a shared server). Answers how many it deleted.
 */
export async function deleteKeysUnder(redisUrl: string, prefix: string): Promise<number> {
  const redis = new Redis(redisUrl)
  try {
    let deleted = 0
    for await (const keys of redis.scanStream({ match: `${prefix}*`, count: 1000 }) as AsyncIterable<
      string[]
    >) {
      if (keys.length > 0) deleted += await redis.del(...keys)
    }
    return deleted
  } finally {
    redis.disconnect()
  }
}
