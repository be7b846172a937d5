import { join } from 'node:path'
import { Cluster, Redis, type RedisOptions } from 'ioredis'
import { ConfigError } from './env.ts'
import { luaScripts, scriptCall } from './lua-scripts.ts'
import { type Settle, type TurnBatched, turnBatched } from './turn-batch.ts'

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
const scripts = luaScripts(join(import.meta.dirname, 'lua/redis'), ['releaseLock', 'setEach'])
export const RELEASE_LOCK_SCRIPT = scripts.releaseLock
/** Sets strings of one life in one call (lua/redis/setEach.lua, `turnBatchedSet`). */
export const SET_EACH_SCRIPT = scripts.setEach

export { type Settle, type TurnBatched, turnBatched }

/**
 * Reads of single keys gathered per turn of the event loop: one MGET for every read of the turn (a
 * GET each on a Cluster, where the keys sit on many slots).
 */
export function turnBatchedGet(redis: RedisClient): TurnBatched<string, string | null> {
  return turnBatched((keys: string[]) =>
    redis.isCluster ? Promise.all(keys.map((key) => redis.get(key))) : redis.mget(keys),
  )
}

/**
 * Writes of strings that live `lifeMs` gathered per turn of the event loop: a lone write a SET, the
 * turn's others in one script call (lua/redis/setEach.lua), not a command each. On a Cluster the
 * script needs the keys on one slot: `oneSlot` says they are (a prefix's {…} hash tag), else each
 * is a SET of its own. A call that fails fails every write of its turn. The script is defined now,
 * not at the first write: one defined on an auto-pipelined client is missing from a pipeline the
 * turn has already started.
 */
export function turnBatchedSet(
  redis: RedisClient,
  lifeMs: number,
  { oneSlot }: { oneSlot: boolean },
): (key: string, value: string) => Promise<void> {
  const set = (key: string, value: string) => redis.set(key, value, 'PX', lifeMs).then(() => undefined)
  if (redis.isCluster && !oneSlot) return set
  const setEach = scriptCall(redis, SET_EACH_SCRIPT)
  const write = turnBatched(async (batch: Array<[string, string]>): Promise<undefined[]> => {
    if (batch.length === 1) {
      const [key, value] = batch[0] as [string, string]
      await set(key, value)
    } else {
      await setEach(batch.length, ...batch.map(([key]) => key), lifeMs, ...batch.map(([, value]) => value))
    }
    return batch.map(() => undefined)
  })
  return (key, value) => write([key, value])
}
