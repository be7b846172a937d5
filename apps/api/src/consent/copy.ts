import { type SuppressionScope, suppressionKey } from '@dispatch/contracts'
import type { RedisClient } from '@dispatch/contracts/redis'

/**
 * The Redis copy of the suppression list, written with every change to the record (Postgres), so a
 * send is checked without Postgres. Best effort: a copy that misses a change is put right by the
 * worker's rebuild, and until the copy is marked complete a missing entry counts as unknown.
 */
export async function copySuppression(
  redis: RedisClient,
  prefix: string,
  entry: { phoneNumberId: string; recipient: string; scope: SuppressionScope } | undefined,
  removed?: { phoneNumberId: string; recipient: string },
): Promise<void> {
  if (entry) await redis.set(suppressionKey(prefix, entry.phoneNumberId, entry.recipient), entry.scope)
  if (removed) await redis.del(suppressionKey(prefix, removed.phoneNumberId, removed.recipient))
}
