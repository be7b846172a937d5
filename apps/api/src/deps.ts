import { QueueNames, type WebhookJob } from '@dispatch/contracts'
import { createDb, type Db } from '@dispatch/db'
import {
  logDestination,
  loggerOptions,
  queuePrefix,
  type RecipientHasher,
  urlPassword,
} from '@dispatch/runtime'
import { ReopeningQueue } from '@dispatch/runtime/queues'
import { createRedisClient, type RedisClient } from '@dispatch/runtime/redis'
import { startTracing, type Tracing } from '@dispatch/runtime/tracing'
import { Queue } from 'bullmq'
import type { FastifyBaseLogger, FastifyRequest } from 'fastify'
import pino, { type DestinationStream } from 'pino'
import type { ApiConfig } from './env.ts'
import { MessageStore } from './sending/message-store.ts'

/**
 * A producer of one of the service's BullMQ queues on the queues' connection, opened again when
 * opening it failed (see ReopeningQueue); its errors logged as warnings under `message`.
 */
export function reopeningProducer<T>(
  deps: Pick<ApiDeps, 'config' | 'redisQueues' | 'logger'>,
  name: string,
  message: string,
): ReopeningQueue<T> {
  return new ReopeningQueue(() => {
    const queue = new Queue<T>(name, { connection: deps.redisQueues, prefix: queuePrefix(deps.config, name) })
    queue.on('error', (error) => deps.logger.warn({ err: error }, message))
    return queue
  })
}

/** Everything the app talks to, built once by the server (or by a test) and handed to `buildApp`. */
export interface ApiDeps {
  config: ApiConfig
  db: Db
  /**
   * Message lists' own connections, whose statements are planned once (`genericPlans`): a list
   * that names no period would otherwise be planned over every day partition of messages on each
   * call (docs/benchmarks-paths.md, Partitioned messages). A fifth of DATABASE_POOL_MAX, at least one.
   */
  lists: Db
  /** Commands (rate limits, publishing). Fails fast when Redis is down: no offline queue. */
  redis: RedisClient
  /** A dedicated connection for pub/sub subscriptions. */
  redisSubscriber: RedisClient
  /**
   * BullMQ's queues (the webhooks producer, job lookups, the switches and the queue dashboard), on a
   * connection of their own, failing fast like `redis`: BullMQ defines its 60-odd scripts on the
   * connection it is given, and ioredis copies every defined script onto each pipeline made on it
   * (31–39 µs a pipeline against 2–4), which `redis`' auto-pipelining pays every turn.
   */
  redisQueues: RedisClient
  /** Accepted messages in Redis, on the fail-fast connection (no Redis, no 202): added for fair admission, found for lookups. */
  messages: MessageStore
  /**
   * The producer side of the `webhooks` queue, for a sender's retries and replays and the queue
   * dashboard; opened again when opening it failed (a slow Redis at start would leave it broken).
   */
  webhookQueue: ReopeningQueue<WebhookJob>
  logger: FastifyBaseLogger
  clock: () => Date
  /**
   * The recipient's hash the consent checks key the suppression list by (ERASURE_HASH_KEY's HMAC
   * when absent); `packages/bench/src/api/recipient-hash.ts` replaces it to measure what hashing costs a send.
   */
  recipientHash?: RecipientHasher | undefined
  /** OpenTelemetry, when OTEL_EXPORTER_OTLP_ENDPOINT is set (or a test gives one): requests are traced. */
  tracing?: Tracing | undefined
  /** Postgres reachability, for /readyz. */
  pingDb(): Promise<void>
  close(): Promise<void>
}

/** Secrets some callers must put in a query string (the webhook handshake's verify token). */
const SECRET_QUERY_PARAMS = /([?&](?:hub\.verify_token|hub%2Everify_token)=)[^&]*/gi

/** A recipient named in a path (`/recipients/:phone/export`): a phone never reaches a log line. */
const RECIPIENT_IN_PATH = /(\/recipients\/)[^/?]+/gi

/** Fastify's request serializer, with secret query parameters and recipients in paths censored. */
const serializeRequest = (request: FastifyRequest) => ({
  method: request.method,
  url: request.url.replace(SECRET_QUERY_PARAMS, '$1[redacted]').replace(RECIPIENT_IN_PATH, '$1[redacted]'),
  host: request.host,
  remoteAddress: request.ip,
  remotePort: request.socket?.remotePort,
})

/** Every secret value the API's configuration holds: no log line may carry one. */
const configSecrets = (config: ApiConfig) => [
  ...config.adminTokens.map((admin) => admin.token),
  config.WHATSAPP_APP_SECRET,
  config.WHATSAPP_VERIFY_TOKEN,
  config.WHATSAPP_ACCESS_TOKEN,
  config.METRICS_TOKEN,
  urlPassword(config.DATABASE_URL),
  urlPassword(config.REDIS_URL),
]

export function createLogger(config: ApiConfig, stream?: DestinationStream): FastifyBaseLogger {
  const options = loggerOptions(config.LOG_LEVEL, configSecrets(config))
  return pino(
    { ...options, name: 'api', serializers: { ...options.serializers, req: serializeRequest } },
    stream ?? logDestination(config.LOG_FORMAT),
  )
}

export function createDeps(config: ApiConfig, overrides: { logger?: FastifyBaseLogger } = {}): ApiDeps {
  const listPool = Math.max(1, Math.floor(config.DATABASE_POOL_MAX / 5))
  const {
    db,
    sql,
    close: closeDb,
  } = createDb(config.DATABASE_URL, {
    max: Math.max(1, config.DATABASE_POOL_MAX - listPool),
  })
  const lists = createDb(config.DATABASE_URL, { max: listPool, genericPlans: true })
  const redisOptions = {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 2000,
    lazyConnect: false,
  }
  // Commands answer within 2 s or fail: a Redis that stopped answering must not hang requests.
  const redis = createRedisClient(config, {
    ...redisOptions,
    commandTimeout: 2000,
    enableAutoPipelining: true,
  })
  const redisSubscriber = createRedisClient(config, { ...redisOptions, enableOfflineQueue: true })
  const redisQueues = createRedisClient(config, { ...redisOptions, commandTimeout: 2000 })
  const logger = overrides.logger ?? createLogger(config)
  const messages = new MessageStore(redis, config, logger, redisQueues)
  const webhookQueue = reopeningProducer<WebhookJob>(
    { config, redisQueues, logger },
    QueueNames.webhooks,
    'webhooks queue error',
  )
  for (const [name, client] of [
    ['redis', redis],
    ['redis-subscriber', redisSubscriber],
    ['redis-queues', redisQueues],
  ] as const) {
    client.on('error', (error) => logger.warn({ err: error, client: name }, 'redis connection error'))
  }
  const tracing = startTracing({
    serviceName: config.OTEL_SERVICE_NAME ?? 'dispatch-api',
    endpoint: config.OTEL_EXPORTER_OTLP_ENDPOINT,
  })
  return {
    config,
    tracing,
    db,
    lists: lists.db,
    redis,
    redisSubscriber,
    redisQueues,
    messages,
    webhookQueue,
    logger,
    clock: () => new Date(),
    pingDb: async () => {
      await sql`select 1`
    },
    close: async () => {
      await messages.close()
      await webhookQueue.close().catch(() => {})
      redis.disconnect()
      redisSubscriber.disconnect()
      redisQueues.disconnect()
      await Promise.all([closeDb(), lists.close()])
      await tracing?.shutdown()
    },
  }
}
