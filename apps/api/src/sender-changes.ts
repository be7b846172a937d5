import { SENDER_CHANGES_CHANNEL, SENDER_POOL_CHANGES_CHANNEL } from '@dispatch/contracts'
import type { FastifyBaseLogger } from 'fastify'
import type { ApiDeps } from './deps.ts'

/**
 * Tells running workers that a sender was added, changed or removed, so they reconcile at once
 * rather than at their next sweep. Best effort: the change is stored already, so a Redis that
 * cannot take the message costs a warning, not the request.
 */
export async function publishSenderChange(
  deps: Pick<ApiDeps, 'redis' | 'config'>,
  log: FastifyBaseLogger,
  senderId: string,
): Promise<void> {
  try {
    await deps.redis.publish(`${deps.config.QUEUE_PREFIX}:${SENDER_CHANGES_CHANNEL}`, senderId)
  } catch (error) {
    log.warn(
      { err: error, senderId },
      'could not publish sender change; workers catch up at their next sweep',
    )
  }
}

/**
 * Tells every API instance that a sender pool was created, changed or deleted, so its copy of the
 * pools (sending/pools/pool-cache.ts) is reloaded at once, not at its next refresh. Best effort.
 */
export async function publishSenderPoolChange(
  deps: Pick<ApiDeps, 'redis' | 'config'>,
  log: FastifyBaseLogger,
  poolId: string,
): Promise<void> {
  try {
    await deps.redis.publish(`${deps.config.QUEUE_PREFIX}:${SENDER_POOL_CHANGES_CHANNEL}`, poolId)
  } catch (error) {
    log.warn(
      { err: error, senderPoolId: poolId },
      'could not publish sender pool change; API instances catch up at their next refresh',
    )
  }
}
