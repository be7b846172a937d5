import { Cluster, Redis, type RedisOptions } from 'ioredis'
import { ConfigError } from './env.ts'

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
  return new Cluster(nodes, {
    ...(enableOfflineQueue === undefined ? {} : { enableOfflineQueue }),
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
}
