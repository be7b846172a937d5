import { suppressionKey } from '@dispatch/contracts'
import { addSuppression, type NewSuppression, removeSuppression, type SuppressionRow } from '@dispatch/db'
import type { FastifyBaseLogger } from 'fastify'
import type { ApiDeps } from '../deps.ts'

type Deps = Pick<ApiDeps, 'db' | 'redis' | 'config'>

/**
 * Every change to the suppression list, as keywords, Meta's signals, keys and admins make it: first
 * the record (Postgres: a failure throws, so the caller can answer it), then the Redis copy sends are
 * checked against. The copy is best effort: one that misses a change is put right by the worker's
 * rebuild, and until the copy is marked complete a missing entry counts as unknown.
 */
export async function optOut(
  deps: Deps,
  log: FastifyBaseLogger,
  entry: NewSuppression,
  at: Date,
): Promise<{ row: SuppressionRow; changed: boolean }> {
  const added = await addSuppression(deps.db, entry, at)
  const { phoneNumberId, recipient, scope } = added.row
  await deps.redis
    .set(suppressionKey(deps.config.QUEUE_PREFIX, phoneNumberId, recipient), scope)
    .catch((error) => log.warn({ err: error }, 'opt-out not copied to Redis; the rebuild will'))
  return added
}

/** Lifts an entry (audited, with its reason), then drops it from the Redis copy. */
export async function optIn(
  deps: Deps,
  log: FastifyBaseLogger,
  where: Parameters<typeof removeSuppression>[1],
  audit: Parameters<typeof removeSuppression>[2],
  at: Date,
): Promise<SuppressionRow | undefined> {
  const removed = await removeSuppression(deps.db, where, audit, at)
  if (removed) {
    await deps.redis
      .del(suppressionKey(deps.config.QUEUE_PREFIX, removed.phoneNumberId, removed.recipient))
      .catch((error) => log.warn({ err: error }, 'opt-in not copied to Redis; the rebuild will'))
  }
  return removed
}
