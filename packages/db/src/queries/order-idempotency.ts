import type { Order } from '@dispatch/contracts'
import { and, eq, sql } from 'drizzle-orm'
import { orderIdempotencyKeys } from '../schema/order-idempotency-keys.ts'
import { type Executor, pgError } from './executor.ts'

/** How long an Idempotency-Key is remembered. */
export const IDEMPOTENCY_TTL_HOURS = 24
/** How long a duplicate waits for the first request to finish before it is told to retry. */
const IN_FLIGHT_WAIT = '300ms'

export type IdempotencyClaim =
  | { outcome: 'claimed' }
  | { outcome: 'replayed'; response: Order }
  | { outcome: 'key_reused' }

/** The key's first request has not finished: thrown, so the transaction rolls back cleanly. */
export class IdempotencyKeyInFlight extends Error {}

/**
 * Inside the order's transaction, takes the key (or takes over one older than 24 h). A key whose
 * first request is still in flight holds a row lock: we wait briefly for it, then throw
 * `IdempotencyKeyInFlight`.
 */
export async function claimIdempotencyKey(
  tx: Executor,
  apiKeyId: string,
  { key, requestHash }: { key: string; requestHash: string },
  now: Date,
): Promise<IdempotencyClaim> {
  await tx.execute(sql.raw(`set local lock_timeout = '${IN_FLIGHT_WAIT}'`))
  try {
    const claimed = await tx
      .insert(orderIdempotencyKeys)
      .values({ apiKeyId, key, requestHash, createdAt: now })
      .onConflictDoUpdate({
        target: [orderIdempotencyKeys.apiKeyId, orderIdempotencyKeys.key],
        set: { requestHash, createdAt: now, orderId: null, response: null },
        setWhere: sql`${orderIdempotencyKeys.createdAt} < ${now.toISOString()}::timestamptz - interval '${sql.raw(String(IDEMPOTENCY_TTL_HOURS))} hours'`,
      })
      .returning({ key: orderIdempotencyKeys.key })
    // The short wait is for the claim only; stock updates may queue behind other orders as needed.
    await tx.execute(sql`set local lock_timeout = 0`)
    if (claimed.length > 0) return { outcome: 'claimed' }
  } catch (error) {
    if (pgError(error).code === '55P03') throw new IdempotencyKeyInFlight()
    throw error
  }
  const [existing] = await tx
    .select()
    .from(orderIdempotencyKeys)
    .where(and(eq(orderIdempotencyKeys.apiKeyId, apiKeyId), eq(orderIdempotencyKeys.key, key)))
  if (!existing || existing.requestHash !== requestHash || !existing.response)
    return { outcome: 'key_reused' }
  return { outcome: 'replayed', response: existing.response as Order }
}
