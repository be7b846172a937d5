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
