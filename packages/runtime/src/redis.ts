import { join } from 'node:path'
import { Cluster, Redis, type RedisOptions } from 'ioredis'
import { ConfigError } from './env.ts'
import { luaScripts } from './lua-scripts.ts'
import { turnBatched } from './turn-batch.ts'

/** A connection to the service's Redis: one server, or a Redis Cluster (REDIS_CLUSTER). */
export type RedisClient = Redis | Cluster

export interface RedisSettings {
  REDIS_URL: string
  REDIS_CLUSTER: boolean
}

/**
 * A connection with these options. On a cluster, `REDIS_URL` names one or more nodes (comma
 * separated) from which ioredis learns the others; the first URL's user, password and `rediss:`
 * apply to every node. The options that belong to the cluster client (offline queue,
 * auto-pipelining, lazy connect) are set on it, the rest on each node's connection.
 */
export function createRedisClient(settings: RedisSettings, options: RedisOptions = {}): RedisClient {
  const urls = settings.REDIS_URL.split(',')
  if (!settings.REDIS_CLUSTER) {
    if (urls.length > 1) {
      throw new ConfigError('REDIS_URL names several servers: set REDIS_CLUSTER=true for a Redis Cluster')
    }
    return new Redis(settings.REDIS_URL, options)
  }
  const first = new URL(urls[0] as string)
  const { enableOfflineQueue, enableAutoPipelining, lazyConnect, ...nodeOptions } = options
  const nodes = urls.map((url) => {
    const { hostname, port } = new URL(url)
    return { host: hostname, port: Number(port || 6379) }
  })
  const cluster = new Cluster(nodes, {
    // See below: a fail-fast cluster client still queues what is sent before it is first ready.
    ...(enableOfflineQueue === undefined ? {} : { enableOfflineQueue: true }),
    ...(enableAutoPipelining === undefined ? {} : { enableAutoPipelining }),
    ...(lazyConnect === undefined ? {} : { lazyConnect }),
    // A failover moves slots: learn the new owners quickly, and give up on a slot map after 2 s.
    slotsRefreshTimeout: 2000,
    retryDelayOnFailover: 200,
    redisOptions: {
      ...nodeOptions,
      ...(first.username ? { username: decodeURIComponent(first.username) } : {}),
      ...(first.password ? { password: decodeURIComponent(first.password) } : {}),
      ...(first.protocol === 'rediss:' ? { tls: {} } : {}),
    },
  })
  if (enableOfflineQueue === false) {
    // BullMQ takes a cluster client that is `connect`ed (slots not yet read) for ready, and sends
    // its INFO at once; refused, that queue would stay broken for the life of the process. So a
    // fail-fast client holds commands until the cluster is first ready, and fails fast from then
    // on, as one server's client does.
    cluster.once('ready', () => {
      cluster.options.enableOfflineQueue = false
    })
  }
  return cluster
}

/**
 * Releases a lock only while it still holds the holder's token (lua/redis/releaseLock-1.lua): one
 * that expired and was taken by another stays theirs.
 */
export const RELEASE_LOCK_SCRIPT = luaScripts(join(import.meta.dirname, 'lua/redis'), [
  'releaseLock',
]).releaseLock

export { turnBatched }

/**
 * Reads of single keys gathered per turn of the event loop: one MGET for every read of the turn (a
 * GET each on a Cluster, where the keys sit on many slots).
 */
export function turnBatchedGet(redis: RedisClient): (key: string) => Promise<string | null> {
  return turnBatched((keys: string[]) =>
    redis.isCluster ? Promise.all(keys.map((key) => redis.get(key))) : redis.mget(keys),
  )
}
