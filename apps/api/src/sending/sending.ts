import type { Db } from '@dispatch/db'
import { type RecipientHasher, recipientHasher } from '@dispatch/runtime'
import { defaultPhoneNumberId } from '@dispatch/runtime/env'
import { type RedisClient, turnBatchedGet } from '@dispatch/runtime/redis'
import type { ApiConfig } from '../env.ts'
import { SendChecks } from './checks/send-checks.ts'
import { SendRulesCache } from './checks/send-rules-cache.ts'
import type { Log } from './log.ts'
import type { MessageStore } from './message-store.ts'
import { SenderPoolCache } from './pools/pool-cache.ts'
import { StickyStore } from './pools/sticky.ts'
import { QuietHoursRule } from './quiet-hours/quiet-hours.ts'

/**
 * Everything sending is handed: its configuration, Postgres, the message store, the senders' send
 * rules (kept in memory), the checks and the quiet-hours rule (each with caches shared by every
 * send), and a clock. Built once per process (plugins/sending.ts) or by a test; no Fastify in it.
 */
export interface Sending {
  config: ApiConfig
  db: Db
  messages: MessageStore
  rules: SendRulesCache
  checks: SendChecks
  quietHours: QuietHoursRule
  /** The sender pools and their members' health, kept in memory (pools/pool-cache.ts). */
  pools: SenderPoolCache
  /** The pools' sticky records, in Redis (pools/sticky.ts). */
  sticky: StickyStore
  clock: () => Date
  log: Log
}

/**
 * Sending built from the API's connections. Its send rules and pools start empty: `rules.start`
 * and `pools.start` load them (and `watchSendRules`, `watchSenderPools` keep them current).
 */
export function createSending(deps: {
  config: ApiConfig
  db: Db
  redis: RedisClient
  messages: MessageStore
  clock: () => Date
  logger: Log
  recipientHash?: RecipientHasher | undefined
}): Sending {
  const { config, db, redis, logger } = deps
  const rules = new SendRulesCache(db, logger)
  // Every read a turn of the event loop makes for the sends (windows, suppression entries, sticky
  // numbers), in one MGET.
  const read = turnBatchedGet(redis)
  return {
    config,
    db,
    messages: deps.messages,
    rules,
    checks: new SendChecks(
      rules,
      redis,
      config.QUEUE_PREFIX,
      logger,
      defaultPhoneNumberId(config),
      deps.recipientHash ?? recipientHasher(config),
      read,
    ),
    quietHours: new QuietHoursRule(),
    pools: new SenderPoolCache(db, logger, {
      rateLimitToleranceMs: config.POOL_RATE_LIMIT_TOLERANCE_SECONDS * 1000,
    }),
    sticky: new StickyStore(redis, config.QUEUE_PREFIX, config.POOL_STICKY_TTL_DAYS * 86_400_000, read),
    clock: deps.clock,
    log: logger,
  }
}
