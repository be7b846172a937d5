import { and, asc, gt, or, sql } from 'drizzle-orm'
import type { Db } from '../client.ts'
import { conversationWindows } from '../schema/inbound-messages.ts'

export interface OpenWindow {
  phoneNumberId: string
  phone: string
  lastInboundAt: Date
}

/**
 * One page of the windows still open (a reply since `since`), in key order after `after`: what a
 * worker copies into Redis when the copy there was lost.
 */
export async function listOpenWindows(
  db: Db,
  since: Date,
  after: { phoneNumberId: string; phone: string } | undefined,
  limit: number,
): Promise<OpenWindow[]> {
  return db
    .select()
    .from(conversationWindows)
    .where(
      and(
        gt(conversationWindows.lastInboundAt, since),
        after
          ? or(
              gt(conversationWindows.phoneNumberId, after.phoneNumberId),
              and(
                sql`${conversationWindows.phoneNumberId} = ${after.phoneNumberId}`,
                gt(conversationWindows.phone, after.phone),
              ),
            )
          : undefined,
      ),
    )
    .orderBy(asc(conversationWindows.phoneNumberId), asc(conversationWindows.phone))
    .limit(limit)
}
