/**
 * The accept benchmarks' servers under test, each in a child process of its own (`server.ts`), so
 * load generator and servers never share an event loop and each server has a process to itself as
 * in production.
 */
import { forkChild } from '../harness/child.ts'

/** The environment `server.ts` reads: the benchmark's database, Redis and queue prefix. */
export interface ServerEnv {
  DATABASE_URL: string
  REDIS_URL: string
  QUEUE_PREFIX: string
  /** `false` starts the API without metrics (metrics.ts); unset, the default (on). */
  METRICS_ENABLED?: string
  /** `true`: the app also makes a key bound to a three-number sender pool (`pooled`). */
  BENCH_POOLED_KEY?: string
  /** A key's outstanding bound; the accept bench's one key stores more than the default per round. */
  MESSAGE_OUTSTANDING_MAX?: string
}

export interface ChildServer {
  /** `app`: the API's base URL; `baseline`: the bare server's. */
  url: string
  /** `app` only: an approved key with every send scope. */
  key: string
  /** `app` with BENCH_POOLED_KEY only: an approved key bound to a three-number sender pool. */
  pooled: string
  /** `app` with BENCH_POOLED_KEY only: an approved key of the pool's first number alone (no pool). */
  poolNumber: string
  /** `app` with BENCH_POOLED_KEY only: an approved key bound to a pool of that first number alone. */
  pooledOne: string
  /** The server's process id (its CPU read finer than `cpuSeconds`, harness/cpu.ts). */
  pid: number | undefined
  /** The process's CPU time so far (user + system), in seconds; undefined off Linux. */
  cpuSeconds(): Promise<number | undefined>
  stop(): Promise<void>
}

/** Starts `server.ts` as `role` in a child process and waits until it listens. */
export async function startServer(role: 'app' | 'baseline', env: ServerEnv): Promise<ChildServer> {
  const server = await forkChild<{
    url: string
    key: string
    pooled: string
    poolNumber: string
    pooledOne: string
  }>(new URL('./server.ts', import.meta.url), {
    what: `${role} server`,
    args: [role],
    env: { ...env },
  })
  return { ...server.ready, pid: server.process.pid, cpuSeconds: server.cpuSeconds, stop: server.stop }
}

/** The pooled accept benches' keys, as BENCH_SIDES names them (`startPooledApp`). */
export const POOL_SIDES = ['single', 'pooled', 'number', 'one'] as const
export type PoolSide = (typeof POOL_SIDES)[number]

/**
 * The API with the pooled accept benches' keys (BENCH_POOLED_KEY), against `world`: `single` a
 * single-sender key, `pooled` a key of a three-number pool, `number` a key of that pool's first
 * number alone, `one` a key of a pool of that number alone; `sides` those BENCH_SIDES names
 * (comma-separated, `fallback` unless set), each with its key. Throws on a name it does not know.
 */
export async function startPooledApp(
  world: { databaseUrl: string; redisUrl: string; queuePrefix: string },
  fallback: string,
  env: { NODE_OPTIONS?: string } = {},
): Promise<{ api: ChildServer; sides: Array<{ name: PoolSide; key: string }> }> {
  const names = sideNames(fallback)
  const api = await startServer('app', {
    DATABASE_URL: world.databaseUrl,
    REDIS_URL: world.redisUrl,
    QUEUE_PREFIX: world.queuePrefix,
    MESSAGE_OUTSTANDING_MAX: '100000000',
    BENCH_POOLED_KEY: 'true',
    ...env,
  } as ServerEnv)
  const keys = { single: api.key, pooled: api.pooled, number: api.poolNumber, one: api.pooledOne }
  return { api, sides: names.map((name) => ({ name, key: keys[name] })) }
}

/** BENCH_SIDES's names (`fallback` unless set), each one of `POOL_SIDES`. */
export function sideNames(fallback: string): PoolSide[] {
  return (process.env.BENCH_SIDES ?? fallback).split(',').map((name) => {
    if (!(POOL_SIDES as readonly string[]).includes(name))
      throw new Error(`BENCH_SIDES: no key "${name}" (${POOL_SIDES})`)
    return name as PoolSide
  })
}
