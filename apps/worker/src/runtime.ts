import type { Db, Sql } from '@dispatch/db'
import { createRedisClient, type RedisClient } from '@dispatch/runtime/redis'
import type { Telemetry } from 'bullmq'
import type { Logger } from 'pino'
import type { WorkerConfig, WorkerRole } from './env.ts'
import type { WorkerMetrics } from './metrics/registry.ts'

/** What every part of a worker process is built from: its config, Postgres, logs and Redis. */
export interface WorkerContext {
  config: WorkerConfig
  db: Db
  /** The driver itself, for batched writes. */
  sql: Sql
  logger: Logger
  /**
   * A Redis connection of this process, closed with it. `blocking` ones (BullMQ workers) wait out an
   * outage; the others (producers, scripts) fail fast, so a caller is never stuck on a dead Redis.
   * `pipelined` ones send the commands issued in one turn of the event loop in one write (ioredis'
   * auto-pipelining): for many small commands from concurrent jobs.
   */
  redis(name: string, options: ConnectionOptions): RedisClient
  /** Adds a secret learned at run time (a sender's token) to the values no log line may carry. */
  addSecret(value: string): void
  /**
   * This process's metrics: units count into it and tell it what to read at scrape time. Undefined
   * when off (METRICS_ENABLED false, or no METRICS_PORT): nothing is counted.
   */
  metrics: WorkerMetrics | undefined
  /** BullMQ's OpenTelemetry integration for the queues' workers, when tracing is on. */
  telemetry: Telemetry | undefined
}

/**
 * One part of a worker process (a queue's consumers, a loop), started by its role in
 * `WORKER_QUEUES`; a role may start more than one. `index.ts` only starts them and closes them in order.
 */
export interface WorkerUnit {
  /** Stops taking work and lets what is in flight finish. Connections are closed after, by the process. */
  close(): Promise<void>
}

/** How a unit's Redis connection behaves (see `WorkerContext.redis`). */
export interface ConnectionOptions {
  blocking: boolean
  pipelined?: boolean
}

export type WorkerUnitStarter = (context: WorkerContext) => Promise<WorkerUnit>

/** The connections of one process, built on demand and closed together at the end. */
export function createRedisFactory(config: WorkerConfig, logger: Logger) {
  const clients: RedisClient[] = []
  const redis = (name: string, options: ConnectionOptions) => {
    const client = createRedisClient(config, {
      ...(options.pipelined ? { enableAutoPipelining: true } : {}),
      maxRetriesPerRequest: options.blocking ? null : 1,
      enableOfflineQueue: options.blocking,
      connectTimeout: 2000,
      // A producer call must not hang on a Redis that stopped answering (the relay holds a
      // Postgres transaction meanwhile); blocking commands have no such bound.
      ...(options.blocking ? {} : { commandTimeout: 5000 }),
    })
    client.on('error', (error) => logger.warn({ err: error, client: name }, 'redis connection error'))
    clients.push(client)
    return client
  }
  return {
    redis,
    disconnectAll: () => {
      for (const client of clients) client.disconnect()
    },
  }
}

/**
 * Runs `start` now if `redis` is connected, else once it is: for a loop whose first pass would fail
 * on a connection still coming up (a non-blocking one fails fast, without an offline queue).
 */
export function whenReady(redis: RedisClient, start: () => void): void {
  if (redis.status === 'ready') start()
  else redis.once('ready', start)
}

/** The order roles start in; they close in reverse, the outbox relay (a producer) first. */
export const START_ORDER: readonly WorkerRole[] = ['email', 'messages', 'webhooks', 'lifecycle', 'outbox']
