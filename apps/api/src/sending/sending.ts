import type { Db } from '@dispatch/db'
import { type RecipientHasher, recipientHasher } from '@dispatch/runtime'
import { defaultPhoneNumberId } from '@dispatch/runtime/env'
import type { RedisClient } from '@dispatch/runtime/redis'
import type { ApiConfig } from '../env.ts'
import { SendChecks } from './checks/send-checks.ts'
import { SendRulesCache } from './checks/send-rules-cache.ts'
import type { Log } from './log.ts'
import type { MessageStore } from './message-store.ts'
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
  clock: () => Date
  log: Log
}

/**
 * Sending built from the API's connections. Its send rules start empty: `rules.start` loads them
 * (and `watchSendRules` keeps them current).
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
    ),
    quietHours: new QuietHoursRule(),
    clock: deps.clock,
    log: logger,
  }
}
