/**
 * The Redis a scaling run is measured against, started by the benchmark and stopped with it, so
 * its CPU counters see only the benchmark's clients, flushing it between runs touches nothing
 * else, and the shared Redis on 6379 is left alone. A run takes `{ redisUrl, extraEnv }` and hands
 * both to every process it starts.
 */
import { redisClusterMissing, startRedisCluster } from '@dispatch/testing'
import { Redis } from 'ioredis'
import { redisCpuSeconds, startRedisServer } from './redis-server.ts'

export interface RedisTarget {
  name: string
  /** REDIS_URL for the service's processes. */
  redisUrl: string
  /** What else the service needs for this Redis (REDIS_CLUSTER, a hash-tagged QUEUE_PREFIX). */
  extraEnv: Record<string, string>
  /** CPU seconds of every node so far (INFO cpu): Redis' share of a run. */
  cpuSeconds(): Promise<number>
  /** Keys on each node (DBSIZE). */
  keyCounts(): Promise<number[]>
  /** Empties every node (FLUSHALL ASYNC): what a run stored is gone before the next. */
  flush(): Promise<void>
  stop(): Promise<void>
}

/** Plain connections to each node, for INFO and FLUSHALL (each node answers for itself). */
function nodeAdmin(urls: string[]) {
  const nodes = urls.map((url) => new Redis(url, { maxRetriesPerRequest: 1 }))
  return {
    cpuSeconds: async () => (await Promise.all(nodes.map(redisCpuSeconds))).reduce((a, b) => a + b, 0),
    keyCounts: () => Promise.all(nodes.map((node) => node.dbsize())),
    flush: async () => {
      await Promise.all(nodes.map((node) => node.flushall('ASYNC')))
    },
    close: () => {
      for (const node of nodes) node.disconnect()
    },
  }
}

/** One redis-server, no persistence: the service's default deployment. */
export async function singleRedis(): Promise<RedisTarget> {
  const server = await startRedisServer()
  const admin = nodeAdmin([server.url])
  return {
    name: 'single Redis',
    redisUrl: server.url,
    extraEnv: {},
    cpuSeconds: admin.cpuSeconds,
    keyCounts: admin.keyCounts,
    flush: admin.flush,
    async stop() {
      admin.close()
      await server.stop()
    },
  }
}

/** Why a local cluster cannot start here (`redis-cli` or `redis-server` missing), or undefined. */
export const clusterMissing = redisClusterMissing

/** A 3-master Redis Cluster (`startRedisCluster`), every master a seed. */
export async function redisCluster(): Promise<RedisTarget> {
  const cluster = await startRedisCluster({ masters: 3 })
  const admin = nodeAdmin(cluster.urls)
  return {
    name: 'Redis Cluster (3 masters)',
    redisUrl: cluster.urls.join(','),
    extraEnv: { REDIS_CLUSTER: 'true' },
    cpuSeconds: admin.cpuSeconds,
    keyCounts: admin.keyCounts,
    flush: admin.flush,
    async stop() {
      admin.close()
      await cluster.stop()
    },
  }
}
